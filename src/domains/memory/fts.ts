// Turning free text into a safe FTS5 query: words only (no operators from the client), each quoted.
// Also claims_fts's terms as JavaScript sees them (tokenized and stemmed by src/text, as the index
// does), so that ranking can see which query terms a candidate holds, and bm25 over them.
import { stemKey } from "../../text/porter";
import { STOPWORDS } from "../../text/stopwords";
import { ftsTokens, queryTerms } from "../../text/unicode61";

/** All terms must match (memories search). */
export const matchAll = (terms: string[]) => terms.map((t) => `"${t}"`).join(" ");
/** Any term may match (compile candidate selection; bm25 ranks by how many and how rare). */
export const matchAny = (terms: string[]) => terms.map((t) => `"${t}"`).join(" OR ");

/** Query terms for compile ranking: the words of `text` less stopwords (all words if only stopwords). */
export function rankingTerms(text: string | undefined): string[] {
  const all = queryTerms(text);
  const informative = all.filter((t) => !STOPWORDS.has(t));
  return informative.length ? informative : all;
}

// ---- index terms and statistics ------------------------------------------------------------------

/**
 * Token -> stem, memoized for the isolate: a pure function of the token (no tenant data leaves it),
 * bounded, and dropped whole when full. Stemming every word of every candidate anew on each query
 * was the largest part of ranking's cost.
 */
const STEMS = new Map<string, string>();
const STEMS_MAX = 50_000;

/** The memo's bound and what it has done in this isolate (npm run bench reports its hit rate). */
export const stemMemo = { bound: STEMS_MAX, hits: 0, misses: 0, clears: 0 };

/** The stems of `text` in order, as claims_fts indexes it (one per token, repeats kept). */
export function stemsOf(text: string): string[] {
  return ftsTokens(text).map((tok) => {
    let k = STEMS.get(tok);
    if (k === undefined) {
      stemMemo.misses++;
      if (STEMS.size >= STEMS_MAX) {
        STEMS.clear();
        stemMemo.clears++;
      }
      STEMS.set(tok, (k = stemKey(tok)));
    } else stemMemo.hits++;
    return k;
  });
}

const utf8 = new TextEncoder();
const utf8Text = new TextDecoder();
const ASCII = /^[\x00-\x7f]*$/;

/** A stem key as FTS5 stores the term (UTF-8 text; stemKey works on bytes), the key of claim_terms. */
export const storedTerm = (key: string): string =>
  ASCII.test(key) ? key : utf8Text.decode(Uint8Array.from(key, (c) => c.charCodeAt(0)));

/** Keys (stemKey form) of terms in their stored form (claim_ranking.stems, claim_terms): storedTerm reversed. */
const keyOfStored = (term: string): string => (ASCII.test(term) ? term : String.fromCharCode(...utf8.encode(term)));

/** A claim's stored terms (claim_ranking.stems: storedTerm forms, space-separated, in order) as stem keys, like stemsOf. */
export function storedStems(stored: string): string[] {
  if (!stored) return [];
  const terms = stored.split(" ");
  return ASCII.test(stored) ? terms : terms.map(keyOfStored);
}

/** Corpus statistics for bm25: rows, their total tokens, and rows holding each term (stem keys). */
/**
 * A claim's stored terms (claim_ranking.stems, written by insertClaim) or, for a claim without them
 * (written before 0019_claim_stems with other than ASCII text), its statement to tokenize.
 */
export type StoredTerms = { stems: string | null; statement?: string | null };

export interface TermStats {
  rows: number;
  tokens: number;
  held: (stem: string) => number;
}

/** A query phrase (one quoted query word) as the stems it tokenizes to. */
export const phraseStems = (word: string): string[] => ftsTokens(word).map(stemKey);

/** Occurrences of the phrase in a stemmed text (adjacent stems in order). */
export function phraseCount(stems: string[], phrase: string[]): number {
  if (!phrase.length) return 0;
  let n = 0;
  outer: for (let i = 0; i + phrase.length <= stems.length; i++) {
    for (let j = 0; j < phrase.length; j++) if (stems[i + j] !== phrase[j]) continue outer;
    n++;
  }
  return n;
}

/** Rows holding a phrase: its rarest stem's count (exact for one word; an upper bound otherwise). */
export const phraseHeld = (stats: TermStats, phrase: string[]): number =>
  phrase.length ? Math.min(...phrase.map((s) => stats.held(s))) : 0;

const K1 = 1.2;
const B = 0.75;

/** Each phrase's idf over the statistics, as FTS5's bm25() computes it (floored at 1e-6). */
function phraseIdfs(phrases: string[][], stats: TermStats): number[] {
  const rows = Math.max(stats.rows, 1);
  return phrases.map((p) => {
    const n = phraseHeld(stats, p);
    const idf = Math.log((rows - n + 0.5) / (n + 0.5));
    return idf <= 0 ? 1e-6 : idf;
  });
}

/** The bm25 sum of a document of `length` terms, `tf(k)` being how often it holds phrase k. */
function bm25Sum(length: number, tf: (k: number) => number, idfs: number[], stats: TermStats): number {
  const avgdl = stats.rows > 0 && stats.tokens > 0 ? stats.tokens / stats.rows : Math.max(length, 1);
  const norm = K1 * (1 - B + (B * length) / avgdl);
  let score = 0;
  for (let k = 0; k < idfs.length; k++) {
    const n = tf(k);
    if (n) score += (idfs[k] * n * (K1 + 1)) / (n + norm);
  }
  return score;
}

/**
 * Okapi BM25 as SQLite FTS5's bm25() computes it (k1 1.2, b 0.75, idf floored at 1e-6), but over the
 * given statistics instead of every row of the index, and positive (higher is better). Ranking passes
 * statistics of records every reader may read, so no score depends on a record the caller cannot read.
 */
export function bm25(stems: string[], phrases: string[][], stats: TermStats): number {
  return bm25Sum(stems.length, (k) => phraseCount(stems, phrases[k]), phraseIdfs(phrases, stats), stats);
}

/**
 * bm25 of claims' stored terms (claim_ranking.stems), one scorer per query: `scorer(stored)` equals
 * `bm25(storedStems(stored), phrases, stats)` (the same sum), but counts each phrase in the stored
 * string (as whole space-separated terms) instead of splitting it into an array, and takes the idfs
 * once per query. Search scores up to SEARCH_WINDOW rows this way; splitting each
 * row instead made bm25 + sort 2-3x slower.
 */
export function storedBm25(phrases: string[][], stats: TermStats): (stored: string) => number {
  const idfs = phraseIdfs(phrases, stats);
  // A stored phrase: its stems space-separated, as the stored string holds adjacent terms.
  const needles = phrases.map((p) => p.join(" "));
  // An empty phrase or stem cannot be searched for in a string, and stored terms of other than ASCII
  // are stem keys only after conversion: those take the array path.
  const arrayPath = phrases.some((p) => !p.length || p.includes(""));
  const counted = (stored: string) => (k: number) => {
    const needle = needles[k];
    let tf = 0;
    for (let i = stored.indexOf(needle); i !== -1; i = stored.indexOf(needle, i + 1))
      if (
        (i === 0 || stored.charCodeAt(i - 1) === 32) &&
        (i + needle.length === stored.length || stored.charCodeAt(i + needle.length) === 32)
      )
        tf++;
    return tf;
  };
  return (stored) => {
    if (arrayPath || !ASCII.test(stored)) return bm25(storedStems(stored), phrases, stats);
    let length = stored ? 1 : 0;
    for (let i = stored.indexOf(" "); i !== -1; i = stored.indexOf(" ", i + 1)) length++;
    return bm25Sum(length, counted(stored), idfs, stats);
  };
}
