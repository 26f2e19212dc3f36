// Claim approvals: a submitter pins one current claim version with the evidence it could see; another
// principal decides. Visible only to callers who may read the claim (else 404, like a missing one).
// Audited, never evented.
import { requireSeparationOfDuty } from "../../access/duty";
import { clock } from "../../http/clock";
import { afterPair, pageOf } from "../../http/cursor";
import { conflict, invalid, notFound } from "../../http/errors";
import { ID_PREFIX, newId } from "../../http/ids";
import { orgRoute } from "../../org/route";
import type { Db } from "../../sql/db";
import type { Caller } from "../../org/request";
import { ok } from "../../org/request";
import { commitWrite } from "../../org/write";
import { getClaim, isCurrent, readableClaim, unresolved } from "../memory/store";
import { retrievableObservationIds, sourcesOf } from "../memory/store";
import { approvalsPage, claimSourceHashes, seenThroughClaim } from "./claim-reads";
import { approvalBody, approvalListQuery, approvalListResponse, approvalResponse, decideBody } from "./schema";
import {
  type ApprovalRow,
  dutyFacts,
  getApproval,
  hasPendingApproval,
  insertApproval,
  recordApprovalDecision,
} from "./store";

/** An approval the caller may see: it may read the approval's claim. */
const visibleApproval = (db: Db, caller: Caller, id: string): ApprovalRow | null =>
  seenThroughClaim(db, caller, getApproval(db, id));

/**
 * The view for one caller. The evidence is what the submitter could see; observation ids this caller
 * cannot read are dropped and added to hidden_source_count, so no hidden id ever appears.
 */
function approvalViews(db: Db, caller: Caller, rows: ApprovalRow[]) {
  const evidence = rows.map(
    (a) => JSON.parse(a.evidence) as { observation_ids: string[]; hidden_source_count: number },
  );
  const readable = retrievableObservationIds(
    db,
    caller,
    evidence.flatMap((e) => e.observation_ids),
  );
  return rows.map((a, i) => {
    const ids = evidence[i].observation_ids.filter((id) => readable.has(id));
    return {
      approval_id: a.approval_id,
      claim_id: a.claim_id,
      claim_version: a.claim_version,
      status: a.status,
      evidence: {
        observation_ids: ids,
        hidden_source_count: evidence[i].hidden_source_count + evidence[i].observation_ids.length - ids.length,
      },
      note: a.note,
      submitted_by: a.submitted_by,
      decided_by: a.decided_by,
      decided_at: a.decided_at,
      decision_note: a.decision_note,
      created_at: a.created_at,
    };
  });
}

export const approvalRoutes = [
  orgRoute({
    method: "POST",
    path: "/v1/claim-approvals",
    scope: "approvals:write",
    body: approvalBody,
    response: { 201: approvalResponse },
    summary: "Submit the current version of a readable, active claim, with the evidence you can see, for approval.",
    operationId: "submitClaimApproval",
    tag: "Governance",
    description:
      "Submits the current version of an active claim the caller can read for approval, together with the evidence it " +
      "can see.",
    handler: (rc) =>
      commitWrite(rc, (db) => {
        const claim = readableClaim(db, rc.caller, rc.body.claim_id);
        if (!claim) throw unresolved("claim", [rc.body.claim_id]);
        if (claim.status !== "active" || !isCurrent(claim))
          throw invalid(
            `Invalid field "claim_id": only an active, unexpired claim can be submitted (status ${claim.status}).`,
          );
        if (hasPendingApproval(db, claim.claim_id, claim.version))
          throw conflict(`A pending approval of version ${claim.version} of this claim already exists.`);
        const seen = sourcesOf(db, rc.caller, claim.claim_id).map((s) => s.observation_id);
        const all = claimSourceHashes(db, claim.claim_id).length;
        const row: ApprovalRow = {
          approval_id: newId(ID_PREFIX.approval),
          claim_id: claim.claim_id,
          claim_version: claim.version,
          status: "pending",
          evidence: JSON.stringify({ observation_ids: seen, hidden_source_count: all - seen.length }),
          note: rc.body.note ?? null,
          submitted_by: rc.caller.principalId,
          decided_by: null,
          decided_at: null,
          decision_note: null,
          created_at: clock.nowIso(),
        };
        insertApproval(db, row);
        return {
          status: 201,
          data: approvalViews(db, rc.caller, [row])[0],
          audit: {
            action: "claim_approval.submitted",
            resourceType: "claim_approval",
            resourceId: row.approval_id,
            detail: { claim_id: row.claim_id, claim_version: row.claim_version },
          },
        };
      }),
  }),

  orgRoute({
    method: "GET",
    path: "/v1/claim-approvals",
    scope: "approvals:read",
    query: approvalListQuery,
    response: { 200: approvalListResponse },
    summary: "List approvals of claims you may read (filters claim_id, status), oldest first.",
    operationId: "listClaimApprovals",
    tag: "Governance",
    description: "Lists approvals of claims the caller may read, optionally by claim and status, oldest first.",
    handler: ({ db, caller, query }) => {
      const rows = approvalsPage<ApprovalRow>(db, caller, query, afterPair(query.after), query.limit);
      const { page, ...rest } = pageOf(rows, query.limit, (a) => [a.created_at, a.approval_id]);
      return ok({ approvals: approvalViews(db, caller, page), ...rest });
    },
  }),

  orgRoute({
    method: "POST",
    path: "/v1/claim-approvals/:id/decide",
    scope: "approvals:approve",
    body: decideBody,
    response: { 200: approvalResponse },
    summary: "Approve or reject a pending approval; stale claim version 409; separation of duty per policy.",
    operationId: "decideClaimApproval",
    tag: "Governance",
    description:
      "Approves or rejects a pending approval. A claim that changed since submission is 409; the approval policy may " +
      "forbid deciding one's own submission.",
    handler: (rc) =>
      commitWrite(rc, (db) => {
        const a = visibleApproval(db, rc.caller, rc.params.id);
        if (!a) throw notFound("Approval");
        if (a.status !== "pending") throw invalid(`The approval is already ${a.status}.`);
        const claim = getClaim(db, a.claim_id)!;
        requireSeparationOfDuty(dutyFacts(db), rc.caller, {
          act: "decide_approval",
          submitted_by: a.submitted_by,
          claim_author: claim.author_id,
        });
        if (claim.version !== a.claim_version)
          throw conflict(
            `The claim changed since version ${a.claim_version} was submitted (now version ${claim.version}).`,
          );
        const at = clock.nowIso();
        const next = {
          ...a,
          status: rc.body.decision,
          decided_by: rc.caller.principalId,
          decided_at: at,
          decision_note: rc.body.note ?? null,
        };
        recordApprovalDecision(db, a.approval_id, next);
        return {
          status: 200,
          data: approvalViews(db, rc.caller, [next])[0],
          audit: {
            action: `claim_approval.${rc.body.decision}`,
            resourceType: "claim_approval",
            resourceId: a.approval_id,
            detail: { claim_id: a.claim_id, claim_version: a.claim_version },
          },
        };
      }),
  }),
];
