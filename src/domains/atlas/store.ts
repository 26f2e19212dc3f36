// The Memory Atlas's reads. Every read of a memory record applies a rule of src/access/retrieval.ts in
// its walk (retrievable, retrievableWays, heldOrDelegated, governedJoin), before anything is returned,
// and is bounded by the caller's LIMIT; channels and legal holds are gated by node type in lenses.ts.
import { governedJoin, heldOrDelegated, retrievable, retrievableWays } from "../../access/retrieval";
import type { Db } from "../../sql/db";
import type { Caller } from "../../org/request";
import type { ClaimRow, ObservationRow } from "../memory/records";

export interface RunSummary {
  context_id: string;
  query: string | null;
  created_at: string;
}

/**
 * Context runs that selected a claim, that the caller may read (its own, or delegated to it by a live
 * handoff: heldOrDelegated, as GET /v1/context/:id decides) and whose every claim it may still
 * retrieve (runItemsRetrievable: decided in the walk, so incomplete runs cannot fill the LIMIT),
 * newest first.
 */
export function readableRunsSelecting(db: Db, caller: Caller, claimId: string, limit: number) {
  const [readable, ...readableArgs] = heldOrDelegated(caller, "r", { id: "context_id", writer: "actor_id" });
  const [whole, ...wholeArgs] = runItemsRetrievable(caller, "r");
  return db.all<RunSummary>(
    `SELECT r.context_id, r.query, r.created_at FROM context_runs r
      WHERE r.context_id IN (SELECT context_id FROM context_items WHERE claim_id = ?) AND ${readable} AND ${whole}
      ORDER BY r.created_at DESC, r.context_id DESC LIMIT ?`,
    claimId,
    ...readableArgs,
    ...wholeArgs,
    limit,
  );
}

export interface ChannelSummary {
  channel_id: string;
  name: string;
  status: string;
}

export const channelById = (db: Db, id: string) =>
  db.first<ChannelSummary>("SELECT channel_id, name, status FROM channels WHERE channel_id = ?", id);

export const channelsByIds = (db: Db, ids: string[]) =>
  db.all<ChannelSummary>(
    "SELECT channel_id, name, status FROM channels WHERE channel_id IN (SELECT value FROM json_each(?))",
    JSON.stringify(ids),
  );

/** Channels, oldest first (the GET /v1/channels order), disabled ones left out. */
export const openChannels = (db: Db, limit: number) =>
  db.all<ChannelSummary>(
    "SELECT channel_id, name, status FROM channels WHERE status != 'disabled' ORDER BY created_at, channel_id LIMIT ?",
    limit,
  );

export interface HoldSummary {
  hold_id: string;
  target_type: "claim" | "observation";
  target_id: string;
  reason: string;
  status: string;
}

/** Active legal holds naming any of these records, newest first (the legal_holds_active_by_target index). */
export const activeHoldsOn = (db: Db, targetIds: string[], limit: number) =>
  targetIds.length
    ? db.all<HoldSummary>(
        `SELECT hold_id, target_type, target_id, reason, status FROM legal_holds
      WHERE status = 'active' AND target_id IN (SELECT value FROM json_each(?)) ORDER BY created_at DESC, hold_id DESC LIMIT ?`,
        JSON.stringify(targetIds),
        limit,
      )
    : [];

// Every read is authorized by retrievable before anything is returned and bounded by the caller's LIMIT.

/**
 * Graph claims: what the Atlas draws — not revoked, valid now (superseded ones stay, so supersedes
 * edges show). The status list is the claims_graph_* partial indexes' condition, term for term.
 */
const GRAPH_STATUS = (alias: string) => `${alias}.status IN ('active', 'disputed', 'superseded')`;

function graphClaims(caller: Caller, alias: string): [string, ...unknown[]] {
  const [ok, ...args] = retrievable(caller, alias, { valid: true });
  return [`${ok} AND ${GRAPH_STATUS(alias)}`, ...args];
}

/**
 * The newest graph claims of one subject, of one workspace, or (scope null) of the organization.
 * A subject is narrow (claims_by_subject). A workspace or the organization is walked once per way the
 * caller reads claims (retrievableWays: team outside workspaces, team of its workspaces, its own, its
 * grants' projects and subjects), each walk on a claims_graph_* index in seq order and stopped at
 * `limit`, then merged: the cost follows what the caller may read, never how many claims it may not.
 */
export function atlasClaims(
  db: Db,
  caller: Caller,
  scope: { subject_id: string } | { workspace_id: string } | null,
  limit: number,
): ClaimRow[] {
  if (scope !== null && "subject_id" in scope) {
    const [ok, ...args] = graphClaims(caller, "c");
    return db.all<ClaimRow>(
      `SELECT c.* FROM claims c WHERE c.subject_id = ? AND ${ok} ORDER BY c.seq DESC LIMIT ?`,
      scope.subject_id,
      ...args,
      limit,
    );
  }
  const [where, value] = scope === null ? ["1 = ?", 1] : ["c.workspace_id = ?", scope.workspace_id];
  const walks = retrievableWays(caller, "c", { valid: true }).map(([ok, ...args]) => ({
    sql: `SELECT * FROM (SELECT c.* FROM claims c WHERE ${where} AND ${ok} AND ${GRAPH_STATUS("c")} ORDER BY c.seq DESC LIMIT ?)`,
    args: [value, ...args, limit],
  }));
  return db.all<ClaimRow>(
    `${walks.map((w) => w.sql).join(" UNION ")} ORDER BY seq DESC LIMIT ?`,
    ...walks.flatMap((w) => w.args),
    limit,
  );
}

/** Does the caller retrieve anything (claim or observation) about this subject? */
export function subjectRetrievable(db: Db, caller: Caller, subjectId: string): boolean {
  const [ro, ...roArgs] = retrievable(caller, "o");
  const [rc, ...rcArgs] = retrievable(caller, "c");
  return !!db.first(
    `SELECT 1 WHERE EXISTS (SELECT 1 FROM claims c WHERE c.subject_id = ? AND ${rc})
        OR EXISTS (SELECT 1 FROM observations o WHERE o.subject_id = ? AND ${ro})`,
    subjectId,
    ...rcArgs,
    subjectId,
    ...roArgs,
  );
}

/**
 * Pairs of graph claims that share a retrievable source observation: `from` among `claimIds`, `to`
 * anywhere (or, with within, also among claimIds). Both claims and the shared observation are
 * authorized in the statement. CROSS JOIN pins the join order to start from the given claims (at
 * 50,000 claims the planner otherwise chose to start from claims c2: seconds instead of ms).
 */
export function sharedSourcePairs(db: Db, caller: Caller, claimIds: string[], limit: number, within = false) {
  const [ro, ...roArgs] = retrievable(caller, "o");
  const [rc, ...rcArgs] = graphClaims(caller, "c2");
  const ids = JSON.stringify(claimIds);
  return db.all<{ from_id: string; to_id: string; to_subject: string }>(
    `SELECT DISTINCT s1.claim_id AS from_id, s2.claim_id AS to_id, c2.subject_id AS to_subject
       FROM claim_sources s1
       CROSS JOIN observations o ON o.observation_id = s1.observation_id
       CROSS JOIN claim_sources s2 ON s2.observation_id = s1.observation_id AND s2.claim_id != s1.claim_id
       CROSS JOIN claims c2 ON c2.claim_id = s2.claim_id
      WHERE s1.claim_id IN (SELECT value FROM json_each(?)) AND ${ro} AND ${rc}
        ${within ? "AND s2.claim_id IN (SELECT value FROM json_each(?))" : ""}
      LIMIT ?`,
    ids,
    ...roArgs,
    ...rcArgs,
    ...(within ? [ids] : []),
    limit,
  );
}

/** The newest current disputed claims (the claims_disputed index), optionally of one workspace. */
export function disputedClaims(db: Db, caller: Caller, limit: number): ClaimRow[] {
  const [ok, ...args] = retrievable(caller, "c", { current: true });
  return db.all<ClaimRow>(
    `SELECT c.* FROM claims c WHERE c.status = 'disputed' AND ${ok} ORDER BY c.seq DESC LIMIT ?`,
    ...args,
    limit,
  );
}

/**
 * The newest current claims that dispute any of `disputedIds` (the claims_disputing index). Which
 * claims they dispute is decided in the walk, before the LIMIT: claims disputing only what the caller
 * cannot see must not fill it.
 */
export function disputingClaims(db: Db, caller: Caller, disputedIds: string[], limit: number): ClaimRow[] {
  if (!disputedIds.length) return [];
  const [ok, ...args] = retrievable(caller, "c", { current: true });
  return db.all<ClaimRow>(
    `SELECT c.* FROM claims c WHERE c.disputes != '[]' AND ${ok}
        AND EXISTS (SELECT 1 FROM json_each(c.disputes) d WHERE d.value IN (SELECT value FROM json_each(?)))
      ORDER BY c.seq DESC LIMIT ?`,
    ...args,
    JSON.stringify(disputedIds),
    limit,
  );
}

/** Current claims whose validity ends between now and `untilIso`, soonest first. */
export function expiringClaims(db: Db, caller: Caller, untilIso: string, limit: number): ClaimRow[] {
  const [ok, ...args] = retrievable(caller, "c", { current: true });
  return db.all<ClaimRow>(
    `SELECT c.* FROM claims c WHERE c.valid_to IS NOT NULL AND c.valid_to <= ? AND ${ok} ORDER BY c.valid_to LIMIT ?`,
    untilIso,
    ...args,
    limit,
  );
}

/** Retrievable source observations of claims (of one relation, if given), with their relation (for evidence edges). */
export function retrievableEvidence(db: Db, caller: Caller, claimIds: string[], limit: number, relation?: string) {
  const [ro, ...roArgs] = retrievable(caller, "o");
  return db.all<ObservationRow & { claim_id: string; relation: string }>(
    `SELECT o.*, s.claim_id, s.relation FROM claim_sources s JOIN observations o ON o.observation_id = s.observation_id
      WHERE s.claim_id IN (SELECT value FROM json_each(?)) ${relation === undefined ? "" : "AND s.relation = ?"} AND ${ro}
      ORDER BY s.claim_id, s.position LIMIT ?`,
    JSON.stringify(claimIds),
    ...(relation === undefined ? [] : [relation]),
    ...roArgs,
    limit,
  );
}

/**
 * SQL: every item claim of the context run aliased `run` is one the caller may retrieve (a run is
 * drawn only whole). For a walk over runs that must not let incomplete runs fill its LIMIT.
 */
export function runItemsRetrievable(caller: Caller, run: string): [string, ...unknown[]] {
  const [ok, ...args] = retrievable(caller, "c");
  return [
    `NOT EXISTS (SELECT 1 FROM context_items i WHERE i.context_id = ${run}.context_id
      AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.claim_id = i.claim_id AND ${ok}))`,
    ...args,
  ];
}

/** Retrievable claims among ids (any status), as rows. */
export function retrievableClaims(db: Db, caller: Caller, ids: string[]): ClaimRow[] {
  if (!ids.length) return [];
  const [ok, ...args] = retrievable(caller, "c");
  return db.all<ClaimRow>(
    `SELECT c.* FROM claims c WHERE c.claim_id IN (SELECT value FROM json_each(?)) AND ${ok}`,
    JSON.stringify(ids),
    ...args,
  );
}

/**
 * Rows of a governance table (claim_approvals, knowledge_releases; alias g, claim_id column) whose
 * claim the caller may retrieve (governedJoin), newest first. `where` filters g; the claim's current
 * version is joined in as claim_current_version.
 */
export function rowsWithRetrievableClaim<T>(
  db: Db,
  caller: Caller,
  table: "claim_approvals" | "knowledge_releases",
  where: string,
  whereArgs: unknown[],
  limit: number,
): (T & { claim_current_version: number })[] {
  const [join, ...joinArgs] = governedJoin(caller, "g");
  return db.all<T & { claim_current_version: number }>(
    `SELECT g.*, c.version AS claim_current_version FROM ${table} g ${join}
      WHERE ${where} ORDER BY g.created_at DESC LIMIT ?`,
    ...joinArgs,
    ...whereArgs,
    limit,
  );
}

/** A proposal with its source observation (the observation's own columns). */
export type ProposalRow = ObservationRow & {
  proposal_id: string;
  proposal_kind: string;
  statement: string;
  proposal_status: string;
};

/**
 * Pending enrichment proposals (DESIGN "Vector index, model diagnostics, enrichment": candidate claims
 * in a review ledger, never canonical) whose source observation the caller may retrieve, newest first.
 * The ledger is written by enrichment drain (src/domains/indexing/enrichment.ts).
 */
export function retrievableProposals(db: Db, caller: Caller, limit: number): ProposalRow[] {
  const [ro, ...args] = retrievable(caller, "o");
  return db.all<ProposalRow>(
    `SELECT o.*, p.proposal_id, p.kind AS proposal_kind, p.statement, p.status AS proposal_status FROM enrichment_proposals p
       JOIN observations o ON o.observation_id = p.observation_id
      WHERE p.status = 'pending' AND o.purged_at IS NULL AND ${ro} ORDER BY p.created_at DESC, p.proposal_id DESC LIMIT ?`,
    ...args,
    limit,
  );
}
