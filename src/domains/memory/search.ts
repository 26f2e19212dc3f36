// The memories list (GET /v1/memories) and its search (?q=): lexical search ranked by bm25 over the
// shared statistics, and paged through a short-lived result snapshot so that pages neither skip nor
// repeat under writes. Every read here applies retrievable with the list's filters (memoriesWhere).
//
// Candidates: the newest SEARCH_WINDOW claims holding every query word that pass the list's retrieval
// and filters (one bounded read, whatever the organization's size). Score: bm25 over the statistics
// of shared claims (records.ts sharedTermStats), so no score or order depends on a record the caller
// cannot read. Pages: the first page is answered directly; when more remain, the rest of the order
// (claim seqs only) is stored as a snapshot bound to the caller and the search, for SNAPSHOT_TTL_MS,
// and the cursor names the snapshot and a position in it. Each later page re-checks its items now
// (a claim the caller can no longer read, or that no longer passes the filters, is left out).
import { retrievable } from "../../access/retrieval";
import { clock } from "../../http/clock";
import { decodeCursor, encodeCursor } from "../../http/cursor";
import { ApiError } from "../../http/errors";
import { randomHex } from "../../http/ids";
import type { Db } from "../../sql/db";
import type { BackgroundJob } from "../../org/jobs";
import type { Caller } from "../../org/request";
import type { PhaseMark } from "./ranking";
import { bm25, matchAll, phraseStems, stemsOf, storedBm25, type StoredTerms } from "./fts";
import { queryTerms } from "../../text/unicode61";
import { type ClaimRow, sharedTermStats } from "./records";

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
  const [ok, ...args] = retrievable(
    caller,
    "c",
    f.status ? { valid: f.status === "active" || f.status === "disputed" } : { current: true },
  );
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
export function memoriesPage(
  db: Db,
  caller: Caller,
  f: MemoriesFilter,
  afterSeq: number | undefined,
  limit: number,
): ClaimRow[] {
  const [where, args] = memoriesWhere(caller, f);
  return db.all(
    `SELECT c.* FROM claims c WHERE ${where}${afterSeq !== undefined ? " AND c.seq < ?" : ""} ORDER BY c.seq DESC LIMIT ?`,
    ...args,
    ...(afterSeq !== undefined ? [afterSeq] : []),
    limit + 1,
  );
}

/**
 * Memories search's candidates (what ranking needs of them): the seq and stored terms of the newest
 * `window` claims matching an FTS5 MATCH expression that pass the list's retrieval and filters (applied
 * in the same statement, before anything is ranked). Newest first by rowid, so FTS5 walks its doclists
 * backwards and stops at the window. Read from claim_ranking (every column memoriesWhere names is
 * there): one narrow row per match, and of it only seq and stems (the seq is the claim's identity for
 * the rest of the search: AUTOINCREMENT, never reused). The few claims without stems get their
 * statement in a second read: a CASE for them in this one would cost every row.
 */
export function memoriesMatches(db: Db, caller: Caller, f: MemoriesFilter, match: string, window: number) {
  const [where, args] = memoriesWhere(caller, f);
  const rows = db.all<Pick<ClaimRow, "seq"> & StoredTerms>(
    `SELECT c.seq, c.stems FROM claims_fts f CROSS JOIN claim_ranking c ON c.seq = f.rowid
      WHERE claims_fts MATCH ? AND ${where} ORDER BY f.rowid DESC LIMIT ?`,
    match,
    ...args,
    window,
  );
  const bare = rows.filter((r) => r.stems == null);
  if (bare.length) {
    const statements = new Map(
      db
        .all<{ seq: number; statement: string }>(
          "SELECT seq, statement FROM claims WHERE seq IN (SELECT value FROM json_each(?))",
          JSON.stringify(bare.map((r) => r.seq)),
        )
        .map((r) => [r.seq, r.statement]),
    );
    for (const r of bare) r.statement = statements.get(r.seq) ?? null;
  }
  return rows;
}

/** The claims among `seqs` that still pass the memories list's retrieval and filters (any order). */
export function memoriesBySeqs(db: Db, caller: Caller, f: MemoriesFilter, seqs: number[]): ClaimRow[] {
  if (!seqs.length) return [];
  const [where, args] = memoriesWhere(caller, f);
  // CROSS JOIN keeps the planner on the seqs (one rowid lookup each), never a scan of claims_current.
  return db.all(
    `SELECT c.* FROM json_each(?) j CROSS JOIN claims c ON c.seq = j.value WHERE ${where}`,
    JSON.stringify(seqs),
    ...args,
  );
}

/**
 * The write position of a claim the caller may retrieve, for the memories cursor that names it: null
 * (the invalid-cursor answer) for a claim it cannot, exactly as for no claim, so a cursor never confirms
 * that someone else's claim exists or where it sits.
 */
export function claimSeqOf(db: Db, caller: Caller, claimId: string): number | null {
  const [ok, ...args] = retrievable(caller, "c");
  return (
    db.first<{ seq: number }>(`SELECT c.seq FROM claims c WHERE c.claim_id = ? AND ${ok}`, claimId, ...args)?.seq ??
    null
  );
}

/** Matches ranked per search: the newest this many. */
export const SEARCH_WINDOW = 1000;
/** How long a search's later pages stay stable (15 minutes, as docs/api-guide.md says). */
export const SNAPSHOT_TTL_MS = 15 * 60_000;

interface SnapshotCursor {
  s: string;
  o: number;
}

const isSnapshotCursor = (v: unknown): v is SnapshotCursor =>
  typeof v === "object" &&
  v !== null &&
  typeof (v as SnapshotCursor).s === "string" &&
  /^[0-9a-f]{32}$/.test((v as SnapshotCursor).s) &&
  Number.isInteger((v as SnapshotCursor).o) &&
  (v as SnapshotCursor).o >= 0 &&
  Object.keys(v).length === 2;

/** One answer for a cursor that is malformed, expired, another caller's or another search's: none is told apart. */
const badCursor = () =>
  new ApiError(
    "VALIDATION_ERROR",
    'Invalid field "after": not a cursor this service issued to you for this search, or it expired.',
  );

export interface SearchPage {
  page: ClaimRow[];
  has_more: boolean;
  next_cursor: string | null;
}

/** Search matches' claim seqs, best first: bm25 over the shared statistics, ties oldest first. */
function rankedMatches(db: Db, caller: Caller, f: MemoriesFilter, words: string[], mark: PhaseMark): number[] {
  const phrases = words.map(phraseStems);
  const stats = sharedTermStats(db, phrases.flat());
  mark("term statistics");
  const rows = memoriesMatches(db, caller, f, matchAll(words), SEARCH_WINDOW);
  mark("FTS read");
  const score = storedBm25(phrases, stats);
  const scored = rows.map((c) => ({
    seq: c.seq,
    score: c.stems != null ? score(c.stems) : bm25(stemsOf(c.statement ?? ""), phrases, stats),
  }));
  scored.sort((a, b) => b.score - a.score || a.seq - b.seq);
  return scored.map((x) => x.seq);
}

/** The rows of `seqs` that still pass, in the order of `seqs`. */
function rowsInOrder(db: Db, caller: Caller, f: MemoriesFilter, seqs: number[]): ClaimRow[] {
  const found = new Map(memoriesBySeqs(db, caller, f, seqs).map((c) => [c.seq, c]));
  return seqs.flatMap((seq) => found.get(seq) ?? []);
}

export function searchMemories(
  db: Db,
  caller: Caller,
  f: MemoriesFilter,
  q: string,
  limit: number,
  after: string | undefined,
  scheduleAlarm: (atMs: number) => void,
  mark: PhaseMark = () => {},
): SearchPage {
  const words = queryTerms(q);
  const queryKey = JSON.stringify([
    words,
    f.status ?? null,
    f.subject_id ?? null,
    f.project_id ?? null,
    f.visibility ?? null,
    f.kind ?? null,
  ]);
  if (after !== undefined) return laterPage(db, caller, f, queryKey, decodeCursor(after, isSnapshotCursor), limit);
  if (!words.length) return { page: [], has_more: false, next_cursor: null };
  const ranked = rankedMatches(db, caller, f, words, mark);
  mark("bm25 + sort");
  const page = rowsInOrder(db, caller, f, ranked.slice(0, limit));
  mark("first page read");
  if (ranked.length <= limit) return { page, has_more: false, next_cursor: null };
  const id = randomHex(16);
  const expiresAt = clock.nowMs() + SNAPSHOT_TTL_MS;
  db.run("DELETE FROM search_snapshots WHERE expires_at <= ?", clock.nowIso());
  db.run(
    "INSERT INTO search_snapshots (snapshot_id, principal_id, query_key, claim_seqs, expires_at) VALUES (?, ?, ?, ?, ?)",
    id,
    caller.principalId,
    queryKey,
    JSON.stringify(ranked.slice(limit)),
    new Date(expiresAt).toISOString(),
  );
  scheduleAlarm(expiresAt);
  mark("snapshot");
  return { page, has_more: true, next_cursor: encodeCursor({ s: id, o: 0 }) };
}

/** A later page: the snapshot's order from the cursor's position, each item re-checked now. */
function laterPage(
  db: Db,
  caller: Caller,
  f: MemoriesFilter,
  queryKey: string,
  cursor: SnapshotCursor,
  limit: number,
): SearchPage {
  const snap = db.first<{ claim_seqs: string }>(
    "SELECT claim_seqs FROM search_snapshots WHERE snapshot_id = ? AND principal_id = ? AND query_key = ? AND expires_at > ?",
    cursor.s,
    caller.principalId,
    queryKey,
    clock.nowIso(),
  );
  if (!snap) throw badCursor();
  const seqs: number[] = JSON.parse(snap.claim_seqs);
  const page: ClaimRow[] = [];
  let pos = cursor.o;
  let hasMore = false;
  while (pos < seqs.length) {
    const chunk = seqs.slice(pos, pos + limit + 1);
    const found = new Map(memoriesBySeqs(db, caller, f, chunk).map((c) => [c.seq, c]));
    let i = 0;
    for (; i < chunk.length; i++) {
      const c = found.get(chunk[i]);
      if (!c) continue;
      if (page.length === limit) {
        hasMore = true;
        break;
      }
      page.push(c);
    }
    if (hasMore) break;
    pos += chunk.length;
    if (page.length === limit) {
      // Whether anything after this page still passes decides has_more.
      hasMore = remaining(db, caller, f, seqs, pos);
      break;
    }
  }
  if (!hasMore) return { page, has_more: false, next_cursor: null };
  const next = seqs.indexOf(page[page.length - 1].seq, cursor.o) + 1;
  return { page, has_more: true, next_cursor: encodeCursor({ s: cursor.s, o: next }) };
}

/** Does any snapshot item from `pos` on still pass? */
function remaining(db: Db, caller: Caller, f: MemoriesFilter, seqs: number[], pos: number): boolean {
  for (let p = pos; p < seqs.length; p += 100)
    if (memoriesBySeqs(db, caller, f, seqs.slice(p, p + 100)).length) return true;
  return false;
}

/** Expired snapshots deleted per run of the sweep. */
export const SNAPSHOT_SWEEP_BATCH = 500;

/**
 * The search snapshot sweep, a named background job (src/jobs.ts): deletes expired snapshots in
 * bounded batches. Reads never depend on it having run (a cursor's snapshot is checked for expiry).
 */
export const searchSnapshotsJob: BackgroundJob = {
  name: "search_snapshots",
  run({ db }) {
    const now = clock.nowIso();
    const deleted = db.all(
      `DELETE FROM search_snapshots WHERE snapshot_id IN
         (SELECT snapshot_id FROM search_snapshots WHERE expires_at <= ? ORDER BY expires_at LIMIT ?) RETURNING 1`,
      now,
      SNAPSHOT_SWEEP_BATCH,
    ).length;
    if (deleted === SNAPSHOT_SWEEP_BATCH) return clock.nowMs();
    const next = db.first<{ at: string | null }>("SELECT min(expires_at) AS at FROM search_snapshots");
    return next?.at ? Date.parse(next.at) : null;
  },
  retryMs: () => 60_000,
};
