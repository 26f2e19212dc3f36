// Compile ranking's scoring, pure: no database, no caller. Compile (./compile.ts) reads its candidates
// and their neighbours and hands them here; channel compile (rankTexts) feeds released snapshots. Each
// candidate gets a score from lexical relevance, its context, vector similarity, trust, recency and
// past feedback (subject_id, project_id and kinds are filters, applied before anything is scored); the pack takes them greedily by score into the token budget. Deterministic: equal
// input gives the same pack (ties break on newest claim first). Every statistic comes from shared
// claims only (records.ts sharedTermStats: the filtered subject's, when compile names one) or, for
// channel compile, from the served snapshots.
//
// Lexical relevance = bm25 (FTS5's formula over the shared statistics, normalized to the best candidate) × coverage, the share of the query's
// terms the claim holds, each term weighted by its idf: a claim that matches one rare word many times
// no longer beats one that holds every word of the question. Context: a matching claim written right
// next to another matching claim (same subject, at most `contextSpan` claims apart, within
// `contextWindowMinutes`; in practice, consolidated from the same conversation) inherits a share of
// its neighbour's lexical score, decaying with distance, so the turn that answers a question ranks
// with the turn that asked it. Thread: a match whose event (occurred_at) lies within
// `threadWindowMinutes` of another match of the same subject inherits a share of that match's lexical
// score, so a session scores by its best turn. Only claims that hold a query word themselves receive
// context or thread; neither brings in a claim that matches nothing. A word held by half the claims or more gets no bm25
// weight, so it selects no candidates (ranking every claim that holds it is what grew compile's cost
// with the organization); claims holding only such words are looked up next to the best matches,
// where context can still lift them. Measured effect of each signal: docs/BENCHMARKS.md.
//
// The scoring itself (`scoreCandidates`) is shared: compile feeds it claims with SQL-side statistics
// and neighbours; channel compile (rankTexts) feeds it released snapshots with statistics and
// neighbours computed over the served snapshots only.
import { TRUST_LEVELS, type Trust } from "../../auth/trust";
import { bm25, phraseHeld, phraseStems, rankingTerms, stemsOf, storedStems, type TermStats } from "./fts";
import { estimateTokens } from "./tokens";

/**
 * Candidates of a compile without a query (the newest claims that pass the filters): 2.5 times the
 * largest pack (max_items 200).
 */
export const CANDIDATE_LIMIT = 500;
/**
 * Lexical candidates kept, the best by bm25 of the matches read: the largest pack (max_items 200);
 * what coverage, context and scoring do grows with each candidate kept.
 */
export const LEXICAL_CANDIDATES = 200;
/**
 * Lexical matches read per compile, in all (see lexicalSelection). With per-word reads only, 500 and
 * 400 lose one LoCoMo evidence turn at 2000 tokens against 1000 reads (two names held by most turns,
 * the answer in the conversation's second turn); with the claims holding every word read first, 300
 * gives the same recall as 1000 at every budget and category, and the in-process profile's
 * 50,000-claim organization reads 288 matches per compile instead of 915 (docs/BENCHMARKS.md, "Tried
 * and rejected").
 */
export const LEXICAL_READS = 300;
/** Best matches whose neighbours are looked up when common words were left out of selection. */
export const CONTEXT_SOURCES = 100;

export const WEIGHTS = {
  /** bm25 / best bm25, times idf-weighted query-term coverage (0..1). */
  lexical: 1.0,
  /** Times the best decayed lexical score among matching neighbours (0..1). */
  context: 0.5,
  /** Neighbours: at most this many claims apart (by write order, counting claims the caller may read), same subject... */
  contextSpan: 2,
  /** ...written within this many minutes of each other... */
  contextWindowMinutes: 60,
  /** ...and worth this factor less per step of distance beyond the first. */
  contextDecay: 0.5,
  trust: 0.15,
  recency: 0.1,
  recencyHalfLifeDays: 30,
  feedback: 0.05,
  feedbackClamp: 4,
  disputed: -0.05,
  /** Times the claim's vector similarity relative to the best authorized vector hit (0..1); vector hits only. */
  vector: 0.07,
  /**
   * Thread: times the best lexical score of another lexical match of its thread: same subject, events
   * (occurred_at) within threadWindowMinutes, so a conversation's session scores by its best turn.
   */
  thread: 0.1,
  threadWindowMinutes: 60,
} as const;

export interface CompileFilters {
  query?: string;
  subject_id?: string;
  project_id?: string;
  kinds?: string[];
}

export interface WeightedTerm {
  term: string;
  stems: string[];
  /** Team claims holding the term (shared statistics). */
  held: number;
  weight: number;
}

/**
 * Each query term's stems and idf weight, ln(1 + (N - n + 0.5) / (n + 0.5)) with N the team claims
 * and n those holding it (never zero, unlike bm25's idf, so a common word still counts a little).
 */
export function weightTerms(stats: TermStats, words: string[]): WeightedTerm[] {
  const total = stats.rows;
  return words.map((term) => {
    const stems = phraseStems(term);
    const n = phraseHeld(stats, stems);
    return {
      term,
      stems,
      held: n,
      weight: n > 0 && stems.length ? Math.log(1 + (Math.max(total, n) - n + 0.5) / (n + 0.5)) : 0,
    };
  });
}

/**
 * The terms that select lexical candidates: a word held by half the claims or more gets no weight
 * from bm25 (its idf is floored at zero), so it selects nothing either, unless no other word is left.
 * A word no team claim holds selects too (only claims the caller may read privately can hold it).
 */
export function selectingTerms(terms: WeightedTerm[], total: number): WeightedTerm[] {
  const telling = terms.filter((t) => t.held > 0 && t.held < total / 2);
  const chosen = telling.length ? telling : terms;
  return [...chosen, ...terms.filter((t) => t.held === 0 && !chosen.includes(t))];
}

/** Share of the terms' weight whose stems all occur in `have` (1 when no term carries weight). */
function coverage(have: string[], terms: WeightedTerm[]): number {
  const total = terms.reduce((n, t) => n + t.weight, 0);
  if (total <= 0) return 1;
  let held = 0;
  for (const t of terms) if (t.weight > 0 && t.stems.every((s) => have.includes(s))) held += t.weight;
  return held / total;
}

/** Whether `have` holds at least one of the terms (by stems). */
export const holdsAny = (have: string[], terms: WeightedTerm[]) =>
  terms.some((t) => t.stems.length > 0 && t.stems.every((s) => have.includes(s)));

/** Matching item seq -> its context neighbours (seq) with their distance. */
export type Neighbours = Map<number, { seq: number; d: number }[]>;

/**
 * The pairing behind contextNeighbours, pure: `between` answers, for each asked pair of seqs, how many
 * items the caller may read lie strictly between them (compile asks SQL; channel compile counts the
 * served snapshots).
 */
export function contextPairs(
  matching: ScoringCandidate[],
  between: (asked: [number, number][]) => number[],
): Neighbours {
  const list = [...matching].sort((a, b) => a.seq - b.seq);
  const windowMs = WEIGHTS.contextWindowMinutes * 60_000;
  const at = createdMs();
  const pairs: [ScoringCandidate, ScoringCandidate][] = [];
  for (let i = 0; i < list.length; i++)
    for (let j = i + 1; j < list.length && j - i <= WEIGHTS.contextSpan; j++)
      if (list[i].subject_id === list[j].subject_id && Math.abs(at(list[j]) - at(list[i])) <= windowMs)
        pairs.push([list[i], list[j]]);
  const gaps = pairs.map(([a, b]) => (b.seq - a.seq > 1 ? ([a.seq, b.seq] as [number, number]) : null));
  const asked = gaps.flatMap((g) => (g ? [g] : []));
  const counts = asked.length ? between(asked) : [];
  const out: Neighbours = new Map();
  let k = 0;
  pairs.forEach(([a, b], i) => {
    const d = 1 + (gaps[i] ? counts[k++] : 0);
    if (d > WEIGHTS.contextSpan) return;
    out.set(a.seq, [...(out.get(a.seq) ?? []), { seq: b.seq, d }]);
    out.set(b.seq, [...(out.get(b.seq) ?? []), { seq: a.seq, d }]);
  });
  return out;
}

/** Called at the end of each phase of rankClaims (the bench's profile passes one; nothing else does). */
export type PhaseMark = (phase: string) => void;

/** What a candidate's terms are read from: its stored terms (claim_ranking.stems), else its statement. */
export type Stemmed = { seq: number; stems?: string | null; statement?: string | null };

/**
 * A candidate's terms as stems, parsed once per compile: the stored terms written with the claim
 * (tokenizing each candidate's statement on every query was, after the bounded reads, what still grew
 * with the organization); a candidate read without them (scoped ones) is tokenized.
 */
export function stemsPerCompile(): (c: Stemmed) => string[] {
  const memo = new Map<number, string[]>();
  return (c) => {
    let s = memo.get(c.seq);
    if (!s) memo.set(c.seq, (s = c.stems != null ? storedStems(c.stems) : stemsOf(c.statement ?? "")));
    return s;
  };
}

// ---- The scoring itself: pure, over candidate texts, shared by compile and channel compile -------

/** What scoring reads of a candidate: a claim (compile) or a released snapshot (channel compile). */
export interface ScoringCandidate {
  /** Write order: context neighbours are at most contextSpan apart in it, as the caller sees it. */
  seq: number;
  subject_id: string;
  project_id: string | null;
  trust: string;
  status: string;
  created_at: string;
  /** Event time (claims); released snapshots have none, so they get no thread score. */
  occurred_at?: string | null;
  feedback: number | null;
}

export interface Scored<C> {
  candidate: C;
  score: number;
  tokens: number;
}

/**
 * Lexical score (0..1) of every lexical match: bm25 (`rank`, positive, higher is better) normalized to
 * the best match, times coverage.
 */
export function lexicalScores(
  hits: (Stemmed & { rank: number | null })[],
  terms: WeightedTerm[],
  stems: (c: Stemmed) => string[],
): Map<number, number> {
  const best = Math.max(0, ...hits.map((c) => c.rank ?? 0));
  const lexical = new Map<number, number>();
  for (const c of hits) lexical.set(c.seq, (best > 0 ? (c.rank ?? 0) / best : 0) * coverage(stems(c), terms));
  return lexical;
}

/**
 * Each item's created_at in ms, parsed once per use of the returned function (by seq). Date.parse is
 * ~0.3 µs, and pairing and scoring asked it ~2,700 times per compile at 50k claims for ~500 items.
 */
function createdMs(): (c: { seq: number; created_at: string }) => number {
  const memo = new Map<number, number>();
  return (c) => {
    let ms = memo.get(c.seq);
    if (ms === undefined) memo.set(c.seq, (ms = Date.parse(c.created_at)));
    return ms;
  };
}

/**
 * Score and order candidates. `lexical` holds the lexical score of every candidate that holds a query
 * word (only those may receive context); `sources` are the lexical matches, which give context to
 * their `pairs` neighbours.
 */
export function scoreCandidates<C extends ScoringCandidate>(
  candidates: C[],
  lexical: Map<number, number>,
  sources: ScoringCandidate[],
  pairs: Neighbours,
  f: CompileFilters,
  now: number,
  tokensOf: (c: C) => number,
  vectorScore: (c: C) => number = () => 0,
): Scored<C>[] {
  const bySeq = new Map(sources.map((c) => [c.seq, c]));
  const windowMs = WEIGHTS.contextWindowMinutes * 60_000;
  const at = createdMs();
  const contextOf = (c: C): number => {
    if (!lexical.has(c.seq)) return 0;
    let ctx = 0;
    for (const { seq, d } of pairs.get(c.seq) ?? []) {
      const nb = bySeq.get(seq);
      if (!nb || nb.subject_id !== c.subject_id || Math.abs(at(nb) - at(c)) > windowMs) continue;
      ctx = Math.max(ctx, Math.pow(WEIGHTS.contextDecay, d - 1) * lexical.get(seq)!);
    }
    return ctx;
  };
  // Thread: the lexical matches (sources) by subject, with their event times; like context, only claims
  // that hold a query word themselves receive it.
  const eventMs = (c: ScoringCandidate) => (c.occurred_at ? Date.parse(c.occurred_at) : NaN);
  const threadWindowMs = WEIGHTS.threadWindowMinutes * 60_000;
  const bySubject = new Map<string, { seq: number; at: number; lexical: number }[]>();
  for (const src of sources) {
    const at = eventMs(src);
    if (!Number.isFinite(at)) continue;
    const list = bySubject.get(src.subject_id) ?? [];
    list.push({ seq: src.seq, at, lexical: lexical.get(src.seq) ?? 0 });
    bySubject.set(src.subject_id, list);
  }
  const threadOf = (c: C): number => {
    const at = eventMs(c);
    if (!lexical.has(c.seq) || !Number.isFinite(at)) return 0;
    let best = 0;
    for (const o of bySubject.get(c.subject_id) ?? [])
      if (o.seq !== c.seq && Math.abs(o.at - at) <= threadWindowMs) best = Math.max(best, o.lexical);
    return best;
  };
  const maxTrust = TRUST_LEVELS.length - 1;
  const ranked = candidates.map((c) => {
    const ageDays = Math.max(0, (now - at(c)) / 86_400_000);
    const feedback = Math.max(-WEIGHTS.feedbackClamp, Math.min(WEIGHTS.feedbackClamp, c.feedback ?? 0));
    const score =
      WEIGHTS.lexical * (lexical.get(c.seq) ?? 0) +
      WEIGHTS.context * contextOf(c) +
      WEIGHTS.thread * threadOf(c) +
      WEIGHTS.vector * vectorScore(c) +
      WEIGHTS.trust * (TRUST_LEVELS.indexOf(c.trust as Trust) / maxTrust) +
      WEIGHTS.recency * Math.pow(0.5, ageDays / WEIGHTS.recencyHalfLifeDays) +
      WEIGHTS.feedback * feedback +
      (c.status === "disputed" ? WEIGHTS.disputed : 0);
    return { candidate: c, score: Math.round(score * 1e6) / 1e6, tokens: tokensOf(c) };
  });
  // Pack order.
  ranked.sort((a, b) => b.score - a.score || b.candidate.seq - a.candidate.seq);
  return ranked;
}

/**
 * Rank texts that are not in claims_fts (channel compile ranks released snapshots) with the same
 * scoring as compile. The statistics bm25 and the term weights read, and the neighbours context
 * counts, come from the given texts only (the set the caller is served), so nothing outside them (no
 * other channel, no canonical claim) influences a score. Every text holding a query word is a
 * candidate: the set is already bounded by the caller. Reads nothing; pure.
 */
export function rankTexts<C extends ScoringCandidate & { statement: string }>(
  texts: C[],
  f: CompileFilters,
  now: number,
): Scored<C>[] {
  const tokensOf = (c: C) => estimateTokens(c.statement);
  const docs = new Map(texts.map((t) => [t.seq, stemsOf(t.statement)]));
  const stems = (c: Stemmed) => docs.get(c.seq) ?? stemsOf(c.statement ?? "");
  const df = new Map<string, number>();
  let tokens = 0;
  for (const d of docs.values()) {
    tokens += d.length;
    for (const s of new Set(d)) df.set(s, (df.get(s) ?? 0) + 1);
  }
  const stats: TermStats = { rows: texts.length, tokens, held: (s) => df.get(s) ?? 0 };
  const terms = weightTerms(stats, rankingTerms(f.query));
  if (!terms.length) return scoreCandidates(texts, new Map(), [], new Map(), f, now, tokensOf);
  const phrases = terms.map((t) => t.stems);
  const hits = texts
    .filter((t) => holdsAny(stems(t), terms))
    .map((t) => ({ ...t, rank: bm25(stems(t), phrases, stats) }));
  const lexical = lexicalScores(hits, terms, stems);
  // Distance by write order as the gateway sees it: the served snapshots between two matches.
  const order = new Map([...docs.keys()].sort((a, b) => a - b).map((seq, i) => [seq, i]));
  const pairs = contextPairs(hits, (asked) => asked.map(([a, b]) => order.get(b)! - order.get(a)! - 1));
  return scoreCandidates(hits, lexical, hits, pairs, f, now, tokensOf);
}

/** Greedy pack: highest score first; an item that does not fit is skipped so smaller ones may still fit. */
export function pack<R extends { tokens: number }>(ranked: R[], tokenBudget: number, maxItems: number): R[] {
  const out: R[] = [];
  let used = 0;
  for (const r of ranked) {
    if (out.length >= maxItems) break;
    if (used + r.tokens > tokenBudget) continue;
    out.push(r);
    used += r.tokens;
  }
  return out;
}
