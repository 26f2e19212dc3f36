// Compile's reads: every candidate a pack may hold is read here, through retrievable (current claims)
// and compile's filters (subject_id, project_id, kinds: as GET /v1/memories filters) in the statement
// that reads it, and scored by the pure functions of ./ranking. Candidates are authorized, current
// claims that pass the filters (applied in SQL before anything is ranked): with a query, those matching
// any informative query word (FTS5, stopwords left out; at most LEXICAL_READS read, whatever the
// organization's size), the neighbours of the best matches that hold only common words, and authorized
// vector hits; without one, the newest claims. With a query, the relevance floor then keeps only
// candidates holding a query word or at least the embedder's similarity floor from the query. Context
// counts only claims the caller may read (readableNeighbours, readableWithin), so no score depends on a
// record it cannot read.
import { retrievable, retrievableWays } from "../../access/retrieval";
import { clock } from "../../http/clock";
import { type Db, fromClause, list, type Sql, sql } from "../../sql/db";
import type { Caller } from "../../org/request";
import { bm25, matchAll, matchAny, phraseStems, rankingTerms, type StoredTerms, type TermStats } from "./fts";
import {
  CANDIDATE_LIMIT,
  CONTEXT_SOURCES,
  type CompileFilters,
  LEXICAL_CANDIDATES,
  LEXICAL_READS,
  type Neighbours,
  type PhaseMark,
  type Stemmed,
  WEIGHTS,
  type WeightedTerm,
  contextPairs,
  holdsAny,
  lexicalScores,
  pack,
  scoreCandidates,
  selectingTerms,
  stemsPerCompile,
  weightTerms,
} from "./ranking";
import { type ClaimRow, sharedTermStats } from "./records";
import { tokensOfBytes } from "./tokens";

// ---- the candidate reads -------------------------------------------------------------------------

/**
 * A compile candidate as ranking reads it: a current, retrievable claim's columns that scoring uses,
 * its feedback score, its statement's size in UTF-8 bytes (for its tokens), rank (set by ranking: bm25
 * of lexical hits) and, where ranking needs them, its stored terms. Lexical and positional candidates
 * are read from claim_ranking (one narrow row each), scoped ones from claims through its subject and
 * project indexes; only the few packed ones are read whole (`claimsAt`).
 */
export type CandidateRow = Pick<
  ClaimRow,
  "seq" | "claim_id" | "subject_id" | "project_id" | "kind" | "trust" | "status" | "created_at" | "occurred_at"
> & { rank: number | null; feedback: number | null; bytes: number } & Partial<StoredTerms>;

/** StoredTerms of claim_ranking aliased c (a claim without stems brings its statement). */
const storedTermsCols = sql`c.stems, CASE WHEN c.stems IS NULL THEN (SELECT statement FROM claims WHERE seq = c.seq) END AS statement`;
const scoringCols = sql`c.seq, c.claim_id, c.subject_id, c.project_id, c.kind, c.trust, c.status, c.created_at, c.occurred_at, fb.score AS feedback, NULL AS rank`;
/** Of claims aliased c. */
const candidateCols = sql`${scoringCols}, length(CAST(c.statement AS BLOB)) AS bytes`;
/** Of claim_ranking aliased c, with the stored terms. */
const rankingCandidateCols = sql`${scoringCols}, c.bytes, ${storedTermsCols}`;
const joinFeedback = sql`LEFT JOIN claim_feedback_score fb ON fb.claim_id = c.claim_id`;

/** Compile's filters: only claims about this subject, in this project, of these kinds. */
export type CandidateFilter = Pick<CompileFilters, "subject_id" | "project_id" | "kinds">;

/**
 * Retrieval (current claims only) and compile's filters, applied to every way a candidate comes in.
 * The filters are GET /v1/memories' (search.ts memoriesWhere): `subject_id` and `project_id` by
 * equality, `kinds` as that list's `kind` for each kind named.
 */
function candidateWhere(caller: Caller, f: CandidateFilter): Sql {
  const kinds = f.kinds?.length ? sql` AND c.kind IN ${list(f.kinds)}` : sql``;
  const subject = f.subject_id !== undefined ? sql` AND c.subject_id = ${f.subject_id}` : sql``;
  const project = f.project_id !== undefined ? sql` AND c.project_id = ${f.project_id}` : sql``;
  return sql`${fromClause(retrievable(caller, "c", { current: true }))}${kinds}${subject}${project}`;
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
function lexicalMatches(
  db: Db,
  caller: Caller,
  f: CandidateFilter,
  match: string,
  limit: number,
  skip: number[] = [],
): CandidateRow[] {
  return db.all<CandidateRow>(sql`SELECT ${rankingCandidateCols} FROM claims_fts f CROSS JOIN claim_ranking c ON c.seq = f.rowid ${joinFeedback}
    WHERE claims_fts MATCH ${match} AND f.rowid NOT IN ${list(skip)} AND ${candidateWhere(caller, f)} ORDER BY f.rowid DESC LIMIT ${limit}`);
}

/** The newest `limit` candidates (a compile without a query ranks these). */
function newestCandidates(db: Db, caller: Caller, f: CandidateFilter, limit: number): CandidateRow[] {
  return db.all<CandidateRow>(
    sql`SELECT ${candidateCols} FROM claims c ${joinFeedback} WHERE ${candidateWhere(caller, f)} ORDER BY c.seq DESC LIMIT ${limit}`,
  );
}

/**
 * Candidate rows of the claims among `ids` that pass compile's candidate predicate (retrievable,
 * current, of the kinds), in write order, with `extra` columns. The id → seq step reads only claims'
 * claim_id index (it holds seq); the predicate and scoring read the narrow claim_ranking row.
 */
function candidateRowsWithIds<T extends CandidateRow>(
  db: Db,
  caller: Caller,
  f: CandidateFilter,
  ids: string[],
  extra = sql``,
): T[] {
  if (!ids.length) return [];
  return db.all<T>(sql`SELECT ${rankingCandidateCols}${extra} FROM json_each(${JSON.stringify(ids)}) j CROSS JOIN claims k ON k.claim_id = j.value
    CROSS JOIN claim_ranking c ON c.seq = k.seq ${joinFeedback} WHERE ${candidateWhere(caller, f)} ORDER BY c.seq`);
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
  /** The filters it was read under (filtersKey). */
  filters: string;
  stamp: number;
  /** Admitted ids' candidate rows, with their valid_to (not part of the row). */
  rows: Map<string, { row: CandidateRow; validTo: string | null }>;
}

/** Writes on this object's SQLite connection so far (INSERT, UPDATE, DELETE rows, triggers included). */
const writesSoFar = (db: Db) => db.first<{ n: number }>("SELECT total_changes() AS n")!.n;

const filtersKey = (f: CandidateFilter) =>
  JSON.stringify([f.kinds?.length ? f.kinds : null, f.subject_id ?? null, f.project_id ?? null]);

/** A read-ahead for this caller and filters, stamped now (before any of its rows is read). */
export const readAhead = (db: Db, caller: Caller, f: CandidateFilter): CandidatesReadAhead => ({
  caller,
  filters: filtersKey(f),
  stamp: writesSoFar(db),
  rows: new Map(),
});

/**
 * The claim ids among `ids` that could be compile candidates for the caller (vector kNN filters
 * through it before taking its top k), keeping their candidate rows in `ahead` so that compile's
 * re-authorization can take them instead of reading every hit again.
 */
export function candidateRowsAmong(
  db: Db,
  caller: Caller,
  f: CandidateFilter,
  ids: string[],
  ahead: CandidatesReadAhead,
): Set<string> {
  const rows = candidateRowsWithIds<CandidateRow & { valid_to: string | null }>(
    db,
    caller,
    f,
    ids,
    sql`, c.valid_to AS valid_to`,
  );
  // The row without valid_to, built like every other candidate row (same keys in the same order).
  for (const { valid_to: validTo, ...row } of rows) ahead.rows.set(row.claim_id, { row, validTo });
  return new Set(rows.map((r) => r.claim_id));
}

/** Candidates at the given write positions (seq), with their stored terms. */
function candidatesAt(db: Db, caller: Caller, f: CandidateFilter, seqs: number[]): CandidateRow[] {
  return db.all<CandidateRow>(sql`SELECT ${rankingCandidateCols} FROM json_each(${JSON.stringify(seqs)}) j
    CROSS JOIN claim_ranking c ON c.seq = j.value ${joinFeedback} WHERE ${candidateWhere(caller, f)}`);
}

/**
 * Candidates with the given claim ids, in write order, with their stored terms (vector hits). With
 * `ahead` (their rows read before the transaction) and no write since, those rows are taken, each kept
 * only if still valid now: what this read would return, without reading (CandidatesReadAhead). An id
 * without a carried row (never admitted by the accept: a hit always is) is read.
 */
function candidatesWithIds(
  db: Db,
  caller: Caller,
  f: CandidateFilter,
  ids: string[],
  ahead?: CandidatesReadAhead,
): CandidateRow[] {
  if (!ahead || ahead.caller !== caller || ahead.filters !== filtersKey(f) || writesSoFar(db) !== ahead.stamp)
    return candidateRowsWithIds(db, caller, f, ids);
  const now = clock.nowIso();
  const out = ids.flatMap((id) => {
    const r = ahead.rows.get(id);
    return r && (r.validTo == null || r.validTo > now) ? [{ ...r.row }] : [];
  });
  out.push(
    ...candidateRowsWithIds(
      db,
      caller,
      f,
      ids.filter((id) => !ahead.rows.has(id)),
    ),
  );
  return out.sort((a, b) => a.seq - b.seq);
}

/** The candidates at the given write positions, whole (what compile returns of the packed ones). */
function claimsAt(db: Db, caller: Caller, f: CandidateFilter, seqs: number[]): ClaimRow[] {
  if (!seqs.length) return [];
  return db.all<ClaimRow>(
    sql`SELECT c.* FROM json_each(${JSON.stringify(seqs)}) j CROSS JOIN claims c ON c.seq = j.value WHERE ${candidateWhere(caller, f)}`,
  );
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
function walkEachWay(
  db: Db,
  caller: Caller,
  over: unknown[],
  n: number,
  walks: ((ok: string) => string)[],
): number[][][][] {
  const found = over.map(() => walks.map(() => [] as number[][]));
  const at = JSON.stringify(over);
  let cols: string[] = [];
  let args: unknown[] = [];
  const run = () => {
    const rows = db.all<Record<string, unknown>>(
      `SELECT h.key AS i, ${cols.join(", ")} FROM json_each(?) h`,
      ...args,
      at,
    );
    for (const r of rows)
      cols.forEach((_, k) => found[r.i as number][k % walks.length].push(JSON.parse(r[`w${k}`] as string)));
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
export function readableNeighbours(
  db: Db,
  caller: Caller,
  seqs: number[],
  n: number,
): Map<number, { before: number[]; after: number[] }> {
  const out = new Map<number, { before: number[]; after: number[] }>();
  if (!seqs.length) return out;
  const side = (cmp: "<" | ">", order: "DESC" | "ASC") => (ok: string) =>
    `(SELECT json_group_array(seq) FROM (SELECT c.seq FROM claim_ranking c WHERE c.seq ${cmp} h.value AND ${ok} ORDER BY c.seq ${order} LIMIT ?))`;
  const found = walkEachWay(db, caller, seqs, n, [side("<", "DESC"), side(">", "ASC")]);
  seqs.forEach((seq, i) => {
    if (!out.has(seq))
      out.set(seq, { before: firstOfUnion(found[i][0], n, "desc"), after: firstOfUnion(found[i][1], n, "asc") });
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
  const found = walkEachWay(db, caller, spans, n, [
    (ok) => `(SELECT json_group_array(seq) FROM (SELECT c.seq FROM claim_ranking c
      WHERE c.seq > json_extract(h.value, '$[0]') AND c.seq < json_extract(h.value, '$[1]') AND ${ok} ORDER BY c.seq LIMIT ?))`,
  ]);
  return new Map(spans.map(([a], i) => [a, firstOfUnion(found[i][0], n, "asc")]));
}

// ---- from the reads to a pack -------------------------------------------------------------------

/** A ranked candidate: the columns ranking read (CandidateRow), not the whole claim. */
export interface RankedClaim {
  claim: CandidateRow;
  score: number;
  tokens: number;
}

type Candidate = CandidateRow;

/**
 * Lexical candidates: at most LEXICAL_READS matches read in all, whatever the organization's size.
 * First the newest readable claims holding every selecting word (of those some team claim holds, when
 * there are two or more): bm25 and coverage rank them above claims holding fewer, and when every word
 * is common (two names in a conversation) each word's newest matches leave the old ones out. Then the
 * selecting terms take turns with what is left, rarest first (by the shared statistics), each reading
 * its newest readable matches up to an equal share; a term with fewer matches leaves the rest of its
 * share to the commoner ones. The union is scored by bm25 over the shared statistics (`rank`, higher
 * is better) and the best LEXICAL_CANDIDATES kept. Where every selecting term has fewer matches than
 * its share (small organizations), this is every match.
 */
function lexicalSelection(
  db: Db,
  caller: Caller,
  f: CompileFilters,
  selecting: WeightedTerm[],
  stats: TermStats,
  stemsOf: (c: Stemmed) => string[],
): Candidate[] {
  const matches = new Map<number, Candidate>();
  // Each read passes over the matches read before it, so every row read is a new candidate.
  const read = (match: string, limit: number) => {
    const rows = lexicalMatches(db, caller, f, match, limit, [...matches.keys()]);
    for (const row of rows) matches.set(row.seq, row);
    return rows.length;
  };
  let left = LEXICAL_READS;
  const takeTurns = (terms: WeightedTerm[], waiting: number) =>
    terms.forEach((t, i) => {
      const share = Math.floor(left / (waiting - i));
      if (share > 0) left -= read(matchAny([t.term]), share);
    });
  const order = [...selecting].sort((a, b) => a.held - b.held || (a.term < b.term ? -1 : 1));
  // Words no team claim holds (only claims the caller reads privately or in a workspace can) are the
  // rarest: they take their turns first, before the AND read of the shared words can use up the reads.
  const unshared = order.filter((t) => t.held === 0);
  const shared = order.filter((t) => t.held > 0);
  takeTurns(unshared, order.length);
  if (shared.length >= 2) left -= read(matchAll(shared.map((t) => t.term)), left);
  takeTurns(shared, shared.length);
  const phrases = selecting.map((t) => t.stems);
  const scored = [...matches.values()]
    .map((c) => ({ seq: c.seq, rank: bm25(stemsOf(c), phrases, stats) }))
    .filter((c) => c.rank > 0);
  scored.sort((a, b) => b.rank - a.rank || b.seq - a.seq);
  return scored.slice(0, LEXICAL_CANDIDATES).map(({ seq, rank }) => ({ ...matches.get(seq)!, rank }));
}

/**
 * Candidates before vectors: with a query, its lexical matches; without one (no word in it), the
 * newest claims that pass the filters.
 */
function selectCandidates(
  db: Db,
  caller: Caller,
  f: CompileFilters,
  lexical: Candidate[],
  hasTerms: boolean,
): Candidate[] {
  return hasTerms ? [...lexical] : newestCandidates(db, caller, f, CANDIDATE_LIMIT);
}

/**
 * Claims within `contextSpan` of the best matches that candidate selection left out (they hold only
 * words too common to select): found by write order as the caller sees it, under the same filters,
 * kept when they hold a query word. They can then rank as context of the match next to them, as they
 * would had every word selected candidates.
 */
function commonWordNeighbours(
  db: Db,
  caller: Caller,
  f: CompileFilters,
  best: Candidate[],
  present: Set<number>,
  terms: WeightedTerm[],
  stems: (c: Candidate) => string[],
): Candidate[] {
  const around = readableNeighbours(
    db,
    caller,
    best.map((c) => c.seq),
    WEIGHTS.contextSpan,
  );
  const seqs = [...new Set([...around.values()].flatMap((n) => [...n.before, ...n.after]))].filter(
    (s) => !present.has(s),
  );
  if (!seqs.length) return [];
  return candidatesAt(
    db,
    caller,
    f,
    seqs.sort((a, b) => a - b),
  )
    .filter((c) => holdsAny(stems(c), terms))
    .sort((a, b) => a.seq - b.seq);
}

// ---- score ---------------------------------------------------------------------------------------

/**
 * Pairs of matching claims that are context of each other, with their distance: same subject, written
 * within the window, and at most `contextSpan` apart by write order as the caller sees it (1 + the
 * claims it may read written between them; claims it cannot read are skipped, so they move no score).
 * Every matching claim is readable, so only claims at most `contextSpan` apart in the matching list
 * itself can qualify; SQL counts the readable claims between those few pairs.
 */
function contextNeighbours(db: Db, caller: Caller, matching: Candidate[]): Neighbours {
  return contextPairs(matching, (asked) => {
    // Readable claims between a and b, counted up to contextSpan: those of the first contextSpan readable
    // claims after a, below the farthest b asked with a, that lie before b. One walk per distinct a
    // (pairs share their first claim), not one per pair, and none past its farthest b.
    const farthest = new Map<number, number>();
    for (const [a, b] of asked) farthest.set(a, Math.max(b, farthest.get(a) ?? b));
    const within = readableWithin(db, caller, [...farthest], WEIGHTS.contextSpan);
    return asked.map(([a, b]) => within.get(a)!.filter((s) => s < b).length);
  });
}

/**
 * Vector hits join the candidates through the same retrieval predicate as every other way in (by
 * write position), so a hit the caller may not read, or that is no longer current, is dropped before
 * it can score (from the rows the vector query's accept read, when nothing was written since:
 * candidatesWithIds). Returns the authorized hits' similarities by seq (what the vector score reads).
 */
function vectorCandidates(
  db: Db,
  caller: Caller,
  f: CompileFilters,
  vectors: VectorSimilarities,
  candidates: Candidate[],
): Map<number, number> {
  const have = new Set(candidates.map((c) => c.claim_id));
  const missing = [...vectors.similarities.keys()].filter((id) => !have.has(id));
  if (missing.length) for (const c of candidatesWithIds(db, caller, f, missing, vectors.ahead)) candidates.push(c);
  const similarity = new Map<number, number>();
  for (const c of candidates) {
    const s = vectors.similarities.get(c.claim_id);
    if (s !== undefined) similarity.set(c.seq, s);
  }
  return similarity;
}

/** The query's vector hits (vector-candidates.ts vectorHits), as ranking takes them. */
export interface VectorSimilarities {
  /** Each hit's cosine similarity to the query, by claim id. */
  similarities: Map<string, number>;
  /** The hits' candidate rows as the vector query's accept read them, if it did: taken only when still current (CandidatesReadAhead). */
  ahead?: CandidatesReadAhead;
  /**
   * The embedder's relevance floor (config.ts similarityFloor): a hit at least this similar to the
   * query is evidence of relevance on its own. null or absent: no hit is (vectors only re-rank claims
   * that hold a query word).
   */
  floor?: number | null;
}

/** A compile's ranking: the candidates that passed the relevance floor, best first, and how many it removed. */
export interface Ranking {
  ranked: RankedClaim[];
  /** Candidates the floor removed (all of them claims the caller may retrieve under the filters). */
  floorRemoved: number;
}

/**
 * Rank a compile's candidates. `vectors`: the query's nearest claim ids with their cosine similarity
 * (hybrid compile), if any. With a query (one that has a word), a candidate is kept only with evidence
 * of relevance: it holds a query word (a common one too: a vector hit that holds only the name every
 * claim of a conversation holds is as relevant as the common-word neighbours that come in lexically),
 * or its vector similarity is at least `vectors.floor`. Without one, every candidate is kept.
 */
export function rankRelevant(
  db: Db,
  caller: Caller,
  f: CompileFilters,
  mark: PhaseMark = () => {},
  vectors?: VectorSimilarities,
): Ranking {
  const words = rankingTerms(f.query);
  // Filtered to one subject, words weigh by how rare they are among that subject's shared claims.
  const stats = sharedTermStats(db, words.flatMap(phraseStems), f.subject_id);
  mark("term statistics");
  const terms = weightTerms(stats, words);
  const selecting = selectingTerms(terms, stats.rows);
  const stems = stemsPerCompile();
  // Candidates.
  const lexicalHits = selecting.length ? lexicalSelection(db, caller, f, selecting, stats, stems) : [];
  mark("lexical candidates (read + bm25)");
  const candidates = selectCandidates(db, caller, f, lexicalHits, words.length > 0);
  mark("scoped candidates");
  const lexical = lexicalScores(lexicalHits, terms, stems);
  if (selecting.length < terms.length && lexicalHits.length) {
    const top = [...lexicalHits]
      .sort((a, b) => lexical.get(b.seq)! - lexical.get(a.seq)! || b.seq - a.seq)
      .slice(0, CONTEXT_SOURCES);
    for (const c of commonWordNeighbours(db, caller, f, top, new Set(candidates.map((x) => x.seq)), terms, stems)) {
      candidates.push(c);
      lexical.set(c.seq, 0);
    }
  }
  mark("coverage + common-word neighbours");
  const pairs = contextNeighbours(
    db,
    caller,
    candidates.filter((c) => lexical.has(c.seq)),
  );
  mark("context neighbours");
  // Vector hits join last, so the lexical steps above see exactly what they see without vectors; the
  // best similarity is taken over authorized hits only, so no score moves with an unreadable record.
  const similarity = vectors?.similarities.size
    ? vectorCandidates(db, caller, f, vectors, candidates)
    : new Map<number, number>();
  const bestSimilarity = Math.max(0, ...similarity.values());
  const vectorScore = (c: Candidate) =>
    bestSimilarity > 0 ? Math.max(0, similarity.get(c.seq) ?? 0) / bestSimilarity : 0;
  mark("vector candidates");
  const floor = vectors?.floor ?? null;
  const relevant =
    words.length === 0
      ? candidates
      : candidates.filter(
          (c) =>
            lexical.has(c.seq) ||
            holdsAny(stems(c), terms) ||
            (floor !== null && (similarity.get(c.seq) ?? -Infinity) >= floor),
        );
  const ranked = scoreCandidates(
    relevant,
    lexical,
    lexicalHits,
    pairs,
    f,
    clock.nowMs(),
    (c) => tokensOfBytes(c.bytes),
    vectorScore,
  ).map((r) => ({ claim: r.candidate, score: r.score, tokens: r.tokens }));
  mark("score + sort");
  return { ranked, floorRemoved: candidates.length - relevant.length };
}

/** rankRelevant's order alone. */
export const rankClaims = (
  db: Db,
  caller: Caller,
  f: CompileFilters,
  mark: PhaseMark = () => {},
  vectors?: VectorSimilarities,
): RankedClaim[] => rankRelevant(db, caller, f, mark, vectors).ranked;

/** A packed item: the claim read whole, its score and tokens. */
export interface PackedClaim {
  claim: ClaimRow;
  score: number;
  tokens: number;
}

/**
 * Compile: rank, pack into the budget, and read the packed claims whole (only they are returned;
 * ranking reads just the columns it scores). `ranked` is the whole order (vector use is judged on it).
 */
export function compilePack(
  db: Db,
  caller: Caller,
  f: CompileFilters,
  tokenBudget: number,
  maxItems: number,
  mark: PhaseMark = () => {},
  vectors?: VectorSimilarities,
): Ranking & { items: PackedClaim[] } {
  const ranking = rankRelevant(db, caller, f, mark, vectors);
  const packed = pack(ranking.ranked, tokenBudget, maxItems);
  const whole = new Map(
    claimsAt(
      db,
      caller,
      f,
      packed.map((p) => p.claim.seq),
    ).map((c) => [c.seq, c]),
  );
  const items = packed.flatMap((p) => {
    const claim = whole.get(p.claim.seq);
    return claim ? [{ claim, score: p.score, tokens: p.tokens }] : [];
  });
  return { ...ranking, items };
}
