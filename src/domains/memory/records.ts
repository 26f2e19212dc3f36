// The memory records: the ONLY module with SQL on projects, observations, claims, claim_sources and
// claims_fts (test/records.test.ts fails on any other). Two halves:
//
// Writers (insertProject, insertObservation, insertClaim, changeClaim, tombstone) each return the ids
// they touched; the route hands them to commitWrite as `touched`, which turns them into outbox rows per
// topic (src/org/outbox.ts OUTBOX_TOPICS). Every claim state change bumps `version`.
//
// Readers go through ONE predicate: `retrievable(caller, alias, opts)` in SQL, `canRetrieve(caller, row,
// opts)` in JS. Who may read a record (visibility, authorship, grants) is decided by the authorization
// module (src/access/policy.ts: readableWhere/canRead), which also decides events and other
// non-record reads; this module composes it with what makes a memory record retrievable at all
// (validity: a claim's status and valid_to). Retention exclusion and workspace roles are added to
// retrievable/canRetrieve and nowhere else: every read of these tables below is built on them.
import { canRead, readableWhere } from "../../access/policy";
import { clock } from "../../http/clock";
import type { Db } from "../../org/db";
import type { Touched } from "../../org/outbox";
import type { Caller } from "../../org/request";

export interface ProjectRow {
  project_id: string;
  reference: string;
  created_by: string;
  created_at: string;
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
}

/** A memory record as the authorization module sees it. */
export const guarded = (r: { visibility: string; author_id: string; subject_id: string; project_id: string | null }) =>
  ({ visibility: r.visibility, owner: r.author_id, subject_id: r.subject_id, project_id: r.project_id });

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
  const parts = [readable];
  if (opts.current) parts.push(`${alias}.status IN ('active', 'disputed')`);
  if (opts.current || opts.valid) {
    parts.push(`(${alias}.valid_to IS NULL OR ${alias}.valid_to > ?)`);
    args.push(clock.nowIso());
  }
  return [parts.join(" AND "), ...args];
}

type RecordLike = { visibility: string; author_id: string; subject_id: string; project_id: string | null };

/** retrievable, for a row already read. */
export function canRetrieve(caller: Caller, r: RecordLike & { status?: string; valid_to?: string | null }, opts: Retrieval = {}): boolean {
  if (!canRead(caller, guarded(r))) return false;
  const claim = { status: r.status ?? "", valid_to: r.valid_to ?? null };
  if (opts.current && !isCurrentClaim(claim)) return false;
  if (opts.valid && !isCurrent(claim)) return false;
  return true;
}

// ---- projects -----------------------------------------------------------------------------------

export const getProject = (db: Db, projectId: string) =>
  db.first<ProjectRow>("SELECT * FROM projects WHERE project_id = ?", projectId);

export const projectByReference = (db: Db, reference: string) =>
  db.first<ProjectRow>("SELECT * FROM projects WHERE reference = ?", reference);

export function insertProject(db: Db, p: ProjectRow): Touched {
  db.run("INSERT INTO projects (project_id, reference, created_by, created_at) VALUES (?, ?, ?, ?)",
    p.project_id, p.reference, p.created_by, p.created_at);
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
}

export const observationFacets = (db: Db, ids: string[]) =>
  db.all<RecordFacets>(
    "SELECT observation_id AS id, kind, subject_id, trust, visibility FROM observations WHERE observation_id IN (SELECT value FROM json_each(?))",
    JSON.stringify(ids));

export const claimFacets = (db: Db, ids: string[]) =>
  db.all<RecordFacets>(
    "SELECT claim_id AS id, kind, subject_id, trust, visibility FROM claims WHERE claim_id IN (SELECT value FROM json_each(?))",
    JSON.stringify(ids));

/** A new observation, or a restored one (import) with its own id, timestamps and tombstone. */
export function insertObservation(db: Db, o: ObservationRow): Touched {
  db.run(
    `INSERT INTO observations (observation_id, subject_id, project_id, kind, content, content_hash, source_type,
       source_ref, trust, visibility, author_id, created_at, purged_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    o.observation_id, o.subject_id, o.project_id, o.kind, o.content, o.content_hash, o.source_type,
    o.source_ref, o.trust, o.visibility, o.author_id, o.created_at, o.purged_at,
  );
  return created(o.observation_id);
}

/** Tombstone an observation: content gone; id, hash and provenance kept. */
export function tombstone(db: Db, observationId: string): Touched {
  db.run("UPDATE observations SET content = NULL, purged_at = ? WHERE observation_id = ? AND purged_at IS NULL",
    clock.nowIso(), observationId);
  return changed(observationId);
}

// ---- claims -------------------------------------------------------------------------------------

export const getClaim = (db: Db, id: string) => db.first<ClaimRow>("SELECT * FROM claims WHERE claim_id = ?", id);

export type NewClaim = Omit<ClaimRow, "seq">;

/** A claim with its sources in order, and its full-text index entry. Also reports its write position (seq). */
export function insertClaim(db: Db, c: NewClaim, sources: { observation_id: string; relation: string }[]): Touched & { seq: number } {
  const { seq } = db.first<{ seq: number }>(
    `INSERT INTO claims (claim_id, subject_id, project_id, kind, statement, status, visibility, trust, version,
       valid_from, valid_to, superseded_by, disputes, author_id, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`,
    c.claim_id, c.subject_id, c.project_id, c.kind, c.statement, c.status, c.visibility, c.trust, c.version,
    c.valid_from, c.valid_to, c.superseded_by, c.disputes, c.author_id, c.created_at, c.updated_at,
  )!;
  db.run("INSERT INTO claims_fts (rowid, statement) VALUES (?, ?)", seq, c.statement);
  sources.forEach((s, position) =>
    db.run("INSERT INTO claim_sources (claim_id, position, observation_id, relation) VALUES (?, ?, ?, ?)",
      c.claim_id, position, s.observation_id, s.relation));
  return { ...created(c.claim_id), seq };
}

export type ClaimChange = Partial<Pick<ClaimRow, "status" | "valid_to" | "superseded_by">>;

/** A claim's state change (status move, expiry): every change bumps its version. */
export function changeClaim(db: Db, claimId: string, change: ClaimChange): Touched {
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
  trust: string;
  author_id: string;
  /** Trust of each observation the claim names with relation `supports`. */
  supporting_trusts: string[];
}

/** Current facts of many claims in one statement (channel compile checks every release at once). */
export function claimFacts(db: Db, claimIds: string[]): Map<string, ClaimFacts> {
  const out = new Map<string, ClaimFacts>();
  if (!claimIds.length) return out;
  for (const c of db.all<Omit<ClaimFacts, "supporting_trusts"> & { supporting: string | null }>(
    `SELECT c.claim_id, c.version, c.status, c.valid_to, c.visibility, c.trust, c.author_id,
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
  /** An FTS5 MATCH expression: search (ranked) instead of list (newest first). */
  match?: string;
  /** Search: the last [rank, seq] seen; list: [_, seq]. */
  after?: [number, number];
  limit: number;
}

/**
 * One page (limit + 1 rows, to tell has_more) of GET /v1/memories. Without a status: current claims;
 * active or disputed: those still valid; superseded or revoked lists are history. Retrieval, validity
 * and filters sit in the same WHERE as the match: applied before ranking and paging.
 */
export function memoriesPage(db: Db, caller: Caller, f: MemoriesFilter): (ClaimRow & { rank: number })[] {
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
  if (f.match !== undefined) {
    if (f.after) {
      const [rank, seq] = f.after;
      where.push("(f.rank > ? OR (f.rank = ? AND c.seq > ?))");
      args.push(rank, rank, seq);
    }
    return db.all(
      `SELECT c.*, f.rank AS rank FROM claims_fts f JOIN claims c ON c.seq = f.rowid
        WHERE claims_fts MATCH ? AND ${where.join(" AND ")} ORDER BY f.rank, c.seq LIMIT ?`,
      f.match, ...args, f.limit + 1);
  }
  if (f.after) {
    where.push("c.seq < ?");
    args.push(f.after[1]);
  }
  return db.all(`SELECT c.*, 0 AS rank FROM claims c WHERE ${where.join(" AND ")} ORDER BY c.seq DESC LIMIT ?`, ...args, f.limit + 1);
}

// ---- compile ranking's reads ---------------------------------------------------------------------

/** A compile candidate: a current, retrievable claim with its bm25 rank (lexical hits) and feedback score. */
export type CandidateRow = ClaimRow & { rank: number | null; feedback: number | null };

const candidateCols = "c.*, fb.score AS feedback";
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

/** The best `limit` lexical matches of an FTS5 MATCH expression, best first. */
export function lexicalCandidates(db: Db, caller: Caller, kinds: string[] | undefined, match: string, limit: number): CandidateRow[] {
  const [where, args] = candidateWhere(caller, kinds);
  return db.all<CandidateRow>(
    `SELECT ${candidateCols}, f.rank AS rank FROM claims_fts f JOIN claims c ON c.seq = f.rowid ${joinFeedback}
      WHERE claims_fts MATCH ? AND ${where} ORDER BY f.rank LIMIT ?`,
    match, ...args, limit);
}

/** The newest `limit` candidates about a subject or project (scope null: about anything). */
export function scopedCandidates(db: Db, caller: Caller, kinds: string[] | undefined,
  scope: { column: "subject_id" | "project_id"; value: string } | null, limit: number): CandidateRow[] {
  const [where, args] = candidateWhere(caller, kinds);
  return db.all<CandidateRow>(
    `SELECT ${candidateCols}, NULL AS rank FROM claims c ${joinFeedback} WHERE ${scope ? `c.${scope.column} = ?` : "1 = ?"} AND ${where}
      ORDER BY c.seq DESC LIMIT ?`,
    scope ? scope.value : 1, ...args, limit);
}

/** Candidates at the given write positions (seq). */
export function candidatesAt(db: Db, caller: Caller, kinds: string[] | undefined, seqs: number[]): CandidateRow[] {
  const [where, args] = candidateWhere(caller, kinds);
  return db.all<CandidateRow>(
    `SELECT ${candidateCols}, NULL AS rank FROM claims c ${joinFeedback} WHERE c.seq IN (SELECT value FROM json_each(?)) AND ${where}`,
    JSON.stringify(seqs), ...args);
}

/** Claims ever written (the idf's N: write positions, so it is one index lookup, not a count). */
export const claimsWritten = (db: Db) => db.first<{ n: number | null }>("SELECT max(seq) AS n FROM claims")?.n ?? 0;

/** Claims whose full-text entry holds a quoted term. */
export const claimsHolding = (db: Db, term: string) =>
  db.first<{ n: number }>("SELECT count(*) AS n FROM claims_fts WHERE claims_fts MATCH ?", `"${term}"`)?.n ?? 0;

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

/** Subjects of retrievable records, in order, after a subject id. */
export function retrievableSubjects(db: Db, caller: Caller, after: string, limit: number) {
  const [ro, ...roArgs] = retrievable(caller, "o");
  const [rc, ...rcArgs] = retrievable(caller, "c");
  return db.all<{ subject_id: string }>(
    `SELECT subject_id FROM (
       SELECT o.subject_id FROM observations o WHERE o.subject_id > ? AND ${ro}
       UNION SELECT c.subject_id FROM claims c WHERE c.subject_id > ? AND ${rc})
     ORDER BY subject_id LIMIT ?`,
    after, ...roArgs, after, ...rcArgs, limit + 1);
}

// ---- export -------------------------------------------------------------------------------------

export type ExportTable = "projects" | "observations" | "claims";

const EXPORT_TABLE: Record<ExportTable, { sql: string; alias: string; position: string }> = {
  projects: { sql: "projects p", alias: "p", position: "p.rowid" },
  observations: { sql: "observations o", alias: "o", position: "o.rowid" },
  claims: { sql: "claims c", alias: "c", position: "c.seq" },
};

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

// ---- the vector index and enrichment (src/domains/indexing) --------------------------------------

export interface IndexableClaim {
  claim_id: string;
  statement: string;
  /** 1 when the claim may be retrieved at all: active or disputed, and still valid. */
  current: number;
}

/** State of the named claims (missing ids are simply absent). */
export function claimsForIndex(db: Db, ids: string[], now: string): IndexableClaim[] {
  if (!ids.length) return [];
  return db.all<IndexableClaim>(
    `SELECT claim_id, statement,
            (status IN ('active', 'disputed') AND (valid_to IS NULL OR valid_to > ?)) AS current
       FROM claims WHERE claim_id IN (SELECT value FROM json_each(?))`, now, JSON.stringify(ids));
}

/** Up to `limit` + 1 current claims after `afterSeq`, in write order (verify's pages). */
export function currentClaimsAfter(db: Db, afterSeq: number, limit: number, now: string): { seq: number; claim_id: string }[] {
  return db.all(
    `SELECT seq, claim_id FROM claims
      WHERE seq > ? AND status IN ('active', 'disputed') AND (valid_to IS NULL OR valid_to > ?)
      ORDER BY seq LIMIT ?`, afterSeq, now, limit + 1);
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

/** Write positions of the named claims (no authorization: the caller passes them to a retrieval-checked read). */
export function claimSeqs(db: Db, ids: string[]): number[] {
  return db.all<{ seq: number }>("SELECT seq FROM claims WHERE claim_id IN (SELECT value FROM json_each(?)) ORDER BY seq", JSON.stringify(ids))
    .map((r) => r.seq);
}
