// Claims: deterministic consolidation, the claim state machine, the evidence view and the memories list.
import {
  claimResponse,
  consolidationMeta,
  consolidationResponse,
  evidenceResponse,
  expireResponse,
  memoriesResponse,
  revokeResponse,
} from "./responses";
import { requireWrite } from "../../access/policy";
import { canRetrieve, isCurrent, isShared } from "../../access/retrieval";
import { type Trust, lowerTrust } from "../../auth/trust";
import { clock } from "../../http/clock";
import { pageOf, positionAfter } from "../../http/cursor";
import { invalid, notFound } from "../../http/errors";
import { ID_PREFIX } from "../../http/ids";
import { orgRoute } from "../../org/route";
import type { Db } from "../../sql/db";
import type { Caller } from "../../org/request";
import { ok } from "../../org/request";
import { type Touched, touchedAll } from "../../org/outbox";
import { commitWrite, type EventInput, type WriteScope } from "../../org/write";
import type { z } from "zod";
import { consolidationBody, memoriesQuery, reasonBody, supersedeBody } from "./schema";
import {
  type ClaimRow,
  type NewClaim,
  type ObservationRow,
  changeClaim,
  getClaim,
  insertClaim,
  newRecordId,
  observationsByIds,
  projectWorkspace,
  targetInBody,
} from "./records";
import { claimSeqOf, memoriesPage, searchMemories, searchSnapshotsJob } from "./search";
import { claimViewFor, claimViewsFor, observationView, readableClaim, requireProject, unresolved } from "./store";

type ConsolidationInput = z.infer<typeof consolidationBody>;

const claimEvent = (
  kind: EventInput["kind"],
  c: NewClaim & { workspace_id: string | null },
  extra: Record<string, unknown> = {},
): EventInput => ({
  kind,
  resourceType: "claim",
  resourceId: c.claim_id,
  visibility: c.visibility,
  workspaceId: c.workspace_id,
  payload: { subject_id: c.subject_id, kind: c.kind, status: c.status, version: c.version, ...extra },
});

/**
 * Materialize the claims of one consolidation. Shared by the HTTP route and the MCP tool (which runs
 * the route): the write grant was checked by the pipeline.
 */
export function materializeClaims(db: Db, write: WriteScope, caller: Caller, input: ConsolidationInput) {
  const projectId = requireProject(db, input.project_id);
  const now = clock.nowIso();

  // Resolve every referenced observation and claim once; unknown, invisible and purged look the same.
  const obsIds = [
    ...new Set(
      input.claims.flatMap((c) => c.sources.flatMap((s) => ("observation_id" in s ? [s.observation_id] : []))),
    ),
  ];
  const observations = new Map<string, ObservationRow>();
  for (const o of observationsByIds(db, obsIds))
    if (o.purged_at == null && canRetrieve(caller, o)) observations.set(o.observation_id, o);
  const missingObs = obsIds.filter((id) => !observations.has(id));
  if (missingObs.length) throw unresolved("observation", missingObs);

  const disputedIds = [
    ...new Set(input.claims.flatMap((c) => c.sources.flatMap((s) => ("claim_id" in s ? [s.claim_id] : [])))),
  ];
  const disputed = new Map<string, ClaimRow>();
  for (const id of disputedIds) {
    const c = readableClaim(db, caller, id);
    if (c) disputed.set(id, c);
  }
  const missingClaims = disputedIds.filter((id) => !disputed.has(id));
  if (missingClaims.length) throw unresolved("claim", missingClaims);
  // Disputing changes the disputed claim: it needs write authority over that claim's target (its
  // subject, project and workspace, as the lifecycle routes check), not only over the new claim's
  // (checked once readable, so a hidden claim still looks missing).
  for (const c of disputed.values()) requireWrite(caller, c);
  for (const c of disputed.values()) {
    if (c.subject_id !== input.subject_id)
      throw invalid(`Claim ${c.claim_id} is about another subject and cannot be disputed here.`);
    if (c.status !== "active" && c.status !== "disputed")
      throw invalid(`Claim ${c.claim_id} is ${c.status} and cannot be disputed.`);
  }

  const workspaceId = projectWorkspace(db, projectId);
  const created: ClaimRow[] = [];
  const touched: Touched[] = [];
  const events: EventInput[] = [];
  const newlyDisputed = new Set<string>();
  for (const spec of input.claims) {
    const obsSources = spec.sources.filter(
      (s): s is { observation_id: string; relation: "supports" | "contradicts" | "qualifies" } => "observation_id" in s,
    );
    if (!obsSources.length) throw invalid(`Invalid field "claims": every claim needs at least one observation source.`);
    const supporting = obsSources.filter((s) => s.relation === "supports");
    const trustFrom = supporting.length ? supporting : obsSources;
    const trust = trustFrom.map((s) => observations.get(s.observation_id)!.trust as Trust).reduce(lowerTrust);
    const anyPrivate = obsSources.some((s) => observations.get(s.observation_id)!.visibility === "private");
    const disputes = spec.sources.flatMap((s) => ("claim_id" in s ? [s.claim_id] : []));
    const hasContradiction = spec.sources.some((s) => s.relation === "contradicts");
    // Event time: the latest of its source observations' (ISO strings in one form compare as times).
    const occurredAt = obsSources
      .map((s) => observations.get(s.observation_id)!.occurred_at)
      .reduce((a, b) => (b > a ? b : a));
    if (spec.valid_to && spec.valid_to <= now) throw invalid(`Invalid field "valid_to": must be in the future.`);
    const row: NewClaim = {
      claim_id: newRecordId(db, write, ID_PREFIX.claim),
      subject_id: input.subject_id,
      project_id: projectId,
      kind: spec.kind,
      statement: spec.statement,
      status: hasContradiction ? "disputed" : "active",
      // A claim drawn from private evidence stays private unless the caller says otherwise.
      visibility: spec.visibility ?? (anyPrivate ? "private" : "team"),
      trust,
      version: 1,
      valid_from: now,
      valid_to: spec.valid_to ? new Date(spec.valid_to).toISOString() : null,
      superseded_by: null,
      disputes: JSON.stringify(disputes),
      author_id: caller.principalId,
      created_at: now,
      updated_at: now,
      occurred_at: occurredAt,
    };
    const inserted = insertClaim(db, row, obsSources);
    touched.push(inserted);
    for (const id of disputes) newlyDisputed.add(id);
    const claim = { ...row, occurred_at: occurredAt, seq: inserted.seq, workspace_id: workspaceId };
    created.push(claim);
    events.push(
      claimEvent("claim.materialized", claim, {
        trust: row.trust,
        visibility: row.visibility,
        project_id: row.project_id,
      }),
    );
  }
  for (const id of newlyDisputed)
    if (disputed.get(id)!.status === "active") touched.push(changeClaim(db, id, { status: "disputed" }));

  return {
    claims: claimViewsFor(db, caller, created),
    events,
    disputed: [...newlyDisputed],
    touched: touchedAll(...touched),
  };
}

/**
 * A claim's source observations, in order, with their relation: those the caller may retrieve, and how
 * many it may not (the evidence view's hidden_source_count, the only trace a hidden source leaves).
 */
export function evidenceOf(db: Db, caller: Caller, claimId: string) {
  const rows = db.all<ObservationRow & { relation: string }>(
    `SELECT o.*, s.relation FROM claim_sources s JOIN observations o ON o.observation_id = s.observation_id
      WHERE s.claim_id = ? ORDER BY s.position`,
    claimId,
  );
  const readable = rows.filter((r) => canRetrieve(caller, r));
  return { readable, hidden: rows.length - readable.length };
}

function requireClaim(db: Db, caller: Caller, id: string): ClaimRow {
  const claim = readableClaim(db, caller, id);
  if (!claim) throw notFound("Claim");
  return claim;
}

/** A lifecycle move needs the claim readable and, for a reader, a write grant covering it (checked by the pipeline). */
const claimTarget = (rc: { db: Db; caller: Caller; params: Record<string, string> }) =>
  readableClaim(rc.db, rc.caller, rc.params.id);

export const claimRoutes = [
  orgRoute({
    method: "POST",
    path: "/v1/consolidations",
    scope: "claims:write",
    body: consolidationBody,
    idempotent: true,
    grantWritable: targetInBody,
    response: { 201: consolidationResponse, 200: consolidationResponse },
    responseMeta: consolidationMeta,
    summary: "Deterministically materialize 1 to 50 claims from readable observations.",
    operationId: "consolidateClaims",
    tag: "Memory",
    description:
      "Materializes up to 50 claims about one subject from observations the caller can read, each source marked " +
      "supports, contradicts or qualifies. Deterministic: no model takes part (`model_used: false`); honours " +
      "`Idempotency-Key`.",
    handler: (rc) =>
      commitWrite(rc, (db, write) => {
        const out = materializeClaims(db, write, rc.caller, rc.body);
        return {
          status: 201,
          data: { claims: out.claims, model_used: false },
          meta: { model: "disabled" },
          events: out.events,
          touched: out.touched,
          audit: [
            ...out.claims.map((c) => ({ action: "claim.materialized", resourceType: "claim", resourceId: c.claim_id })),
            ...out.disputed.map((id) => ({ action: "claim.disputed", resourceType: "claim", resourceId: id })),
          ],
        };
      }),
  }),

  orgRoute({
    method: "POST",
    path: "/v1/claims/:id/supersede",
    scope: "claims:write",
    grantWritable: claimTarget,
    body: supersedeBody,
    response: { 200: claimResponse },
    summary: "Supersede an active or disputed claim by another active claim.",
    operationId: "supersedeClaim",
    tag: "Memory",
    description:
      "Marks an active or disputed claim as superseded by another active claim, which takes its place in compiled " +
      "context. Any other starting state is a 400.",
    handler: (rc) => {
      const claim = requireClaim(rc.db, rc.caller, rc.params.id);
      if (claim.status !== "active" && claim.status !== "disputed")
        throw invalid(`Claim is ${claim.status}; only active or disputed claims can be superseded.`);
      const by = readableClaim(rc.db, rc.caller, rc.body.superseded_by);
      if (!by || by.status !== "active" || by.claim_id === claim.claim_id)
        throw invalid(`Invalid field "superseded_by": must name another active claim.`);
      return commitWrite(rc, (db) => {
        const touched = changeClaim(db, claim.claim_id, { status: "superseded", superseded_by: by.claim_id });
        const after = getClaim(db, claim.claim_id)!;
        return {
          status: 200,
          data: claimViewFor(db, rc.caller, after),
          // The event is as visible as the superseded claim, so it names the replacement only when every
          // reader of the event may read it: shared within the superseded claim's workspace (or none).
          events: [
            claimEvent(
              "claim.superseded",
              after,
              isShared(by, after.workspace_id) ? { superseded_by: by.claim_id } : {},
            ),
          ],
          touched,
          audit: {
            action: "claim.superseded",
            resourceType: "claim",
            resourceId: claim.claim_id,
            detail: { superseded_by: by.claim_id, reason: rc.body.reason ?? null },
          },
        };
      });
    },
  }),

  orgRoute({
    method: "POST",
    path: "/v1/claims/:id/revoke",
    scope: "claims:write",
    grantWritable: claimTarget,
    body: reasonBody,
    bodyOptional: true,
    response: { 200: revokeResponse },
    summary: "Revoke a claim that is not superseded; a repeat reports already_revoked.",
    operationId: "revokeClaim",
    tag: "Memory",
    description:
      "Revokes a claim that has not been superseded; a superseded claim is a 400. Revoking twice answers the claim " +
      "with `already_revoked: true`.",
    handler: (rc) => {
      const claim = requireClaim(rc.db, rc.caller, rc.params.id);
      if (claim.status === "superseded") throw invalid("Claim is superseded and cannot be revoked.");
      if (claim.status === "revoked") return ok({ ...claimViewFor(rc.db, rc.caller, claim), already_revoked: true });
      return commitWrite(rc, (db) => {
        const touched = changeClaim(db, claim.claim_id, { status: "revoked" });
        const after = getClaim(db, claim.claim_id)!;
        return {
          status: 200,
          data: { ...claimViewFor(db, rc.caller, after), already_revoked: false },
          events: [claimEvent("claim.revoked", after)],
          touched,
          audit: {
            action: "claim.revoked",
            resourceType: "claim",
            resourceId: claim.claim_id,
            detail: { reason: rc.body.reason ?? null },
          },
        };
      });
    },
  }),

  orgRoute({
    method: "POST",
    path: "/v1/claims/:id/expire",
    scope: "claims:write",
    grantWritable: claimTarget,
    body: reasonBody,
    bodyOptional: true,
    response: { 200: expireResponse },
    summary: "Set valid_to to now (status unchanged); a repeat reports already_expired.",
    operationId: "expireClaim",
    tag: "Memory",
    description:
      "Ends a claim's validity now by setting `valid_to`; its status stays as it was. A repeat answers " +
      "`already_expired: true`.",
    handler: (rc) => {
      const claim = requireClaim(rc.db, rc.caller, rc.params.id);
      if (!isCurrent(claim)) return ok({ ...claimViewFor(rc.db, rc.caller, claim), already_expired: true });
      return commitWrite(rc, (db) => {
        const touched = changeClaim(db, claim.claim_id, { valid_to: clock.nowIso() });
        const after = getClaim(db, claim.claim_id)!;
        return {
          status: 200,
          data: { ...claimViewFor(db, rc.caller, after), already_expired: false },
          events: [claimEvent("claim.expired", after, { valid_to: after.valid_to })],
          touched,
          audit: {
            action: "claim.expired",
            resourceType: "claim",
            resourceId: claim.claim_id,
            detail: { reason: rc.body.reason ?? null },
          },
        };
      });
    },
  }),

  orgRoute({
    method: "GET",
    path: "/v1/claims/:id/evidence",
    scope: "evidence:read",
    response: { 200: evidenceResponse },
    summary: "Readable supporting, contradicting and qualifying observations, plus hidden_source_count.",
    operationId: "getClaimEvidence",
    tag: "Memory",
    description:
      "Returns the claim with the supporting, contradicting and qualifying observations the caller may read. Sources " +
      "it may not read are only counted, in `hidden_source_count`.",
    handler: ({ db, caller, params }) => {
      const claim = requireClaim(db, caller, params.id);
      const { readable, hidden } = evidenceOf(db, caller, claim.claim_id);
      const groups = { supports: [] as unknown[], contradicts: [] as unknown[], qualifies: [] as unknown[] };
      for (const r of readable)
        groups[r.relation as keyof typeof groups].push({ ...observationView(r), relation: r.relation });
      return ok({
        claim: claimViewFor(db, caller, claim),
        supporting: groups.supports,
        contradicting: groups.contradicts,
        qualifying: groups.qualifies,
        hidden_source_count: hidden,
      });
    },
  }),

  orgRoute({
    method: "GET",
    path: "/v1/memories",
    scope: "views:compile",
    query: memoriesQuery,
    response: { 200: memoriesResponse },
    summary: "List and lexically search claims; defaults to current active and disputed claims.",
    operationId: "listMemories",
    tag: "Memory",
    description:
      "Lists claims, optionally searched lexically with `q` and filtered by subject, project, status, visibility and " +
      "kind; by default the current active and disputed ones. Authorization and validity apply before search and " +
      "paging (`next_cursor`).",
    handler: ({ db, caller, query, jobDue }) => {
      const filter = {
        status: query.status,
        subject_id: query.subject_id,
        project_id: query.project_id,
        visibility: query.visibility,
        kind: query.kind,
      };
      if (query.q !== undefined) {
        const { page, ...more } = searchMemories(db, caller, filter, query.q, query.limit, query.after, (atMs) =>
          jobDue(searchSnapshotsJob.name, atMs),
        );
        return ok({ items: claimViewsFor(db, caller, page), ...more });
      }
      // The cursor names the page's last claim; its position is looked up here, never handed out.
      const afterSeq = query.after
        ? positionAfter(query.after, ID_PREFIX.claim, (id) => claimSeqOf(db, caller, id))
        : undefined;
      const rows = memoriesPage(db, caller, filter, afterSeq, query.limit);
      const { page, ...more } = pageOf(rows, query.limit, (c) => [c.claim_id]);
      return ok({ items: claimViewsFor(db, caller, page), ...more });
    },
  }),
];
