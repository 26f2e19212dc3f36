// The read rules for memory records, each written once, in JS and in SQL side by side. Every read of
// the record tables applies one of them (test/records.test.ts scans src/ for a query that does not):
//   retrievable / canRetrieve: may the caller retrieve this observation or claim? Who may read it is
//     the authorization module's (policy.ts readableWhere / canRead: visibility, authorship, grants,
//     workspace roles); what makes a record retrievable at all is added here and nowhere else
//     (retention exclusion; for claims asked `current` or `valid`, status and valid_to).
//   projectVisibleWhere / projectNameable: which projects the caller may see or name.
//   notShared / isShared / sharedWhere: a record every reader of the organization may retrieve (team,
//     of no workspace, not excluded by retention): ranking statistics, federation, release eligibility.
//   heldOrDelegated: a context run or checkpoint is read by its writer, and by the recipient of a live
//     (pending or accepted) handoff from its writer that carries it.
//   governedVisible / governedJoin: a claim approval or knowledge release is seen exactly as far as its
//     claim is retrievable (it is a copy of, or a judgement on, the claim's content).
// Imports nothing from src/domains: the record shapes it reads are declared here, structurally.
import { clock } from "../http/clock";
import type { Db } from "../sql/db";
import type { Caller } from "./caller";
import { canRead, isAdmin, readableWays, readableWhere, workspaceRole } from "./policy";

/** A memory record (observation or claim row) as the read rules read it. */
export interface RecordAccess {
  visibility: string;
  author_id: string;
  subject_id: string;
  project_id: string | null;
  /** The workspace of the record's project, copied at insert (null: none). */
  workspace_id: string | null;
  /** Set by retention apply: out of every retrieval until a legal hold restores it. */
  retention_excluded_at?: string | null;
  /** Claims only. */
  status?: string;
  valid_to?: string | null;
}

export interface Retrieval {
  /** Claims: current as compile and the memories list mean it: active or disputed, and valid now. */
  current?: boolean;
  /** Claims: valid now (valid_to unset or later), whatever the status. */
  valid?: boolean;
  /**
   * Include records retention excluded. Only for acting on a record rather than retrieving it: a purge
   * (deleting what retention hid), a legal hold (which restores it), revoking a release of it. Never for a read.
   */
  evenExcluded?: boolean;
}

/** A memory record as the authorization module sees it. */
export const guarded = (r: RecordAccess) => ({
  visibility: r.visibility,
  owner: r.author_id,
  subject_id: r.subject_id,
  project_id: r.project_id,
  workspace_id: r.workspace_id,
});

/** Valid now: valid_to unset or later than now. */
export const isCurrent = (c: { valid_to: string | null }, nowIso = clock.nowIso()) =>
  c.valid_to == null || c.valid_to > nowIso;

/** Current: active or disputed, and valid now. */
export const isCurrentClaim = (c: { status: string; valid_to: string | null }, nowIso = clock.nowIso()) =>
  (c.status === "active" || c.status === "disputed") && isCurrent(c, nowIso);

// ---- retrievable ----------------------------------------------------------------------------------

/**
 * May the caller retrieve records of the table aliased `alias` (observations, claims, or claim_ranking,
 * whose columns keep the claims names)? The SQL clause and its bind values, in order; the JS twin is
 * canRetrieve.
 */
export function retrievable(caller: Caller, alias: string, opts: Retrieval = {}): [string, ...unknown[]] {
  const [readable, ...args] = readableWhere(caller, alias);
  const [rest, ...restArgs] = recordRetrievable(alias, opts);
  return [`${readable} AND ${rest}`, ...args, ...restArgs];
}

/**
 * retrievable, one way of being readable at a time (policy.ts readableWays): the OR of these clauses
 * is exactly retrievable. A read that must cost what it returns, not what the caller cannot see, runs
 * one indexed walk per way and merges them (the Atlas's claim walks, compile's neighbour walks).
 */
export function retrievableWays(
  caller: Caller,
  alias: string,
  opts: Retrieval = {},
  shape: { singleValues?: boolean } = {},
): [string, ...unknown[]][] {
  const [rest, ...restArgs] = recordRetrievable(alias, opts);
  return readableWays(caller, alias, "author_id", shape).map(([way, ...args]) => [
    `${way} AND ${rest}`,
    ...args,
    ...restArgs,
  ]);
}

/**
 * What makes a record retrievable at all, whoever reads it: retention, and for claims validity, judged
 * at `now` (default: the clock). The vector index reads it without a caller (which claims it holds).
 */
export function recordRetrievable(alias: string, opts: Retrieval, now?: string): [string, ...unknown[]] {
  const parts: string[] = [];
  const args: unknown[] = [];
  if (!opts.evenExcluded) parts.push(`${alias}.retention_excluded_at IS NULL`);
  if (opts.current) parts.push(`${alias}.status IN ('active', 'disputed')`);
  if (opts.current || opts.valid) {
    parts.push(`(${alias}.valid_to IS NULL OR ${alias}.valid_to > ?)`);
    args.push(now ?? clock.nowIso());
  }
  return [parts.length ? parts.join(" AND ") : "1 = 1", ...args];
}

/** retrievable, for a row already read (read with its retention_excluded_at: `SELECT *` does). */
export function canRetrieve(caller: Caller, r: RecordAccess, opts: Retrieval = {}): boolean {
  if (!canRead(caller, guarded(r))) return false;
  if (!opts.evenExcluded && r.retention_excluded_at != null) return false;
  const claim = { status: r.status ?? "", valid_to: r.valid_to ?? null };
  if (opts.current && !isCurrentClaim(claim)) return false;
  if (opts.valid && !isCurrent(claim)) return false;
  return true;
}

// ---- projects -------------------------------------------------------------------------------------

/**
 * SQL: the project aliased `alias` is one the caller may see: it holds a record the caller may
 * retrieve (the GET /v1/projects rule), or (orCreator, the export rule) the caller created it.
 */
export function projectVisibleWhere(
  caller: Caller,
  alias: string,
  opts: { orCreator: boolean },
): [string, ...unknown[]] {
  const [ro, ...roArgs] = retrievable(caller, "o");
  const [rc, ...rcArgs] = retrievable(caller, "c");
  return [
    `(${opts.orCreator ? `${alias}.created_by = ? OR ` : ""}EXISTS (SELECT 1 FROM observations o WHERE o.project_id = ${alias}.project_id AND ${ro})
      OR EXISTS (SELECT 1 FROM claims c WHERE c.project_id = ${alias}.project_id AND ${rc}))`,
    ...(opts.orCreator ? [caller.principalId] : []),
    ...roArgs,
    ...rcArgs,
  ];
}

/**
 * May the caller name this project (resolve its reference, write into it by id)? A project outside
 * workspaces is the organization's shared namespace: yes. A workspace's project: its members and the
 * organization's owners/admins, its creator, a grant naming it or the organization, or whoever can
 * retrieve one of its records (projectVisibleWhere). For anyone else it answers like a missing one.
 */
export function projectNameable(
  db: Db,
  caller: Caller,
  p: { project_id: string; created_by: string; workspace_id?: string | null },
): boolean {
  if (
    !p.workspace_id ||
    isAdmin(caller) ||
    workspaceRole(caller, p.workspace_id) !== undefined ||
    p.created_by === caller.principalId
  )
    return true;
  if (caller.grants.some((g) => g.type === "organization" || (g.type === "project" && g.id === p.project_id)))
    return true;
  const [visible, ...args] = projectVisibleWhere(caller, "p", { orCreator: false });
  return db.first(`SELECT 1 FROM projects p WHERE p.project_id = ? AND ${visible}`, p.project_id, ...args) != null;
}

// ---- shared with the whole organization -----------------------------------------------------------

/** Why a record is not shared with every reader, in the order release eligibility names the reasons. */
export type NotShared = "retention_excluded" | "not_team" | "workspace_scoped";

/**
 * Why the record is not one every reader of the organization may retrieve (`within` a workspace: every
 * reader of that workspace's team records), or null when it is: team, of no workspace (or of `within`),
 * not excluded by retention. A peer is in no workspace, a channel's audience is outside every one, and
 * ranking statistics must not move with a record some reader cannot retrieve: all ask this.
 */
export function notShared(
  r: { visibility: string; workspace_id: string | null; retention_excluded_at?: string | null },
  within: string | null = null,
): NotShared | null {
  if (r.retention_excluded_at != null) return "retention_excluded";
  if (r.visibility !== "team") return "not_team";
  if (r.workspace_id != null && r.workspace_id !== within) return "workspace_scoped";
  return null;
}

export const isShared = (r: Parameters<typeof notShared>[0], within: string | null = null) =>
  notShared(r, within) === null;

/**
 * SQL form of isShared (organization-wide) over a table aliased `alias`. Events carry visibility and
 * workspace but no retention column: `{ retention: false }` (their records are checked where it matters).
 */
export const sharedWhere = (alias: string, opts: { retention: boolean } = { retention: true }) =>
  `(${alias}.visibility = 'team' AND ${alias}.workspace_id IS NULL${opts.retention ? ` AND ${alias}.retention_excluded_at IS NULL` : ""})`;

// ---- context runs and checkpoints: the writer's, and delegated by a live handoff ------------------

/** Handoff statuses under which the recipient reads what the handoff carries. */
export const LIVE_HANDOFF_STATUSES = ["pending", "accepted"] as const;

/**
 * SQL: the caller may read the context run or checkpoint aliased `alias` (its id column `id`, also the
 * handoffs column that carries it; its writer column `writer`): it wrote it, or a live handoff from
 * its writer to the caller carries it. A rejected handoff delegates nothing.
 */
export function heldOrDelegated(
  caller: Caller,
  alias: string,
  cols: { id: "context_id" | "checkpoint_id"; writer: string },
): [string, ...unknown[]] {
  const live = LIVE_HANDOFF_STATUSES.map((s) => `'${s}'`).join(", ");
  return [
    `(${alias}.${cols.writer} = ? OR EXISTS (SELECT 1 FROM handoffs h WHERE h.${cols.id} = ${alias}.${cols.id}
      AND h.from_principal_id = ${alias}.${cols.writer} AND h.to_principal_id = ? AND h.status IN (${live})))`,
    caller.principalId,
    caller.principalId,
  ];
}

// ---- governance rows seen through their claim -----------------------------------------------------

/** A claim approval or knowledge release is visible when its claim (the row read) is retrievable. */
export const governedVisible = (caller: Caller, claim: RecordAccess | null, opts: Retrieval = {}) =>
  claim != null && canRetrieve(caller, claim, opts);

/**
 * SQL form of governedVisible: a join of the claim of the governance row aliased `row` (its claim_id
 * column), as `claim`, kept only when the caller may retrieve it. Its bind values come first in the
 * statement (a JOIN precedes the WHERE).
 */
export function governedJoin(caller: Caller, row: string, claim = "c", opts: Retrieval = {}): [string, ...unknown[]] {
  const [ok, ...args] = retrievable(caller, claim, opts);
  return [`JOIN claims ${claim} ON ${claim}.claim_id = ${row}.claim_id AND ${ok}`, ...args];
}
