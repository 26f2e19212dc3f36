// Knowledge releases: an immutable snapshot of one exact claim version for one channel. Anyone who may
// write drafts one; approve, activate and revoke are the channel's to decide: its creator or an
// owner/admin (managesShared), and separation of duty may still refuse a release's own creator.
//   create (eligible, else 400 naming the reason; a given claim_version must be current, else 409) -> draft
//   approve (from draft; separation of duty per the release policy; no longer eligible 409)     -> approved
//   activate (from approved; no longer eligible 409; one active release per claim and channel)   -> active   release.published
//   revoke (from draft, approved or active)                                                      -> revoked  release.revoked
// Any other move is 400. Events carry ids and versions only.
import { requireSeparationOfDuty } from "../../access/duty";
import { managesShared } from "../../access/policy";
import { clock } from "../../http/clock";
import { pageOf, positionAfter } from "../../http/cursor";
import { conflict, forbidden, invalid, notFound } from "../../http/errors";
import { ID_PREFIX, newId } from "../../http/ids";
import { orgRoute } from "../../org/route";
import type { Db } from "../../sql/db";
import type { Caller, RequestCtx } from "../../org/request";
import { ok } from "../../org/request";
import { type EventInput, commitWrite } from "../../org/write";
import { readableClaim, unresolved } from "../memory/store";
import { eligibilityContext, ineligibility, ineligibleMessage } from "./eligibility";
import { retrievableObservationIds } from "../memory/store";
import { claimSourceHashes, releaseSeqOf, releasesPage, seenThroughClaim } from "./claim-reads";
import { releaseBody, releaseListQuery, releaseListResponse, releaseMoveBody, releaseResponse } from "./schema";
import {
  type ChannelRow,
  type ReleaseRow,
  type Snapshot,
  activeReleaseOf,
  dutyFacts,
  getChannel,
  getRelease,
  insertRelease,
  markReleaseActive,
  markReleaseApproved,
  markReleaseRevoked,
} from "./store";

/**
 * A release the caller may see: it may retrieve the release's claim (the snapshot is a copy of it).
 * Otherwise it answers like a missing one, wherever it is named. `evenExcluded` for revoke: a release
 * whose claim retention excluded must stay revocable by those who may read the claim, or a later
 * legal hold would bring it back into service with nobody able to stop it.
 */
const visibleRelease = (db: Db, caller: Caller, id: string, evenExcluded = false): ReleaseRow | null =>
  seenThroughClaim(db, caller, getRelease(db, id), { evenExcluded });

/** The view for one caller: snapshot evidence it cannot read is dropped and counted. */
function releaseViews(db: Db, caller: Caller, rows: ReleaseRow[]) {
  const snapshots = rows.map((r) => JSON.parse(r.snapshot) as Snapshot);
  const readable = retrievableObservationIds(
    db,
    caller,
    snapshots.flatMap((s) => s.evidence.map((e) => e.observation_id)),
  );
  return rows.map((r, i) => {
    const evidence = snapshots[i].evidence.filter((e) => readable.has(e.observation_id));
    return {
      release_id: r.release_id,
      channel_id: r.channel_id,
      claim_id: r.claim_id,
      claim_version: r.claim_version,
      status: r.status,
      snapshot: { ...snapshots[i], evidence },
      hidden_source_count: snapshots[i].evidence.length - evidence.length,
      created_by: r.created_by,
      approved_by: r.approved_by,
      approved_at: r.approved_at,
      activated_at: r.activated_at,
      revoked_by: r.revoked_by,
      revoked_at: r.revoked_at,
      created_at: r.created_at,
    };
  });
}

const releaseEvent = (kind: "release.published" | "release.revoked", r: ReleaseRow): EventInput => ({
  kind,
  resourceType: "release",
  resourceId: r.release_id,
  payload: { release_id: r.release_id, channel_id: r.channel_id, claim_id: r.claim_id, claim_version: r.claim_version },
});

/** 409 when the release's pinned claim version is no longer eligible for its channel. */
function requireStillEligible(db: Db, r: ReleaseRow, channel: ChannelRow) {
  const reason = ineligibility(eligibilityContext(db, [r.claim_id]), r, channel.min_trust);
  if (reason) throw conflict(ineligibleMessage(reason));
}

/** A status move of one release, committed with its audit entry (and event, for publish and revoke). */
function move(rc: RequestCtx, action: "approve" | "activate" | "revoke") {
  return commitWrite(rc, (db) => {
    const r = visibleRelease(db, rc.caller, rc.params.id, action === "revoke");
    if (!r) throw notFound("Release");
    const channel = getChannel(db, r.channel_id)!;
    // Publishing is managing the channel: drafting proposes, the channel's manager decides.
    if (!managesShared(rc.caller, channel.created_by))
      throw forbidden(`Only the channel's creator or an owner or admin may ${action} its releases.`);
    const at = clock.nowIso();
    const me = rc.caller.principalId;
    let next: ReleaseRow;
    let events: EventInput[] = [];
    if (action === "approve") {
      if (r.status !== "draft") throw invalid(`Only a draft release can be approved; this one is ${r.status}.`);
      requireSeparationOfDuty(dutyFacts(db), rc.caller, { act: "approve_release", created_by: r.created_by });
      requireStillEligible(db, r, channel);
      next = { ...r, status: "approved", approved_by: me, approved_at: at };
      markReleaseApproved(db, r.release_id, me, at);
    } else if (action === "activate") {
      if (r.status !== "approved") throw invalid(`Only an approved release can be activated; this one is ${r.status}.`);
      if (channel.status === "disabled") throw invalid("The release's channel is disabled.");
      requireStillEligible(db, r, channel);
      const active = activeReleaseOf(db, r.channel_id, r.claim_id);
      if (active)
        throw conflict(`Release ${active.release_id} of this claim is already active in the channel; revoke it first.`);
      next = { ...r, status: "active", activated_at: at };
      markReleaseActive(db, r.release_id, at);
      events = [releaseEvent("release.published", next)];
    } else {
      if (r.status === "revoked") throw invalid("The release is already revoked.");
      next = { ...r, status: "revoked", revoked_by: me, revoked_at: at };
      markReleaseRevoked(db, r.release_id, me, at);
      events = [releaseEvent("release.revoked", next)];
    }
    return {
      status: 200,
      data: releaseViews(db, rc.caller, [next])[0],
      events,
      audit: {
        action: `release.${action}d`,
        resourceType: "release",
        resourceId: r.release_id,
        detail: {
          channel_id: r.channel_id,
          claim_id: r.claim_id,
          claim_version: r.claim_version,
          from_status: r.status,
        },
      },
    };
  });
}

export const releaseRoutes = [
  orgRoute({
    method: "POST",
    path: "/v1/knowledge-releases",
    scope: "releases:write",
    body: releaseBody,
    response: { 201: releaseResponse },
    summary: "Draft an immutable snapshot of a claim's current version for a channel; the claim must be eligible.",
    operationId: "draftRelease",
    tag: "Governance",
    description:
      "Drafts a release: an immutable snapshot of one claim's current version for a channel. The claim must be " +
      "eligible for release.",
    handler: (rc) =>
      commitWrite(rc, (db) => {
        const claim = readableClaim(db, rc.caller, rc.body.claim_id);
        if (!claim) throw unresolved("claim", [rc.body.claim_id]);
        const channel = getChannel(db, rc.body.channel_id);
        if (!channel) throw unresolved("channel", [rc.body.channel_id]);
        if (channel.status === "disabled") throw invalid(`Invalid field "channel_id": the channel is disabled.`);
        if (rc.body.claim_version !== undefined && rc.body.claim_version !== claim.version)
          throw conflict(`Stale claim_version ${rc.body.claim_version}: the claim is at version ${claim.version}.`);
        const pin = { claim_id: claim.claim_id, claim_version: claim.version };
        const reason = ineligibility(eligibilityContext(db, [claim.claim_id]), pin, channel.min_trust);
        if (reason) throw invalid(ineligibleMessage(reason));
        const snapshot: Snapshot = {
          subject_id: claim.subject_id,
          kind: claim.kind,
          statement: claim.statement,
          trust: claim.trust,
          valid_to: claim.valid_to,
          evidence: claimSourceHashes(db, claim.claim_id),
        };
        const row: ReleaseRow = {
          seq: 0,
          release_id: newId(ID_PREFIX.release),
          channel_id: channel.channel_id,
          ...pin,
          status: "draft",
          snapshot: JSON.stringify(snapshot),
          created_by: rc.caller.principalId,
          approved_by: null,
          approved_at: null,
          activated_at: null,
          revoked_by: null,
          revoked_at: null,
          created_at: clock.nowIso(),
        };
        insertRelease(db, row);
        return {
          status: 201,
          data: releaseViews(db, rc.caller, [row])[0],
          audit: {
            action: "release.created",
            resourceType: "release",
            resourceId: row.release_id,
            detail: { channel_id: row.channel_id, claim_id: row.claim_id, claim_version: row.claim_version },
          },
        };
      }),
  }),

  orgRoute({
    method: "GET",
    path: "/v1/knowledge-releases",
    scope: "releases:read",
    query: releaseListQuery,
    response: { 200: releaseListResponse },
    summary:
      "List releases of claims you may read (filters channel_id, status), oldest first; snapshot evidence you cannot read is counted, not shown.",
    operationId: "listReleases",
    tag: "Governance",
    description:
      "Lists releases of claims the caller may read, optionally by channel and status, oldest first. Snapshot " +
      "evidence the caller cannot read is counted, not shown.",
    handler: ({ db, caller, query }) => {
      // The cursor names the page's last release; its position is looked up here, never handed out.
      const after = query.after
        ? positionAfter(query.after, ID_PREFIX.release, (id) => releaseSeqOf(db, caller, id))
        : 0;
      const rows = releasesPage<ReleaseRow>(db, caller, query, after, query.limit);
      const { page, ...rest } = pageOf(rows, query.limit, (r) => [r.release_id]);
      return ok({ releases: releaseViews(db, caller, page), ...rest });
    },
  }),

  orgRoute({
    method: "POST",
    path: "/v1/knowledge-releases/:id/approve",
    scope: "releases:approve",
    body: releaseMoveBody,
    bodyOptional: true,
    response: { 200: releaseResponse },
    summary:
      "Approve a draft release that is still eligible (the channel's creator or an owner/admin); separation of duty per the release policy.",
    operationId: "approveRelease",
    tag: "Governance",
    description:
      "Approves a draft release that is still eligible; the channel's creator or an owner/admin, subject to the " +
      "release policy's separation of duty.",
    handler: (rc) => move(rc, "approve"),
  }),
  orgRoute({
    method: "POST",
    path: "/v1/knowledge-releases/:id/activate",
    scope: "releases:approve",
    body: releaseMoveBody,
    bodyOptional: true,
    response: { 200: releaseResponse },
    summary:
      "Activate an approved, still-eligible release (the channel's creator or an owner/admin; event release.published).",
    operationId: "activateRelease",
    tag: "Governance",
    description:
      "Publishes an approved, still-eligible release to its channel (event `release.published`); the channel's " +
      "creator or an owner/admin.",
    handler: (rc) => move(rc, "activate"),
  }),
  orgRoute({
    method: "POST",
    path: "/v1/knowledge-releases/:id/revoke",
    scope: "releases:approve",
    body: releaseMoveBody,
    bodyOptional: true,
    response: { 200: releaseResponse },
    summary:
      "Revoke a draft, approved or active release (the channel's creator or an owner/admin; event release.revoked); history is kept.",
    operationId: "revokeRelease",
    tag: "Governance",
    description:
      "Withdraws a draft, approved or active release (event `release.revoked`), keeping its history; the channel's " +
      "creator or an owner/admin.",
    handler: (rc) => move(rc, "revoke"),
  }),
];
