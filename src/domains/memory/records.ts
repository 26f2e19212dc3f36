// The memory records: the ONLY module with SQL on projects, observations, claims, claim_sources,
// claims_fts and claim_ranking (test/records.test.ts fails on any other). Two halves:
//
// Writers (insertProject, insertObservation, insertClaim, changeClaim, tombstone) each return the ids
// they touched; the route hands them to commitWrite as `touched`, which turns them into outbox rows per
// topic (src/org/outbox.ts OUTBOX_TOPICS). Every claim state change bumps `version`.
//
// Readers go through ONE predicate: `retrievable(caller, alias, opts)` in SQL, `canRetrieve(caller, row,
// opts)` in JS. Who may read a record (visibility, authorship, grants) is decided by the authorization
// module (src/access/policy.ts: readableWhere/canRead), which also decides events and other
// non-record reads; this module composes it with what makes a memory record retrievable at all
// (validity: a claim's status and valid_to; retention: retention_excluded_at). Retention exclusion
// and workspace roles are added to retrievable/canRetrieve and nowhere else: every read of these
// tables below is built on them.
import { type WriteTarget, canRead, canWrite, isAdmin, readableWays, readableWhere, workspaceRole } from "../../access/policy";
import { unresolved } from "../../http/errors";
import { clock } from "../../http/clock";
import type { Db } from "../../org/db";
import type { Touched } from "../../org/outbox";
import type { Caller } from "../../org/request";
import { getMeta } from "../../org/meta";
import { recordIdFor } from "../../registry/shards";
import { type RecordPrefix, takeReservedId } from "../../org/reserved-ids";
import type { WriteScope } from "../../org/write";
import { stemsOf, storedTerm, type TermStats } from "./fts";

export interface ProjectRow {
  project_id: string;
  reference: string;
  created_by: string;
  created_at: string;
  /** The workspace whose memberships scope this project's records; fixed at creation. */
  workspace_id?: string | null;
}

export interface ObservationRow {
  observation_id: string;
  subject_id: string;
  project_id: string | null;
  kind: string;
  content: string | null;
  content_hash: string;
  source_type: string;
  source_ref: string | null;
  trust: string;
  visibility: string;
  author_id: string;
  created_at: string;
  purged_at: string | null;
  /** Set by retention apply: out of every retrieval until a legal hold restores it. */
  retention_excluded_at?: string | null;
  /** Copied from the project at insert (null: no workspace); read by the one read predicate. */
  workspace_id: string | null;
}

export interface ClaimRow {
  seq: number;
  claim_id: string;
  subject_id: string;
  project_id: string | null;
  kind: string;
  statement: string;
  status: string;
  visibility: string;
  trust: string;
  version: number;
  valid_from: string;
  valid_to: string | null;
  superseded_by: string | null;
  disputes: string;
  author_id: string;
  created_at: string;
  updated_at: string;
  /** Set by retention apply: out of every retrieval until a legal hold restores it. */
  retention_excluded_at?: string | null;
  /** Copied from the project at insert (null: no workspace); read by the one read predicate. */
  workspace_id: string | null;
}

export interface SourceRow {
  claim_id: string;
  position: number;
  observation_id: string;
  relation: string;
}

const created = (...ids: string[]): Touched => ({ created: ids, changed: [] });
const changed = (...ids: string[]): Touched => ({ created: [], changed: ids });

// ---- the retrieval predicate ----------------------------------------------------------------------

export interface Retrieval {
  /** Claims: current as compile and the memories list mean it: active or disputed, and valid now. */
  current?: boolean;
  /** Claims: valid now (valid_to unset or later), whatever the status. */
  valid?: boolean;
  /**
   * Include records retention excluded. Only for acting on a record rather than retrieving it: a purge
   * (deleting what retention hid) and a legal hold (which restores it). Never for a read.
   */
  evenExcluded?: boolean;
}

type RecordLike = { visibility: string; author_id: string; subject_id: string; project_id: string | null; workspace_id: string | null;
  retention_excluded_at?: string | null };

/** A memory record as the authorization module sees it. */
export const guarded = (r: RecordLike) =>
  ({ visibility: r.visibility, owner: r.author_id, subject_id: r.subject_id, project_id: r.project_id, workspace_id: r.workspace_id });

/** Valid now: valid_to unset or later than now. */
export const isCurrent = (c: { valid_to: string | null }, nowIso = clock.nowIso()) => c.valid_to == null || c.valid_to > nowIso;

/** Current: active or disputed, and valid now. */
export const isCurrentClaim = (c: { status: string; valid_to: string | null }, nowIso = clock.nowIso()) =>
  (c.status === "active" || c.status === "disputed") && isCurrent(c, nowIso);

/**
 * May the caller retrieve records of the table aliased `alias` (observations or claims)? The SQL
 * clause and its bind values, in order; the JS twin is canRetrieve.
 */
export function retrievable(caller: Caller, alias: string, opts: Retrieval = {}): [string, ...unknown[]] {
  const [readable, ...args] = readableWhere(caller, alias);
  const [rest, ...restArgs] = retrievableRecord(alias, opts);
  return [`${readable} AND ${rest}`, ...args, ...restArgs];
}

/**
 * retrievable, one way of being readable at a time (policy.ts readableWays): the OR of these clauses
 * is exactly retrievable. A read that must cost what it returns, not what the caller cannot see, runs
 * one indexed walk per way and merges them (atlasClaims).
 */
export function retrievableWays(caller: Caller, alias: string, opts: Retrieval = {},
  shape: { singleValues?: boolean } = {}): [string, ...unknown[]][] {
  const [rest, ...restArgs] = retrievableRecord(alias, opts);
  return readableWays(caller, alias, "author_id", shape).map(([way, ...args]) => [`${way} AND ${rest}`, ...args, ...restArgs]);
}

/**
 * What makes a record retrievable at all, whoever reads it: retention, and for claims validity, judged
 * at `now` (default: the clock). The index drain and verify read it without a caller (claimsForIndex).
 */
function retrievableRecord(alias: string, opts: Retrieval, now?: string): [string, ...unknown[]] {
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
export function canRetrieve(caller: Caller, r: RecordLike & { status?: string; valid_to?: string | null }, opts: Retrieval = {}): boolean {
  if (!canRead(caller, guarded(r))) return false;
  if (!opts.evenExcluded && r.retention_excluded_at != null) return false;
  const claim = { status: r.status ?? "", valid_to: r.valid_to ?? null };
  if (opts.current && !isCurrentClaim(claim)) return false;
  if (opts.valid && !isCurrent(claim)) return false;
  return true;
}

// ---- projects -----------------------------------------------------------------------------------

/** The workspace of a project (null: none, or no such project: the handler answers for that). */
export const projectWorkspace = (db: Db, projectId: string | null | undefined): string | null =>
  projectId ? (db.first<{ workspace_id: string | null }>("SELECT workspace_id FROM projects WHERE project_id = ?", projectId)?.workspace_id ?? null) : null;

/**
 * The write target a request body names (appends and consolidations): for grantWritable routes. A
 * project the caller may not name (missing, or a hidden workspace's: projectNameable) and may not
 * write into answers 400 UNRESOLVED_REFERENCE here, before the write check, so a 403 never confirms it.
 */
export function targetInBody(rc: { db: Db; caller: Caller; body: { subject_id: string; project_id?: string | null } }): WriteTarget {
  const projectId = rc.body.project_id ?? null;
  const project = projectId === null ? null : getProject(rc.db, projectId);
  const target = { subject_id: rc.body.subject_id, project_id: projectId, workspace_id: project?.workspace_id ?? null };
  if (projectId !== null && (!project || (!projectNameable(rc.db, rc.caller, project) && !canWrite(rc.caller, target))))
    throw unresolved("project", [projectId]);
  return target;
}

/**
 * May the caller name this project (resolve its reference, write into it by id)? A project outside
 * workspaces is the organization's shared namespace: yes. A workspace's project: its members and the
 * organization's owners/admins, its creator, a grant naming it or the organization, or whoever can
 * retrieve one of its records (the GET /v1/projects rule). For anyone else it answers like a missing one.
 */
export function projectNameable(db: Db, caller: Caller, p: ProjectRow): boolean {
  if (!p.workspace_id || isAdmin(caller) || workspaceRole(caller, p.workspace_id) !== undefined || p.created_by === caller.principalId) return true;
  if (caller.grants.some((g) => g.type === "organization" || (g.type === "project" && g.id === p.project_id))) return true;
  const [visible, ...args] = projectVisible(caller, "p", { orCreator: false });
  return db.first(`SELECT 1 FROM projects p WHERE p.project_id = ? AND ${visible}`, p.project_id, ...args) != null;
}

export const getProject = (db: Db, projectId: string) =>
  db.first<ProjectRow>("SELECT * FROM projects WHERE project_id = ?", projectId);

export const projectByReference = (db: Db, reference: string) =>
  db.first<ProjectRow>("SELECT * FROM projects WHERE reference = ?", reference);

export function insertProject(db: Db, p: ProjectRow): Touched {
  db.run("INSERT INTO projects (project_id, reference, created_by, created_at, workspace_id) VALUES (?, ?, ?, ?, ?)",
    p.project_id, p.reference, p.created_by, p.created_at, p.workspace_id ?? null);
  return created(p.project_id);
}

/**
 * Projects the caller may see: created by it, or holding a record it may retrieve (the GET
 * /v1/projects and export rule). `alias` names the projects table in the surrounding query.
 */
function projectVisible(caller: Caller, alias: string, opts: { orCreator: boolean }): [string, ...unknown[]] {
  const [ro, ...roArgs] = retrievable(caller, "o");
  const [rc, ...rcArgs] = retrievable(caller, "c");
  return [`(${opts.orCreator ? `${alias}.created_by = ? OR ` : ""}EXISTS (SELECT 1 FROM observations o WHERE o.project_id = ${alias}.project_id AND ${ro})
      OR EXISTS (SELECT 1 FROM claims c WHERE c.project_id = ${alias}.project_id AND ${rc}))`,
  ...(opts.orCreator ? [caller.principalId] : []), ...roArgs, ...rcArgs];
}

// ---- observations -------------------------------------------------------------------------------

export const getObservation = (db: Db, id: string) =>
  db.first<ObservationRow>("SELECT * FROM observations WHERE observation_id = ?", id);

export const observationsByIds = (db: Db, ids: string[]) =>
  db.all<ObservationRow>("SELECT * FROM observations WHERE observation_id IN (SELECT value FROM json_each(?))", JSON.stringify(ids));

/** Claims by id, in one statement. */
export const claimsByIds = (db: Db, ids: string[]) =>
  db.all<ClaimRow>("SELECT * FROM claims WHERE claim_id IN (SELECT value FROM json_each(?))", JSON.stringify(ids));

/** What a federation filter judges (kind, subject, trust) and visibility, without content: cheap for a long scan. */
export interface RecordFacets {
  id: string;
  kind: string;
  subject_id: string;
  trust: string;
  visibility: string;
  retention_excluded_at: string | null;
}

export const observationFacets = (db: Db, ids: string[]) =>
  db.all<RecordFacets>(
    "SELECT observation_id AS id, kind, subject_id, trust, visibility, retention_excluded_at FROM observations WHERE observation_id IN (SELECT value FROM json_each(?))",
    JSON.stringify(ids));

export const claimFacets = (db: Db, ids: string[]) =>
  db.all<RecordFacets>(
    "SELECT claim_id AS id, kind, subject_id, trust, visibility, retention_excluded_at FROM claims WHERE claim_id IN (SELECT value FROM json_each(?))",
    JSON.stringify(ids));

/**
 * The id of a project, observation or claim this organization creates in `write`: one registered ahead
 * of use when the reserve has one (src/org/reserved-ids.ts; noted on the write), else a fresh one in
 * the organization's own registry shard (recordIdFor), registered after the write commits. Every
 * organization has its org_id stored at bootstrap.
 */
export function newRecordId(db: Db, write: WriteScope, prefix: RecordPrefix): string {
  const reserved = takeReservedId(db, prefix, write.takenFromReserve);
  if (reserved) return reserved;
  const orgId = getMeta(db, "org_id");
  if (!orgId) throw new Error("organization has no org_id");
  return recordIdFor(orgId, prefix);
}

/** A new observation, or a restored one (import) with its own id, timestamps and tombstone. */
export function insertObservation(db: Db, o: Omit<ObservationRow, "workspace_id">): Touched {
  db.run(
    `INSERT INTO observations (observation_id, subject_id, project_id, kind, content, content_hash, source_type,
       source_ref, trust, visibility, author_id, created_at, purged_at, workspace_id)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT workspace_id FROM projects WHERE project_id = ?))`,
    o.observation_id, o.subject_id, o.project_id, o.kind, o.content, o.content_hash, o.source_type,
    o.source_ref, o.trust, o.visibility, o.author_id, o.created_at, o.purged_at, o.project_id,
  );
  return created(o.observation_id);
}

/**
 * Tombstone an observation: content gone; id, hash and provenance kept. Enrichment proposals are text
 * derived from that content, so they go with it.
 */
export function tombstone(db: Db, observationId: string): Touched {
  db.run("UPDATE observations SET content = NULL, purged_at = ? WHERE observation_id = ? AND purged_at IS NULL",
    clock.nowIso(), observationId);
  db.run("DELETE FROM enrichment_proposals WHERE observation_id = ?", observationId);
  return changed(observationId);
}

/** The observations among `ids` that have been purged. */
export const purgedAmong = (db: Db, ids: string[]): Set<string> => new Set(db.all<{ observation_id: string }>(
  "SELECT observation_id FROM observations WHERE observation_id IN (SELECT value FROM json_each(?)) AND purged_at IS NOT NULL",
  JSON.stringify(ids)).map((r) => r.observation_id));

// ---- claims -------------------------------------------------------------------------------------

export const getClaim = (db: Db, id: string) => db.first<ClaimRow>("SELECT * FROM claims WHERE claim_id = ?", id);

export type NewClaim = Omit<ClaimRow, "seq" | "workspace_id">;

/** A claim with its sources in order, and its full-text index entry. Also reports its write position (seq). */
export function insertClaim(db: Db, c: NewClaim, sources: { observation_id: string; relation: string }[]): Touched & { seq: number } {
  const { seq, workspace_id } = db.first<{ seq: number; workspace_id: string | null }>(
    `INSERT INTO claims (claim_id, subject_id, project_id, kind, statement, status, visibility, trust, version,
       valid_from, valid_to, superseded_by, disputes, author_id, created_at, updated_at, workspace_id)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT workspace_id FROM projects WHERE project_id = ?)) RETURNING seq, workspace_id`,
    c.claim_id, c.subject_id, c.project_id, c.kind, c.statement, c.status, c.visibility, c.trust, c.version,
    c.valid_from, c.valid_to, c.superseded_by, c.disputes, c.author_id, c.created_at, c.updated_at, c.project_id,
  )!;
  db.run("INSERT INTO claims_fts (rowid, statement) VALUES (?, ?)", seq, c.statement);
  // The statement's terms, as claims_fts holds them: ranking and search read these, never re-tokenize.
  // (The claim's row in claim_ranking was just written by the database's trigger.)
  const terms = stemsOf(c.statement).map(storedTerm);
  db.run("UPDATE claim_ranking SET stems = ? WHERE seq = ?", terms.join(" "), seq);
  // Workspace records are readable by the workspace's members only: they stay out of the statistics.
  if (sharesTerms({ visibility: c.visibility, workspace_id })) countSharedTerms(db, terms, 1);
  sources.forEach((s, position) =>
    db.run("INSERT INTO claim_sources (claim_id, position, observation_id, relation) VALUES (?, ?, ?, ?)",
      c.claim_id, position, s.observation_id, s.relation));
  return { ...created(c.claim_id), seq };
}

/**
 * claim_ranking (0022_claim_ranking): one narrow row per claim that compile's and search's candidate
 * reads use instead of claims + claim_stems. RANKING_COPY are the claims columns it copies; triggers on
 * claims (0022) keep them in step on every insert, update and delete, whatever statement makes it, and
 * insertClaim adds the stems. Read only through `retrievable` (the columns keep the claims names, so
 * the one predicate applies as is).
 */
const RANKING_COPY = "seq, claim_id, subject_id, project_id, kind, trust, status, valid_to, retention_excluded_at, visibility, workspace_id, author_id, created_at";

/**
 * The rows where claim_ranking differs from claims (copied columns, size, presence): empty unless a
 * writer forgot it. Checked by test/records.test.ts after every kind of claim write.
 */
export function rankingDrift(db: Db): unknown[] {
  const cols = `${RANKING_COPY}, bytes`;
  const fromClaims = `SELECT ${cols} FROM (SELECT *, length(CAST(statement AS BLOB)) AS bytes FROM claims)`;
  return db.all(`SELECT 'claims' AS side, * FROM (${fromClaims} EXCEPT SELECT ${cols} FROM claim_ranking)
    UNION ALL SELECT 'claim_ranking', * FROM (SELECT ${cols} FROM claim_ranking EXCEPT ${fromClaims})`);
}

export type ClaimChange = Partial<Pick<ClaimRow, "status" | "valid_to" | "superseded_by" | "retention_excluded_at">>;

/** A claim's state change (status move, expiry, retention exclusion or restoration): every change bumps its version. */
export function changeClaim(db: Db, claimId: string, change: ClaimChange): Touched {
  // Retention exclusion takes a team claim out of the shared statistics (nobody may retrieve it);
  // restoring it puts it back.
  if ("retention_excluded_at" in change) {
    const was = db.first<Pick<ClaimRow, "visibility" | "workspace_id" | "retention_excluded_at" | "statement"> & { stems: string | null }>(
      `SELECT c.visibility, c.workspace_id, c.retention_excluded_at, c.statement, r.stems FROM claims c
         LEFT JOIN claim_ranking r ON r.seq = c.seq WHERE c.claim_id = ?`, claimId);
    if (was) {
      const before = sharesTerms(was);
      const after = sharesTerms({ ...was, retention_excluded_at: change.retention_excluded_at });
      const terms = was.stems != null ? (was.stems ? was.stems.split(" ") : []) : stemsOf(was.statement).map(storedTerm);
      if (before !== after) countSharedTerms(db, terms, after ? 1 : -1);
    }
  }
  const sets = Object.keys(change).map((k) => `${k} = ?`);
  db.run(`UPDATE claims SET ${sets.join(", ")}, version = version + 1, updated_at = ? WHERE claim_id = ?`,
    ...Object.values(change), clock.nowIso(), claimId);
  return changed(claimId);
}

/** All sources of a claim, readable or not (import compares them with an imported line). */
export const allSourcesOf = (db: Db, claimId: string) =>
  db.all<SourceRow>("SELECT * FROM claim_sources WHERE claim_id = ? ORDER BY position", claimId);

/**
 * Sources of claims as the caller may see them: a source observation the caller cannot retrieve is
 * left out entirely (its id never appears; the evidence view reports only hidden_source_count).
 */
export function sourcesByClaim(db: Db, caller: Caller, claimIds: string[]): Map<string, SourceRow[]> {
  const out = new Map<string, SourceRow[]>();
  if (!claimIds.length) return out;
  const [ok, ...args] = retrievable(caller, "o");
  const rows = db.all<SourceRow>(
    `SELECT s.* FROM claim_sources s JOIN observations o ON o.observation_id = s.observation_id
      WHERE s.claim_id IN (SELECT value FROM json_each(?)) AND ${ok} ORDER BY s.claim_id, s.position`,
    JSON.stringify(claimIds), ...args);
  for (const r of rows) out.set(r.claim_id, [...(out.get(r.claim_id) ?? []), r]);
  return out;
}

/** Claim ids among `ids` that the caller may retrieve. */
export function retrievableClaimIds(db: Db, caller: Caller, ids: string[]): Set<string> {
  if (!ids.length) return new Set();
  const [ok, ...args] = retrievable(caller, "c");
  return new Set(db.all<{ claim_id: string }>(
    `SELECT c.claim_id FROM claims c WHERE c.claim_id IN (SELECT value FROM json_each(?)) AND ${ok}`,
    JSON.stringify(ids), ...args).map((r) => r.claim_id));
}

/** Every source of each claim (not only those some caller may read), in order (federation bundles). */
export function allSourcesByClaim(db: Db, claimIds: string[]): Map<string, SourceRow[]> {
  const out = new Map<string, SourceRow[]>();
  for (const r of db.all<SourceRow>(
    "SELECT * FROM claim_sources WHERE claim_id IN (SELECT value FROM json_each(?)) ORDER BY claim_id, position", JSON.stringify(claimIds)))
    out.set(r.claim_id, [...(out.get(r.claim_id) ?? []), r]);
  return out;
}

/** Sources of one claim as the caller may see them (see sourcesByClaim). */
export const sourcesOf = (db: Db, caller: Caller, claimId: string) => sourcesByClaim(db, caller, [claimId]).get(claimId) ?? [];

/** Observation ids among `ids` that the caller may retrieve. */
export function retrievableObservationIds(db: Db, caller: Caller, ids: string[]): Set<string> {
  if (!ids.length) return new Set();
  const [ok, ...args] = retrievable(caller, "o");
  return new Set(db.all<{ observation_id: string }>(
    `SELECT o.observation_id FROM observations o WHERE o.observation_id IN (SELECT value FROM json_each(?)) AND ${ok}`,
    JSON.stringify([...new Set(ids)]), ...args).map((r) => r.observation_id));
}

/** What release eligibility needs to know about a claim now (governance). */
export interface ClaimFacts {
  claim_id: string;
  version: number;
  status: string;
  valid_to: string | null;
  visibility: string;
  /** The workspace of the claim's project (null: none). */
  workspace_id: string | null;
  trust: string;
  author_id: string;
  retention_excluded_at: string | null;
  /** Trust of each observation the claim names with relation `supports`. */
  supporting_trusts: string[];
}

/** Current facts of many claims in one statement (channel compile checks every release at once). */
export function claimFacts(db: Db, claimIds: string[]): Map<string, ClaimFacts> {
  const out = new Map<string, ClaimFacts>();
  if (!claimIds.length) return out;
  for (const c of db.all<Omit<ClaimFacts, "supporting_trusts"> & { supporting: string | null }>(
    `SELECT c.claim_id, c.version, c.status, c.valid_to, c.visibility, c.workspace_id, c.trust, c.author_id, c.retention_excluded_at,
            (SELECT group_concat(o.trust) FROM claim_sources s JOIN observations o ON o.observation_id = s.observation_id
              WHERE s.claim_id = c.claim_id AND s.relation = 'supports') AS supporting
       FROM claims c WHERE c.claim_id IN (SELECT value FROM json_each(?))`, JSON.stringify([...new Set(claimIds)]))) {
    const { supporting, ...facts } = c;
    out.set(c.claim_id, { ...facts, supporting_trusts: supporting ? supporting.split(",") : [] });
  }
  return out;
}

/** Every source of a claim, readable or not, with the hash that pins its content (release snapshots). */
export const claimSourceHashes = (db: Db, claimId: string) =>
  db.all<{ observation_id: string; relation: string; content_hash: string }>(
    `SELECT s.observation_id, s.relation, o.content_hash FROM claim_sources s
       JOIN observations o ON o.observation_id = s.observation_id WHERE s.claim_id = ? ORDER BY s.position`, claimId);

/**
 * One page of claim approvals whose claim the caller may retrieve (filtered in SQL before paging, so
 * hidden approvals leave no gap and no count), ordered by (created_at, approval_id).
 */
export function retrievableApprovalsPage<T>(db: Db, caller: Caller, f: { claim_id?: string; status?: string },
  after: [string, string], limit: number): T[] {
  const [ok, ...args] = retrievable(caller, "c");
  const where = [ok, "(a.created_at, a.approval_id) > (?, ?)"];
  args.push(...after);
  if (f.claim_id) { where.push("a.claim_id = ?"); args.push(f.claim_id); }
  if (f.status) { where.push("a.status = ?"); args.push(f.status); }
  return db.all<T>(
    `SELECT a.* FROM claim_approvals a JOIN claims c ON c.claim_id = a.claim_id WHERE ${where.join(" AND ")}
      ORDER BY a.created_at, a.approval_id LIMIT ?`, ...args, limit + 1);
}

/**
 * One page of knowledge releases whose claim the caller may retrieve (filtered in SQL before paging,
 * like approvals: a release is a copy of its claim's content, so it is seen exactly as far as the
 * claim is), ordered by seq.
 */
export function retrievableReleasesPage<T>(db: Db, caller: Caller, f: { channel_id?: string; status?: string },
  afterSeq: number, limit: number): T[] {
  const [ok, ...args] = retrievable(caller, "c");
  const where = [ok, "r.seq > ?"];
  args.push(afterSeq);
  if (f.channel_id) { where.push("r.channel_id = ?"); args.push(f.channel_id); }
  if (f.status) { where.push("r.status = ?"); args.push(f.status); }
  return db.all<T>(
    `SELECT r.* FROM knowledge_releases r JOIN claims c ON c.claim_id = r.claim_id WHERE ${where.join(" AND ")}
      ORDER BY r.seq LIMIT ?`, ...args, limit + 1);
}

/** Every source observation of a claim with its relation, in order; the caller filters with canRetrieve. */
export const evidenceOf = (db: Db, claimId: string) =>
  db.all<ObservationRow & { relation: string }>(
    `SELECT o.*, s.relation FROM claim_sources s JOIN observations o ON o.observation_id = s.observation_id
      WHERE s.claim_id = ? ORDER BY s.position`, claimId);

/** The claims of a recorded context run with their item score and tokens, in order (not yet authorized). */
export const contextRunClaims = (db: Db, contextId: string) =>
  db.all<ClaimRow & { score: number; tokens: number }>(
    `SELECT c.*, i.score, i.tokens FROM context_items i JOIN claims c ON c.claim_id = i.claim_id
      WHERE i.context_id = ? ORDER BY i.position`, contextId);

export interface MemoriesFilter {
  status?: string;
  subject_id?: string;
  project_id?: string;
  visibility?: string;
  kind?: string;
}

/**
 * Retrieval, validity and the filters of GET /v1/memories, on claims aliased c. Without a status:
 * current claims; active or disputed: those still valid; superseded or revoked lists are history.
 */
function memoriesWhere(caller: Caller, f: MemoriesFilter): [string, unknown[]] {
  const [ok, ...args] = retrievable(caller, "c", f.status ? { valid: f.status === "active" || f.status === "disputed" } : { current: true });
  const where = [ok];
  if (f.status) {
    where.push("c.status = ?");
    args.push(f.status);
  }
  for (const k of ["subject_id", "project_id", "visibility", "kind"] as const)
    if (f[k] !== undefined) {
      where.push(`c.${k} = ?`);
      args.push(f[k]);
    }
  return [where.join(" AND "), args];
}

/** One page (limit + 1 rows, to tell has_more) of the memories list, newest first, after a seq. */
export function memoriesPage(db: Db, caller: Caller, f: MemoriesFilter, afterSeq: number | undefined, limit: number): ClaimRow[] {
  const [where, args] = memoriesWhere(caller, f);
  return db.all(`SELECT c.* FROM claims c WHERE ${where}${afterSeq !== undefined ? " AND c.seq < ?" : ""} ORDER BY c.seq DESC LIMIT ?`,
    ...args, ...(afterSeq !== undefined ? [afterSeq] : []), limit + 1);
}

/**
 * A claim's stored terms (claim_ranking.stems, written by insertClaim) or, for a claim without them
 * (written before 0019_claim_stems with other than ASCII text), its statement to tokenize.
 */
export type StoredTerms = { stems: string | null; statement?: string | null };
/** StoredTerms of claim_ranking aliased c. */
const storedTermsCols = "c.stems, CASE WHEN c.stems IS NULL THEN (SELECT statement FROM claims WHERE seq = c.seq) END AS statement";

/**
 * Memories search's candidates (what ranking needs of them): the seq and stored terms of the newest
 * `window` claims matching an FTS5 MATCH expression that pass the list's retrieval and filters (applied
 * in the same statement, before anything is ranked). Newest first by rowid, so FTS5 walks its doclists
 * backwards and stops at the window. Read from claim_ranking (every column memoriesWhere names is
 * there): one narrow row per match, and of it only seq and stems (the seq is the claim's identity for
 * the rest of the search: AUTOINCREMENT, never reused). The few claims without stems get their
 * statement in a second read: a CASE for them in this one cost every row (docs/BENCHMARKS.md, "Issue
 * 23, fifth pass").
 */
export function memoriesMatches(db: Db, caller: Caller, f: MemoriesFilter, match: string, window: number) {
  const [where, args] = memoriesWhere(caller, f);
  const rows = db.all<Pick<ClaimRow, "seq"> & StoredTerms>(
    `SELECT c.seq, c.stems FROM claims_fts f CROSS JOIN claim_ranking c ON c.seq = f.rowid
      WHERE claims_fts MATCH ? AND ${where} ORDER BY f.rowid DESC LIMIT ?`, match, ...args, window);
  const bare = rows.filter((r) => r.stems == null);
  if (bare.length) {
    const statements = new Map(db.all<{ seq: number; statement: string }>(
      "SELECT seq, statement FROM claims WHERE seq IN (SELECT value FROM json_each(?))", JSON.stringify(bare.map((r) => r.seq)))
      .map((r) => [r.seq, r.statement]));
    for (const r of bare) r.statement = statements.get(r.seq) ?? null;
  }
  return rows;
}

/** The claims among `seqs` that still pass the memories list's retrieval and filters (any order). */
export function memoriesBySeqs(db: Db, caller: Caller, f: MemoriesFilter, seqs: number[]): ClaimRow[] {
  if (!seqs.length) return [];
  const [where, args] = memoriesWhere(caller, f);
  // CROSS JOIN keeps the planner on the seqs (one rowid lookup each), never a scan of claims_current.
  return db.all(`SELECT c.* FROM json_each(?) j CROSS JOIN claims c ON c.seq = j.value WHERE ${where}`,
    JSON.stringify(seqs), ...args);
}

// ---- compile ranking's reads ---------------------------------------------------------------------

/**
 * A compile candidate as ranking reads it: a current, retrievable claim's columns that scoring uses,
 * its feedback score, its statement's size in UTF-8 bytes (for its tokens), rank (set by ranking: bm25
 * of lexical hits) and, where ranking needs them, its stored terms. Lexical and positional candidates
 * are read from claim_ranking (one narrow row each), scoped ones from claims through its subject and
 * project indexes; only the few packed ones are read whole (`claimsAt`).
 */
export type CandidateRow = Pick<ClaimRow, "seq" | "claim_id" | "subject_id" | "project_id" | "kind" | "trust" | "status" | "created_at"> &
  { rank: number | null; feedback: number | null; bytes: number } & Partial<StoredTerms>;

const scoringCols = "c.seq, c.claim_id, c.subject_id, c.project_id, c.kind, c.trust, c.status, c.created_at, fb.score AS feedback, NULL AS rank";
/** Of claims aliased c. */
const candidateCols = `${scoringCols}, length(CAST(c.statement AS BLOB)) AS bytes`;
/** Of claim_ranking aliased c, with the stored terms. */
const rankingCandidateCols = `${scoringCols}, c.bytes, ${storedTermsCols}`;
const joinFeedback = "LEFT JOIN claim_feedback_score fb ON fb.claim_id = c.claim_id";

/** Retrieval (current claims only) and the kind filter, applied to every way a candidate comes in. */
function candidateWhere(caller: Caller, kinds: string[] | undefined): [string, unknown[]] {
  const [ok, ...args] = retrievable(caller, "c", { current: true });
  const where = [ok];
  if (kinds?.length) {
    where.push("c.kind IN (SELECT value FROM json_each(?))");
    args.push(JSON.stringify(kinds));
  }
  return [where.join(" AND "), args];
}

/**
 * The newest `limit` candidates matching an FTS5 MATCH expression (ranking calls it once per query
 * term), with their stored terms. Newest first by rowid, so FTS5 walks the term's doclist backwards
 * and stops at the limit: the cost is bounded by the limit, not by how many claims of the organization
 * hold the term. Each match is one read of its narrow claim_ranking row (not claims and claim_stems:
 * two random page reads per match were what still grew with the organization). Matches at the `skip`
 * positions (already read by an earlier call) are passed over before their row is read, so they do not
 * count against the limit.
 */
export function lexicalMatches(db: Db, caller: Caller, kinds: string[] | undefined, match: string, limit: number,
  skip: number[] = []): CandidateRow[] {
  const [where, args] = candidateWhere(caller, kinds);
  return db.all<CandidateRow>(
    `SELECT ${rankingCandidateCols} FROM claims_fts f CROSS JOIN claim_ranking c ON c.seq = f.rowid ${joinFeedback}
      WHERE claims_fts MATCH ? AND f.rowid NOT IN (SELECT value FROM json_each(?)) AND ${where} ORDER BY f.rowid DESC LIMIT ?`,
    match, JSON.stringify(skip), ...args, limit);
}

/** The newest `limit` candidates about a subject or project (scope null: about anything). */
export function scopedCandidates(db: Db, caller: Caller, kinds: string[] | undefined,
  scope: { column: "subject_id" | "project_id"; value: string } | null, limit: number): CandidateRow[] {
  const [where, args] = candidateWhere(caller, kinds);
  return db.all<CandidateRow>(
    `SELECT ${candidateCols} FROM claims c ${joinFeedback} WHERE ${scope ? `c.${scope.column} = ?` : "1 = ?"} AND ${where}
      ORDER BY c.seq DESC LIMIT ?`,
    scope ? scope.value : 1, ...args, limit);
}

/**
 * Candidate rows of the claims among `ids` that pass compile's candidate predicate (retrievable,
 * current, of the kinds), in write order, with `extra` columns. The id → seq step reads only claims'
 * claim_id index (it holds seq); the predicate and scoring read the narrow claim_ranking row.
 */
function candidateRowsWithIds<T extends CandidateRow>(db: Db, caller: Caller, kinds: string[] | undefined, ids: string[], extra = ""): T[] {
  if (!ids.length) return [];
  const [where, args] = candidateWhere(caller, kinds);
  return db.all<T>(
    `SELECT ${rankingCandidateCols}${extra} FROM json_each(?) j CROSS JOIN claims k ON k.claim_id = j.value
       CROSS JOIN claim_ranking c ON c.seq = k.seq ${joinFeedback} WHERE ${where} ORDER BY c.seq`,
    JSON.stringify(ids), ...args);
}

/**
 * Compile candidates read before compile's transaction (the vector hits' accept, `candidateRowsAmong`),
 * carried into it with what proves them still exact there: the connection's write count when the
 * read-ahead began (SQLite's total_changes(), which every INSERT, UPDATE and DELETE of this object,
 * triggers included, raises; a rolled-back write raises it too, which only costs the shortcut). An
 * equal count: no row the predicate or scoring reads has changed, and only validity (valid_to against
 * now) can have moved, which the rows carry. Anything else, and the rows are read again
 * (`candidatesWithIds`). This rests on the organization object writing through one SQLite connection
 * (ctx.storage.sql, the only one a Durable Object has): a write through another would not raise this count.
 */
export interface CandidatesReadAhead {
  caller: Caller;
  kinds: string | null;
  stamp: number;
  /** Admitted ids' candidate rows, with their valid_to (not part of the row). */
  rows: Map<string, { row: CandidateRow; validTo: string | null }>;
}

/** Writes on this object's SQLite connection so far (INSERT, UPDATE, DELETE rows, triggers included). */
const writesSoFar = (db: Db) => db.first<{ n: number }>("SELECT total_changes() AS n")!.n;

const kindsKey = (kinds: string[] | undefined) => (kinds?.length ? JSON.stringify(kinds) : null);

/** A read-ahead for this caller and kinds, stamped now (before any of its rows is read). */
export const readAhead = (db: Db, caller: Caller, kinds: string[] | undefined): CandidatesReadAhead =>
  ({ caller, kinds: kindsKey(kinds), stamp: writesSoFar(db), rows: new Map() });

/**
 * The claim ids among `ids` that could be compile candidates for the caller (vector kNN filters
 * through it before taking its top k), keeping their candidate rows in `ahead` so that compile's
 * re-authorization can take them instead of reading every hit again.
 */
export function candidateRowsAmong(db: Db, caller: Caller, kinds: string[] | undefined, ids: string[], ahead: CandidatesReadAhead): Set<string> {
  const rows = candidateRowsWithIds<CandidateRow & { valid_to: string | null }>(db, caller, kinds, ids, ", c.valid_to AS valid_to");
  // The row without valid_to, built like every other candidate row (same keys in the same order).
  for (const { valid_to: validTo, ...row } of rows) ahead.rows.set(row.claim_id, { row, validTo });
  return new Set(rows.map((r) => r.claim_id));
}

/** Candidates at the given write positions (seq), with their stored terms. */
export function candidatesAt(db: Db, caller: Caller, kinds: string[] | undefined, seqs: number[]): CandidateRow[] {
  const [where, args] = candidateWhere(caller, kinds);
  return db.all<CandidateRow>(
    `SELECT ${rankingCandidateCols} FROM json_each(?) j CROSS JOIN claim_ranking c ON c.seq = j.value ${joinFeedback} WHERE ${where}`,
    JSON.stringify(seqs), ...args);
}

/**
 * Candidates with the given claim ids, in write order, with their stored terms (vector hits). With
 * `ahead` (their rows read before the transaction) and no write since, those rows are taken, each kept
 * only if still valid now: what this read would return, without reading (CandidatesReadAhead). An id
 * without a carried row (never admitted by the accept: a hit always is) is read.
 */
export function candidatesWithIds(db: Db, caller: Caller, kinds: string[] | undefined, ids: string[], ahead?: CandidatesReadAhead): CandidateRow[] {
  if (!ahead || ahead.caller !== caller || ahead.kinds !== kindsKey(kinds) || writesSoFar(db) !== ahead.stamp)
    return candidateRowsWithIds(db, caller, kinds, ids);
  const now = clock.nowIso();
  const out = ids.flatMap((id) => {
    const r = ahead.rows.get(id);
    return r && (r.validTo == null || r.validTo > now) ? [{ ...r.row }] : [];
  });
  out.push(...candidateRowsWithIds(db, caller, kinds, ids.filter((id) => !ahead.rows.has(id))));
  return out.sort((a, b) => a.seq - b.seq);
}

/** The candidates at the given write positions, whole (what compile returns of the packed ones). */
export function claimsAt(db: Db, caller: Caller, kinds: string[] | undefined, seqs: number[]): ClaimRow[] {
  if (!seqs.length) return [];
  const [where, args] = candidateWhere(caller, kinds);
  return db.all<ClaimRow>(`SELECT c.* FROM json_each(?) j CROSS JOIN claims c ON c.seq = j.value WHERE ${where}`, JSON.stringify(seqs), ...args);
}

/**
 * Walks of claim_ranking in write order for the neighbour reads below, from each element h of `over`
 * (a JSON value): one per way the caller may retrieve a claim (in any status) and per kind of walk in
 * `walks` (a scalar subquery of seqs as a JSON array, given the way's clause; its bind values are the
 * way's, then the LIMIT `n`). Each way is a single range of one 0026_claim_ranking_walks index in seq
 * order (retrievableWays with single values: equalities only), so a walk reads only claims that way
 * lets the caller read and stops at its LIMIT: the cost follows what the caller may read, never the
 * claims it may not. The walks are columns of one statement (a compound SELECT takes at most five
 * terms here), split only where 100 bound parameters would not hold them. Returns, for each element
 * and kind of walk, every way's list.
 */
function walkEachWay(db: Db, caller: Caller, over: unknown[], n: number, walks: ((ok: string) => string)[]): number[][][][] {
  const found = over.map(() => walks.map(() => [] as number[][]));
  const at = JSON.stringify(over);
  let cols: string[] = [];
  let args: unknown[] = [];
  const run = () => {
    const rows = db.all<Record<string, unknown>>(`SELECT h.key AS i, ${cols.join(", ")} FROM json_each(?) h`, ...args, at);
    for (const r of rows) cols.forEach((_, k) => found[r.i as number][k % walks.length].push(JSON.parse(r[`w${k}`] as string)));
    cols = [];
    args = [];
  };
  for (const [ok, ...okArgs] of retrievableWays(caller, "c", {}, { singleValues: true })) {
    const wayArgs = walks.flatMap(() => [...okArgs, n]);
    if (cols.length && args.length + wayArgs.length + 1 > MAX_BOUND_PARAMETERS) run();
    cols.push(...walks.map((walk, j) => `${walk(ok)} AS w${cols.length + j}`));
    args.push(...wayArgs);
  }
  run();
  return found;
}

/** Durable Object SQLite refuses a statement with more bound parameters than this. */
const MAX_BOUND_PARAMETERS = 100;

/** The first `n` of the union of ordered lists, in order (`by`: ascending or descending). */
function firstOfUnion(lists: number[][], n: number, by: "asc" | "desc"): number[] {
  const all = [...new Set(lists.flat())];
  return all.sort((a, b) => (by === "asc" ? a - b : b - a)).slice(0, n);
}

/**
 * For each write position, the nearest `n` claims before and after it that the caller may retrieve (in
 * any status): write order as the caller sees it, skipping what it cannot read. Each way the caller
 * reads claims is walked backward and forward from each position to its n-th claim (walkEachWay), and
 * the nearest n of their union kept: what one walk of every claim, stopping at the n-th readable one,
 * finds, at the cost of what the caller may read.
 */
export function readableNeighbours(db: Db, caller: Caller, seqs: number[], n: number): Map<number, { before: number[]; after: number[] }> {
  const out = new Map<number, { before: number[]; after: number[] }>();
  if (!seqs.length) return out;
  const side = (cmp: "<" | ">", order: "DESC" | "ASC") => (ok: string) =>
    `(SELECT json_group_array(seq) FROM (SELECT c.seq FROM claim_ranking c WHERE c.seq ${cmp} h.value AND ${ok} ORDER BY c.seq ${order} LIMIT ?))`;
  const found = walkEachWay(db, caller, seqs, n, [side("<", "DESC"), side(">", "ASC")]);
  seqs.forEach((seq, i) => {
    if (!out.has(seq)) out.set(seq, { before: firstOfUnion(found[i][0], n, "desc"), after: firstOfUnion(found[i][1], n, "asc") });
  });
  return out;
}

/**
 * For each span [a, b] of write positions, the first `n` claims strictly between them that the caller
 * may retrieve (in any status), keyed by a: each way the caller reads claims is walked forward from a to
 * its n-th claim or to b (walkEachWay), and the first n of their union kept, so neither claims the
 * caller cannot read nor any past b cost anything.
 */
export function readableWithin(db: Db, caller: Caller, spans: [number, number][], n: number): Map<number, number[]> {
  if (!spans.length) return new Map();
  const found = walkEachWay(db, caller, spans, n, [(ok) => `(SELECT json_group_array(seq) FROM (SELECT c.seq FROM claim_ranking c
      WHERE c.seq > json_extract(h.value, '$[0]') AND c.seq < json_extract(h.value, '$[1]') AND ${ok} ORDER BY c.seq LIMIT ?))`]);
  return new Map(spans.map(([a], i) => [a, firstOfUnion(found[i][0], n, "asc")]));
}

// ---- ranking statistics -------------------------------------------------------------------------
// bm25 and term weights count team claims outside any workspace that retention has not excluded, in
// any status: every reader of the organization may retrieve those, so no score, order or count
// depends on a record the caller cannot retrieve. Kept by insertClaim and changeClaim (retention
// exclusion and restoration) in the writer's transaction (claims never change visibility or leave the table).

/** Does a claim count in the shared statistics? */
const sharesTerms = (c: { visibility: string; workspace_id: string | null; retention_excluded_at?: string | null }) =>
  c.visibility === "team" && c.workspace_id == null && c.retention_excluded_at == null;

/** A team claim's terms (stored form, in order) and length join (by 1) or leave (by -1) the shared statistics. */
function countSharedTerms(db: Db, terms: string[], by: 1 | -1) {
  db.run(
    `INSERT INTO claim_terms (term, claims) SELECT value, ? FROM json_each(?) WHERE true
      ON CONFLICT (term) DO UPDATE SET claims = claims + excluded.claims`, by, JSON.stringify([...new Set(terms)]));
  if (by < 0) db.run("DELETE FROM claim_terms WHERE claims <= 0 AND term IN (SELECT value FROM json_each(?))", JSON.stringify([...new Set(terms)]));
  db.run(
    `INSERT INTO claim_corpus (id, claims, tokens) VALUES (1, ?, ?)
      ON CONFLICT (id) DO UPDATE SET claims = claims + excluded.claims, tokens = tokens + excluded.tokens`, by, by * terms.length);
}

/** The shared statistics for the given stem keys: one indexed lookup per term, never a count. */
export function sharedTermStats(db: Db, stems: string[]): TermStats {
  const corpus = db.first<{ claims: number; tokens: number }>("SELECT claims, tokens FROM claim_corpus WHERE id = 1");
  const keys = [...new Set(stems)];
  const byTerm = new Map(db.all<{ term: string; claims: number }>(
    "SELECT term, claims FROM claim_terms WHERE term IN (SELECT value FROM json_each(?))",
    JSON.stringify(keys.map(storedTerm))).map((r) => [r.term, r.claims]));
  return { rows: corpus?.claims ?? 0, tokens: corpus?.tokens ?? 0, held: (stem) => byTerm.get(storedTerm(stem)) ?? 0 };
}

// ---- directories --------------------------------------------------------------------------------

export type RecordScope = { column: "project_id" | "subject_id"; value: string | null };

/** Retrievable observation and claim ids in one project or subject, oldest first, after a (created_at, id) cursor. */
export function recordReferences(db: Db, caller: Caller, scope: RecordScope, after: [string, string], limit: number) {
  const [ro, ...roArgs] = retrievable(caller, "o");
  const [rc, ...rcArgs] = retrievable(caller, "c");
  const match = (alias: string) => (scope.value === null ? `${alias}.${scope.column} IS NULL` : `${alias}.${scope.column} = ?`);
  const value = scope.value === null ? [] : [scope.value];
  return db.all<{ type: string; id: string; subject_id: string; project_id: string | null; created_at: string }>(
    `SELECT * FROM (
       SELECT 'observation' AS type, o.observation_id AS id, o.subject_id, o.project_id, o.created_at FROM observations o
        WHERE ${match("o")} AND ${ro}
       UNION ALL
       SELECT 'claim' AS type, c.claim_id AS id, c.subject_id, c.project_id, c.created_at FROM claims c
        WHERE ${match("c")} AND ${rc})
     WHERE (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?`,
    ...value, ...roArgs, ...value, ...rcArgs, ...after, limit + 1);
}

/** Projects holding a retrievable record, after a (created_at, project_id) cursor. */
export function retrievableProjects(db: Db, caller: Caller, after: [string, string], limit: number) {
  const [visible, ...args] = projectVisible(caller, "p", { orCreator: false });
  return db.all<{ project_id: string; reference: string; created_at: string }>(
    `SELECT p.project_id, p.reference, p.created_at FROM projects p
      WHERE (p.created_at, p.project_id) > (?, ?) AND ${visible}
      ORDER BY p.created_at, p.project_id LIMIT ?`,
    ...after, ...args, limit + 1);
}

/**
 * Subjects of retrievable records, in order, after a subject id. Each table is walked in subject order
 * (its by-subject index) and stopped once it has the page, so the cost follows the subjects read, not
 * every record of the organization.
 */
export function retrievableSubjects(db: Db, caller: Caller, after: string, limit: number) {
  const [ro, ...roArgs] = retrievable(caller, "o");
  const [rc, ...rcArgs] = retrievable(caller, "c");
  return db.all<{ subject_id: string }>(
    `SELECT subject_id FROM (
       SELECT * FROM (SELECT DISTINCT o.subject_id FROM observations o WHERE o.subject_id > ? AND ${ro} ORDER BY o.subject_id LIMIT ?)
       UNION SELECT * FROM (SELECT DISTINCT c.subject_id FROM claims c WHERE c.subject_id > ? AND ${rc} ORDER BY c.subject_id LIMIT ?))
     ORDER BY subject_id LIMIT ?`,
    after, ...roArgs, limit + 1, after, ...rcArgs, limit + 1, limit + 1);
}

// ---- the Memory Atlas's reads (src/domains/atlas) ---------------------------------------------------
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
export function atlasClaims(db: Db, caller: Caller, scope: { subject_id: string } | { workspace_id: string } | null, limit: number): ClaimRow[] {
  if (scope !== null && "subject_id" in scope) {
    const [ok, ...args] = graphClaims(caller, "c");
    return db.all<ClaimRow>(`SELECT c.* FROM claims c WHERE c.subject_id = ? AND ${ok} ORDER BY c.seq DESC LIMIT ?`, scope.subject_id, ...args, limit);
  }
  const [where, value] = scope === null ? ["1 = ?", 1] : ["c.workspace_id = ?", scope.workspace_id];
  const walks = retrievableWays(caller, "c", { valid: true }).map(([ok, ...args]) => ({
    sql: `SELECT * FROM (SELECT c.* FROM claims c WHERE ${where} AND ${ok} AND ${GRAPH_STATUS("c")} ORDER BY c.seq DESC LIMIT ?)`,
    args: [value, ...args, limit],
  }));
  return db.all<ClaimRow>(`${walks.map((w) => w.sql).join(" UNION ")} ORDER BY seq DESC LIMIT ?`, ...walks.flatMap((w) => w.args), limit);
}

/** Does the caller retrieve anything (claim or observation) about this subject? */
export function subjectRetrievable(db: Db, caller: Caller, subjectId: string): boolean {
  const [ro, ...roArgs] = retrievable(caller, "o");
  const [rc, ...rcArgs] = retrievable(caller, "c");
  return !!db.first(
    `SELECT 1 WHERE EXISTS (SELECT 1 FROM claims c WHERE c.subject_id = ? AND ${rc})
        OR EXISTS (SELECT 1 FROM observations o WHERE o.subject_id = ? AND ${ro})`,
    subjectId, ...rcArgs, subjectId, ...roArgs);
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
    ids, ...roArgs, ...rcArgs, ...(within ? [ids] : []), limit);
}

/** The newest current disputed claims (the claims_disputed index), optionally of one workspace. */
export function disputedClaims(db: Db, caller: Caller, limit: number): ClaimRow[] {
  const [ok, ...args] = retrievable(caller, "c", { current: true });
  return db.all<ClaimRow>(`SELECT c.* FROM claims c WHERE c.status = 'disputed' AND ${ok} ORDER BY c.seq DESC LIMIT ?`, ...args, limit);
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
      ORDER BY c.seq DESC LIMIT ?`, ...args, JSON.stringify(disputedIds), limit);
}

/** Current claims whose validity ends between now and `untilIso`, soonest first. */
export function expiringClaims(db: Db, caller: Caller, untilIso: string, limit: number): ClaimRow[] {
  const [ok, ...args] = retrievable(caller, "c", { current: true });
  return db.all<ClaimRow>(`SELECT c.* FROM claims c WHERE c.valid_to IS NOT NULL AND c.valid_to <= ? AND ${ok} ORDER BY c.valid_to LIMIT ?`,
    untilIso, ...args, limit);
}

/** Retrievable source observations of claims (of one relation, if given), with their relation (for evidence edges). */
export function retrievableEvidence(db: Db, caller: Caller, claimIds: string[], limit: number, relation?: string) {
  const [ro, ...roArgs] = retrievable(caller, "o");
  return db.all<ObservationRow & { claim_id: string; relation: string }>(
    `SELECT o.*, s.claim_id, s.relation FROM claim_sources s JOIN observations o ON o.observation_id = s.observation_id
      WHERE s.claim_id IN (SELECT value FROM json_each(?)) ${relation === undefined ? "" : "AND s.relation = ?"} AND ${ro}
      ORDER BY s.claim_id, s.position LIMIT ?`,
    JSON.stringify(claimIds), ...(relation === undefined ? [] : [relation]), ...roArgs, limit);
}

/**
 * SQL: every item claim of the context run aliased `run` is one the caller may retrieve (a run is
 * drawn only whole). For a walk over runs that must not let incomplete runs fill its LIMIT.
 */
export function runItemsRetrievable(caller: Caller, run: string): [string, ...unknown[]] {
  const [ok, ...args] = retrievable(caller, "c");
  return [`NOT EXISTS (SELECT 1 FROM context_items i WHERE i.context_id = ${run}.context_id
      AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.claim_id = i.claim_id AND ${ok}))`, ...args];
}

/** Retrievable claims among ids (any status), as rows. */
export function retrievableClaims(db: Db, caller: Caller, ids: string[]): ClaimRow[] {
  if (!ids.length) return [];
  const [ok, ...args] = retrievable(caller, "c");
  return db.all<ClaimRow>(`SELECT c.* FROM claims c WHERE c.claim_id IN (SELECT value FROM json_each(?)) AND ${ok}`, JSON.stringify(ids), ...args);
}

/**
 * Rows of a governance table (claim_approvals, knowledge_releases; alias g, claim_id column) whose
 * claim the caller may retrieve, newest first. `where` filters g; the claim's current version is
 * joined in as claim_current_version.
 */
export function rowsWithRetrievableClaim<T>(db: Db, caller: Caller, table: "claim_approvals" | "knowledge_releases",
  where: string, whereArgs: unknown[], limit: number): (T & { claim_current_version: number })[] {
  const [ok, ...args] = retrievable(caller, "c");
  return db.all<T & { claim_current_version: number }>(
    `SELECT g.*, c.version AS claim_current_version FROM ${table} g JOIN claims c ON c.claim_id = g.claim_id
      WHERE ${where} AND ${ok} ORDER BY g.created_at DESC LIMIT ?`, ...whereArgs, ...args, limit);
}

/** A proposal with its source observation (the observation's own columns). */
export type ProposalRow = ObservationRow & { proposal_id: string; proposal_kind: string; statement: string; proposal_status: string };

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
      WHERE p.status = 'pending' AND o.purged_at IS NULL AND ${ro} ORDER BY p.created_at DESC, p.proposal_id DESC LIMIT ?`, ...args, limit);
}

// ---- export -------------------------------------------------------------------------------------

export type ExportTable = "projects" | "observations" | "claims";

const EXPORT_TABLE: Record<ExportTable, { sql: string; alias: string; position: string; id: string }> = {
  projects: { sql: "projects p", alias: "p", position: "p.rowid", id: "p.project_id" },
  observations: { sql: "observations o", alias: "o", position: "o.rowid", id: "o.observation_id" },
  claims: { sql: "claims c", alias: "c", position: "c.seq", id: "c.claim_id" },
};

/**
 * Export cursors name a record by id, never by position: positions are organization-wide counters, so
 * two of one caller's cursors would tell how many records others wrote in between. These two convert.
 */
export function exportIdAt(db: Db, type: ExportTable, position: number): string | null {
  const t = EXPORT_TABLE[type];
  return db.first<{ id: string }>(`SELECT ${t.id} AS id FROM ${t.sql} WHERE ${t.position} = ?`, position)?.id ?? null;
}
/** The position of a record the caller may export (null for one it may not, exactly as for none). */
export function exportPositionOf(db: Db, caller: Caller, type: ExportTable, id: string): number | null {
  const t = EXPORT_TABLE[type];
  const [where, args] = exportWindow(caller, type);
  return db.first<{ r: number }>(`SELECT ${t.position} AS r FROM ${t.sql} WHERE ${t.id} = ? AND ${where}`,
    id, 0, Number.MAX_SAFE_INTEGER, ...args)?.r ?? null;
}

/** Which of these ids name a project, observation or claim of this organization (any state). */
export function existingRecordIds(db: Db, ids: string[]): string[] {
  if (!ids.length) return [];
  return db.all<{ id: string }>(
    `SELECT j.value AS id FROM json_each(?) j WHERE EXISTS (SELECT 1 FROM projects WHERE project_id = j.value)
        OR EXISTS (SELECT 1 FROM observations WHERE observation_id = j.value) OR EXISTS (SELECT 1 FROM claims WHERE claim_id = j.value)`,
    JSON.stringify(ids)).map((r) => r.id);
}

/**
 * The write position of a claim the caller may retrieve, for the memories cursor that names it: null
 * (the invalid-cursor answer) for a claim it cannot, exactly as for no claim, so a cursor never confirms
 * that someone else's claim exists or where it sits.
 */
export function claimSeqOf(db: Db, caller: Caller, claimId: string): number | null {
  const [ok, ...args] = retrievable(caller, "c");
  return db.first<{ seq: number }>(`SELECT c.seq FROM claims c WHERE c.claim_id = ? AND ${ok}`, claimId, ...args)?.seq ?? null;
}

/** The position of a release whose claim the caller may retrieve (the release list's cursor), else null. */
export function retrievableReleaseSeq(db: Db, caller: Caller, releaseId: string): number | null {
  const [ok, ...args] = retrievable(caller, "c");
  return db.first<{ seq: number }>(
    `SELECT r.seq FROM knowledge_releases r JOIN claims c ON c.claim_id = r.claim_id WHERE r.release_id = ? AND ${ok}`,
    releaseId, ...args)?.seq ?? null;
}

/** Position window (after, upTo] plus what the caller may retrieve (projects: see projectVisible). */
function exportWindow(caller: Caller, type: ExportTable): [string, unknown[]] {
  const t = EXPORT_TABLE[type];
  const [ok, ...args] = type === "projects" ? projectVisible(caller, "p", { orCreator: true }) : retrievable(caller, t.alias);
  return [`${t.position} > ? AND ${t.position} <= ? AND ${ok}`, args];
}

/** Export positions of one type in (after, upTo], at most `limit`, in order (no record read). */
export function exportPositions(db: Db, caller: Caller, type: ExportTable, after: number, upTo: number, limit: number): number[] {
  const t = EXPORT_TABLE[type];
  const [where, args] = exportWindow(caller, type);
  return db.all<{ r: number }>(`SELECT ${t.position} AS r FROM ${t.sql} WHERE ${where} ORDER BY ${t.position} LIMIT ?`,
    after, upTo, ...args, limit).map((x) => x.r);
}

/** Exported rows of one type in (after, upTo], at most `limit`, in order, each with its position `r`. */
export function exportRows(db: Db, caller: Caller, type: ExportTable, after: number, upTo: number, limit: number) {
  const t = EXPORT_TABLE[type];
  const [where, args] = exportWindow(caller, type);
  return db.all<Record<string, unknown> & { r: number }>(
    `SELECT ${t.position} AS r, ${t.alias}.* FROM ${t.sql} WHERE ${where} ORDER BY ${t.position} LIMIT ?`, after, upTo, ...args, limit);
}

// ---- retention and legal holds ------------------------------------------------------------------

export type RecordType = "observation" | "claim";

const RECORD_TABLE: Record<RecordType, { table: string; id: string }> = {
  observation: { table: "observations", id: "observation_id" },
  claim: { table: "claims", id: "claim_id" },
};

/**
 * The source links touching these records: every (claim, observation) pair where the claim is one of
 * `claims` or the observation one of `observations` (the edges legal-hold coverage follows).
 */
export function sourceLinks(db: Db, records: { observations: string[]; claims: string[] }) {
  if (!records.observations.length && !records.claims.length) return [];
  return db.all<{ claim_id: string; observation_id: string }>(
    `SELECT claim_id, observation_id FROM claim_sources WHERE claim_id IN (SELECT value FROM json_each(?))
     UNION SELECT claim_id, observation_id FROM claim_sources WHERE observation_id IN (SELECT value FROM json_each(?))`,
    JSON.stringify(records.claims), JSON.stringify(records.observations));
}

/** One rule of a retention policy as the candidate scan applies it (cutoff: created before it). */
export interface RetentionMatch {
  cutoff: string;
  kinds?: string[];
  visibility?: string;
}

/**
 * One page of retention candidates of a type, oldest first after a (created_at, id) cursor: records
 * not yet excluded that some rule matches. Walks the (created_at, id) index, so a page costs its size.
 */
export function retentionCandidates(db: Db, type: RecordType, rules: RetentionMatch[], after: [string, string], limit: number) {
  if (!rules.length) return [];
  const t = RECORD_TABLE[type];
  const args: unknown[] = [];
  const any = rules.map((r) => {
    const parts = ["x.created_at < ?"];
    args.push(r.cutoff);
    if (r.kinds) { parts.push("x.kind IN (SELECT value FROM json_each(?))"); args.push(JSON.stringify(r.kinds)); }
    if (r.visibility) { parts.push("x.visibility = ?"); args.push(r.visibility); }
    return `(${parts.join(" AND ")})`;
  });
  const latest = rules.map((r) => r.cutoff).sort().at(-1)!;
  return db.all<{ id: string; created_at: string }>(
    `SELECT x.${t.id} AS id, x.created_at FROM ${t.table} x
      WHERE x.created_at < ? AND (x.created_at, x.${t.id}) > (?, ?) AND x.retention_excluded_at IS NULL AND (${any.join(" OR ")})
      ORDER BY x.created_at, x.${t.id} LIMIT ?`,
    latest, ...after, ...args, limit);
}

/** Exclude observations from retrieval (retention apply). */
export function excludeObservations(db: Db, ids: string[], at: string): Touched {
  if (!ids.length) return changed();
  db.run("UPDATE observations SET retention_excluded_at = ? WHERE observation_id IN (SELECT value FROM json_each(?)) AND retention_excluded_at IS NULL",
    at, JSON.stringify(ids));
  return changed(...ids);
}

/** Bring excluded observations back into retrieval (a legal hold covers them). */
export function restoreObservations(db: Db, ids: string[]): Touched {
  if (!ids.length) return changed();
  db.run("UPDATE observations SET retention_excluded_at = NULL WHERE observation_id IN (SELECT value FROM json_each(?))", JSON.stringify(ids));
  return changed(...ids);
}

/** Which of these records retention has excluded. */
export function excludedAmong(db: Db, records: { observations: string[]; claims: string[] }) {
  const of = (type: RecordType, ids: string[]) => ids.length ? db.all<{ id: string }>(
    `SELECT ${RECORD_TABLE[type].id} AS id FROM ${RECORD_TABLE[type].table}
      WHERE ${RECORD_TABLE[type].id} IN (SELECT value FROM json_each(?)) AND retention_excluded_at IS NOT NULL`,
    JSON.stringify(ids)).map((r) => r.id) : [];
  return { observations: of("observation", records.observations), claims: of("claim", records.claims) };
}

// ---- the vector index and enrichment (src/domains/indexing) --------------------------------------

export interface IndexableClaim {
  claim_id: string;
  statement: string;
  /** 1 when the claim may be retrieved at all: active or disputed, still valid, not excluded by retention. */
  current: number;
}

/** State of the named claims (missing ids are simply absent); `current` is retrievable's current rule at `now`. */
export function claimsForIndex(db: Db, ids: string[], now: string): IndexableClaim[] {
  if (!ids.length) return [];
  const [current, ...args] = retrievableRecord("c", { current: true }, now);
  return db.all<IndexableClaim>(
    `SELECT claim_id, statement, (${current}) AS current
       FROM claims c WHERE claim_id IN (SELECT value FROM json_each(?))`, ...args, JSON.stringify(ids));
}

/** Up to `limit` + 1 current claims (retrievable's current rule at `now`) after `afterSeq`, in write order (verify's pages). */
export function currentClaimsAfter(db: Db, afterSeq: number, limit: number, now: string): { seq: number; claim_id: string }[] {
  const [current, ...args] = retrievableRecord("c", { current: true }, now);
  return db.all(
    `SELECT seq, claim_id FROM claims c WHERE seq > ? AND ${current} ORDER BY seq LIMIT ?`, afterSeq, ...args, limit + 1);
}

export interface ObservationForEnrichment {
  seq: number;
  observation_id: string;
  subject_id: string;
  content: string | null;
}

/** Observations written after `afterSeq` (enrichment's ledger position), in write order. */
export function observationsAfter(db: Db, afterSeq: number, limit: number): ObservationForEnrichment[] {
  return db.all(
    `SELECT rowid AS seq, observation_id, subject_id, CASE WHEN purged_at IS NULL THEN content END AS content
       FROM observations WHERE rowid > ? ORDER BY rowid LIMIT ?`, afterSeq, limit);
}

export const observationsAfterCount = (db: Db, afterSeq: number): number =>
  db.first<{ n: number }>("SELECT count(*) AS n FROM observations WHERE rowid > ?", afterSeq)?.n ?? 0;

/**
 * How many of the claims the caller may retrieve were indexed with another model or dimension count
 * (all of them when no embedder is configured): GET /v1/models/config's drift for a caller who is not
 * an owner or admin, so that not even one bit of it depends on claims it cannot read.
 */
export function retrievableIndexedWithOtherModel(db: Db, caller: Caller, model: string | null, dimensions: number | null): number {
  const [rc, ...args] = retrievable(caller, "c");
  return db.first<{ n: number }>(
    `SELECT count(*) AS n FROM indexed_records i JOIN claims c ON c.claim_id = i.record_id
      WHERE (? IS NULL OR i.model <> ? OR i.dimensions <> ?) AND ${rc}`, model, model, dimensions, ...args)!.n;
}
