// Context compile ranking. Candidates are authorized, current claims (filters applied in SQL before
// anything is ranked): those matching any informative query word (FTS5, stopwords left out), plus
// claims about the named subject or project. Each gets a score from lexical relevance, its context,
// subject/project match, trust, recency and past feedback; the pack takes them greedily by score into
// the token budget. Deterministic: equal input and equal state give the same pack (ties break on
// newest claim first).
//
// Lexical relevance = bm25 (normalized to the best candidate) × coverage, the share of the query's
// terms the claim holds, each term weighted by its idf: a claim that matches one rare word many times
// no longer beats one that holds every word of the question. Context: a matching claim written right
// next to another matching claim (same subject, at most `contextSpan` claims apart, within
// `contextWindowMinutes`; in practice, consolidated from the same conversation) inherits a share of
// its neighbour's lexical score, decaying with distance, so the turn that answers a question ranks
// with the turn that asked it. Only claims that hold a query word themselves receive context; it
// never brings in a claim that matches nothing. A word held by half the claims or more gets no bm25
// weight, so it selects no candidates (ranking every claim that holds it is what grew compile's cost
// with the organization); claims holding only such words are looked up next to the best matches,
// where context can still lift them. Measured effect of each signal: docs/BENCHMARKS.md.
import { TRUST_LEVELS, type Trust } from "../../auth/trust";
import { clock } from "../../http/clock";
import type { Db } from "../../org/db";
import type { Caller } from "../../org/request";
import { ftsTokens, matchAny, rankingTerms, stemKey } from "./fts";
import { type CandidateRow, type ClaimRow, candidatesAt, claimSeqs, claimsHolding, claimsWritten, lexicalCandidates, scopedCandidates } from "./records";
import { estimateTokens } from "./tokens";

/**
 * Candidates per way in (lexical, subject, project): 2.5 times the largest pack (max_items 200). Was
 * 1000; at 500 recall is unchanged and compile in a 10,000-claim organization is faster by a fifth
 * (docs/BENCHMARKS.md), since per-candidate work is most of compile's cost.
 */
export const CANDIDATE_LIMIT = 500;
/** Best matches whose neighbours are looked up when common words were left out of selection. */
export const CONTEXT_SOURCES = 100;

export const WEIGHTS = {
  /** bm25 / best bm25, times idf-weighted query-term coverage (0..1). */
  lexical: 1.0,
  /** Times the best decayed lexical score among matching neighbours (0..1). */
  context: 0.3,
  /** Neighbours: at most this many claims apart (by write order), same subject... */
  contextSpan: 2,
  /** ...written within this many minutes of each other... */
  contextWindowMinutes: 60,
  /** ...and worth this factor less per step of distance beyond the first. */
  contextDecay: 0.5,
  subject: 0.3,
  project: 0.2,
  trust: 0.15,
  recency: 0.1,
  recencyHalfLifeDays: 30,
  feedback: 0.05,
  feedbackClamp: 4,
  disputed: -0.05,
  /** Times the claim's vector similarity relative to the best vector hit (0..1); vector hits only. */
  vector: 0.07,
} as const;

export interface CompileFilters {
  query?: string;
  subject_id?: string;
  project_id?: string;
  kinds?: string[];
}

export interface RankedClaim {
  claim: ClaimRow;
  score: number;
  tokens: number;
}

type Candidate = CandidateRow;

/** Candidates from every way in: lexical matches, plus claims about the named subject or project. */
function selectCandidates(db: Db, caller: Caller, f: CompileFilters, terms: string[]): Candidate[] {
  const byId = new Map<string, Candidate>();
  if (terms.length)
    for (const row of lexicalCandidates(db, caller, f.kinds, matchAny(terms), CANDIDATE_LIMIT)) byId.set(row.claim_id, row);
  // Claims about the named subject or project are candidates even without a lexical match; with
  // neither a query nor a scope, the newest claims are.
  const scopes: ({ column: "subject_id" | "project_id"; value: string } | null)[] = [];
  if (f.subject_id) scopes.push({ column: "subject_id", value: f.subject_id });
  if (f.project_id) scopes.push({ column: "project_id", value: f.project_id });
  if (!terms.length && !scopes.length) scopes.push(null);
  for (const scope of scopes)
    for (const row of scopedCandidates(db, caller, f.kinds, scope, CANDIDATE_LIMIT))
      if (!byId.has(row.claim_id)) byId.set(row.claim_id, row);
  return [...byId.values()];
}

interface WeightedTerm {
  term: string;
  stems: string[];
  /** Claims whose index entry holds the term. */
  held: number;
  weight: number;
}

/**
 * Each query term's claims_fts stems and idf weight, ln(1 + (N - n + 0.5) / (n + 0.5)) with n the
 * claims holding it (never zero, unlike bm25's idf, so a common word still counts a little).
 */
function weightTerms(db: Db, terms: string[]): { total: number; terms: WeightedTerm[] } {
  return weighTerms(terms, claimsWritten(db), (term) => claimsHolding(db, term));
}

/** The idf weights of `terms` over a corpus of `total` texts, `held(term)` of which hold the term. */
function weighTerms(terms: string[], total: number, held: (term: string) => number): { total: number; terms: WeightedTerm[] } {
  return {
    total,
    terms: terms.map((term) => {
      const n = held(term);
      const stems = ftsTokens(term).map(stemKey);
      return { term, stems, held: n, weight: n > 0 && stems.length ? Math.log(1 + (Math.max(total, n) - n + 0.5) / (n + 0.5)) : 0 };
    }),
  };
}

/**
 * The terms that select lexical candidates: a word held by half the claims or more gets no weight
 * from bm25 (its idf is floored at zero), so it selects nothing either, unless no other word is left.
 * This keeps candidate selection, whose cost grows with the matches it ranks, from ranking most of
 * a large organization for a word that says nothing.
 */
function selectingTerms(weighted: { total: number; terms: WeightedTerm[] }): string[] {
  const telling = weighted.terms.filter((t) => t.held > 0 && t.held < weighted.total / 2).map((t) => t.term);
  return telling.length ? telling : weighted.terms.map((t) => t.term);
}

/**
 * Token -> stem, memoized for the isolate: a pure function of the token (no tenant data leaves it),
 * bounded, and dropped whole when full. Stemming every word of up to CANDIDATE_LIMIT statements anew
 * on each compile was the largest part of coverage's cost.
 */
const STEMS = new Map<string, string>();
const STEMS_MAX = 50_000;

function stemList(text: string): string[] {
  const out: string[] = [];
  for (const tok of ftsTokens(text)) {
    let k = STEMS.get(tok);
    if (k === undefined) {
      if (STEMS.size >= STEMS_MAX) STEMS.clear();
      STEMS.set(tok, (k = stemKey(tok)));
    }
    out.push(k);
  }
  return out;
}

const stemsOf = (text: string): Set<string> => new Set(stemList(text));

/** Share of the terms' weight whose stems all occur in a text's stems (1 when no term carries weight). */
function coverage(have: Set<string>, terms: WeightedTerm[]): number {
  const total = terms.reduce((n, t) => n + t.weight, 0);
  if (total <= 0) return 1;
  let held = 0;
  for (const t of terms) if (t.weight > 0 && t.stems.every((s) => have.has(s))) held += t.weight;
  return held / total;
}

/** Whether `text` holds at least one of the terms (by stems). */
function holdsAny(text: string, terms: WeightedTerm[]): boolean {
  const have = stemsOf(text);
  return terms.some((t) => t.stems.length > 0 && t.stems.every((s) => have.has(s)));
}

/**
 * Claims within `contextSpan` of the best matches that candidate selection left out (they hold only
 * words too common to select): found by write order, under the same filters, kept when they hold a
 * query word. They can then rank as context of the match next to them, as they would had every word
 * selected candidates.
 */
function commonWordNeighbours(db: Db, caller: Caller, f: CompileFilters, best: Candidate[], present: Set<number>,
  terms: WeightedTerm[]): Candidate[] {
  const seqs = new Set<number>();
  for (const c of best)
    for (let d = 1; d <= WEIGHTS.contextSpan; d++)
      for (const seq of [c.seq - d, c.seq + d]) if (seq > 0 && !present.has(seq)) seqs.add(seq);
  if (!seqs.size) return [];
  return candidatesAt(db, caller, f.kinds, [...seqs].sort((a, b) => a - b)).filter((c) => holdsAny(c.statement, terms)).sort((a, b) => a.seq - b.seq);
}

/**
 * Vector hits join the candidates through the same retrieval predicate as every other way in (by
 * write position), so a hit the caller may not read, or that is no longer current, is dropped before
 * it can score.
 */
function vectorCandidates(db: Db, caller: Caller, f: CompileFilters, ids: string[]): Candidate[] {
  if (!ids.length) return [];
  return candidatesAt(db, caller, f.kinds, claimSeqs(db, ids));
}

/** `vectors`: the query's nearest claim ids with their cosine similarity (hybrid compile), if any. */
export function rankClaims(db: Db, caller: Caller, f: CompileFilters, vectors?: Map<string, number>): RankedClaim[] {
  const weighted = weightTerms(db, rankingTerms(f.query));
  const terms = weighted.terms;
  const selecting = selectingTerms(weighted);
  const candidates = selectCandidates(db, caller, f, selecting);
  const lexical = lexicalScores(candidates, terms);
  if (selecting.length < terms.length && lexical.size) {
    const top = candidates.filter((c) => c.rank != null)
      .sort((a, b) => lexical.get(b.seq)! - lexical.get(a.seq)! || b.seq - a.seq).slice(0, CONTEXT_SOURCES);
    for (const c of commonWordNeighbours(db, caller, f, top, new Set(candidates.map((x) => x.seq)), terms)) {
      candidates.push(c);
      lexical.set(c.seq, 0);
    }
  }
  // Vector hits join last, so the lexical steps above see exactly what they see without vectors.
  const bestSimilarity = vectors?.size ? Math.max(...vectors.values()) : 0;
  if (vectors?.size) {
    const have = new Set(candidates.map((c) => c.claim_id));
    for (const c of vectorCandidates(db, caller, f, [...vectors.keys()].filter((id) => !have.has(id)))) candidates.push(c);
  }
  const vectorScore = (c: Candidate) => bestSimilarity > 0 ? Math.max(0, vectors!.get(c.claim_id) ?? 0) / bestSimilarity : 0;
  return scoreCandidates(candidates, lexical, f, clock.nowMs(), vectorScore)
    .map((r) => ({ claim: r.candidate, score: r.score, tokens: r.tokens }));
}

// ---- The scoring itself: pure, over candidate texts, shared by compile and channel compile -------

/** What scoring reads of a candidate: a claim (compile) or a released snapshot (channel compile). */
export interface ScoringCandidate {
  /** Write order: neighbours for context are at most contextSpan apart in it. */
  seq: number;
  statement: string;
  subject_id: string;
  project_id: string | null;
  trust: string;
  status: string;
  created_at: string;
  feedback: number | null;
  /** bm25 rank (negative, lower is better) when the candidate matched the query lexically, else null. */
  rank: number | null;
  /** The statement's stems, when the caller already has them (else they are computed). */
  stems?: Set<string>;
}

export interface Scored<C> {
  candidate: C;
  score: number;
  tokens: number;
}

/** Lexical score (0..1) of every lexical match: bm25 normalized to the best match, times coverage. */
function lexicalScores(candidates: ScoringCandidate[], terms: WeightedTerm[]): Map<number, number> {
  // bm25 ranks are negative, more negative = better; normalize against the best match to 0..1.
  const best = Math.min(0, ...candidates.map((c) => c.rank ?? 0));
  const lexical = new Map<number, number>();
  for (const c of candidates)
    if (c.rank != null) lexical.set(c.seq, (best < 0 ? c.rank / best : 0) * coverage(c.stems ?? stemsOf(c.statement), terms));
  return lexical;
}

/**
 * Score and order candidates. `lexical` holds the lexical score of every candidate that holds a query
 * word (only those may receive context); lexical matches (rank not null) give context to neighbours.
 */
function scoreCandidates<C extends ScoringCandidate>(candidates: C[], lexical: Map<number, number>, f: CompileFilters, now: number,
  vectorScore: (c: C) => number = () => 0): Scored<C>[] {
  const bySeq = new Map(candidates.filter((c) => c.rank != null).map((c) => [c.seq, c]));
  const windowMs = WEIGHTS.contextWindowMinutes * 60_000;
  const contextOf = (c: C): number => {
    if (!lexical.has(c.seq)) return 0;
    const at = Date.parse(c.created_at);
    let ctx = 0;
    for (let d = 1; d <= WEIGHTS.contextSpan; d++)
      for (const seq of [c.seq - d, c.seq + d]) {
        const nb = bySeq.get(seq);
        if (!nb || nb.subject_id !== c.subject_id || Math.abs(Date.parse(nb.created_at) - at) > windowMs) continue;
        ctx = Math.max(ctx, Math.pow(WEIGHTS.contextDecay, d - 1) * lexical.get(seq)!);
      }
    return ctx;
  };
  const maxTrust = TRUST_LEVELS.length - 1;
  const ranked = candidates.map((c) => {
    const ageDays = Math.max(0, (now - Date.parse(c.created_at)) / 86_400_000);
    const feedback = Math.max(-WEIGHTS.feedbackClamp, Math.min(WEIGHTS.feedbackClamp, c.feedback ?? 0));
    const score =
      WEIGHTS.lexical * (lexical.get(c.seq) ?? 0) +
      WEIGHTS.context * contextOf(c) +
      WEIGHTS.vector * vectorScore(c) +
      (f.subject_id && c.subject_id === f.subject_id ? WEIGHTS.subject : 0) +
      (f.project_id && c.project_id === f.project_id ? WEIGHTS.project : 0) +
      WEIGHTS.trust * (TRUST_LEVELS.indexOf(c.trust as Trust) / maxTrust) +
      WEIGHTS.recency * Math.pow(0.5, ageDays / WEIGHTS.recencyHalfLifeDays) +
      WEIGHTS.feedback * feedback +
      (c.status === "disputed" ? WEIGHTS.disputed : 0);
    return { candidate: c, score: Math.round(score * 1e6) / 1e6, tokens: estimateTokens(c.statement) };
  });
  ranked.sort((a, b) => b.score - a.score || b.candidate.seq - a.candidate.seq);
  return ranked;
}

/**
 * Rank texts that are not in claims_fts (channel compile ranks released snapshots) with the same
 * scoring as compile. What SQLite computes for claims is computed here over the given texts only, as
 * FTS5 does (bm25 with k1 1.2, b 0.75, idf floored near zero; a term is a phrase of its stems), so
 * nothing outside them (no other channel, no canonical claim) influences a score. Every text holding
 * a query word is a candidate: the set is already bounded by the caller.
 */
export function rankTexts<C extends Omit<ScoringCandidate, "rank">>(texts: C[], f: CompileFilters, now: number): Scored<C & { rank: number | null }>[] {
  const docs = texts.map((t) => stemList(t.statement));
  const words = rankingTerms(f.query);
  const termStems = words.map((w) => ftsTokens(w).map(stemKey));
  const counts = docs.map((d) => termStems.map((ts) => phraseCount(d, ts)));
  const held = words.map((_, i) => counts.filter((c) => c[i] > 0).length);
  const weighted = weighTerms(words, texts.length, (term) => held[words.indexOf(term)]);
  const avgLen = docs.reduce((n, d) => n + d.length, 0) / Math.max(1, docs.length);
  const idf = held.map((n) => Math.max(1e-6, Math.log((texts.length - n + 0.5) / (n + 0.5))));
  const candidates: (C & { rank: number | null })[] = [];
  texts.forEach((t, i) => {
    if (!words.length) return candidates.push({ ...t, rank: null });
    if (!counts[i].some((n) => n > 0)) return;
    const norm = 1.2 * (1 - 0.75 + (0.75 * docs[i].length) / (avgLen || 1));
    const bm25 = counts[i].reduce((sum, n, k) => sum + (idf[k] * n * 2.2) / (n + norm), 0);
    candidates.push({ ...t, rank: -bm25, stems: new Set(docs[i]) });
  });
  return scoreCandidates(candidates, lexicalScores(candidates, weighted.terms), f, now);
}

/** Occurrences of the stems `phrase` in order in `doc` (FTS5 phrase matching). */
function phraseCount(doc: string[], phrase: string[]): number {
  if (!phrase.length) return 0;
  let n = 0;
  for (let i = 0; i + phrase.length <= doc.length; i++) if (phrase.every((p, j) => doc[i + j] === p)) n++;
  return n;
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
