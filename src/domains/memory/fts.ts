// Turning free text into a safe FTS5 query: words only (no operators from the client), each quoted.
// Also the JavaScript side of the claims_fts tokenizer (unicode61 + porter), so that ranking can see
// which query terms a candidate holds, and the stopword list that ranking leaves out of queries.
import { DIACRITICS, FOLD_RUNS, TOKEN_RANGES } from "./unicode61";

const MAX_TERMS = 32;

/**
 * Symbols (emoji, modifiers such as skin tones) and unassigned code points. unicode61 (Unicode 6.1)
 * counts many of them as token characters, so "👍🏽" or "robot🤖" would become query words of their
 * own that only the same glued text matches; a query reads them as spaces, as it always has.
 */
const QUERY_SYMBOLS = /[\p{So}\p{Sk}\p{Cn}]/gu;

/**
 * The words of a query, each folded as claims_fts folds it: runs of claims_fts token characters,
 * with "_" kept inside a word ("foo_bar" stays one word, which FTS5 reads as the phrase "foo bar").
 * Splitting like the index (not on JavaScript's idea of a letter) keeps a quoted word and the index
 * in step: "İstanbul" or "naïve" with a combining mark each find what was indexed. Symbols are
 * spaces (QUERY_SYMBOLS): "great work 👍🏽" asks for "great" and "work".
 */
export function queryTerms(text: string | undefined): string[] {
  if (!text) return [];
  const seen = new Set<string>();
  for (const word of scan(text.replace(QUERY_SYMBOLS, " "), true)) {
    seen.add(word);
    if (seen.size >= MAX_TERMS) break;
  }
  return [...seen];
}

/** All terms must match (memories search). */
export const matchAll = (terms: string[]) => terms.map((t) => `"${t}"`).join(" ");
/** Any term may match (compile candidate selection; bm25 ranks by how many and how rare). */
export const matchAny = (terms: string[]) => terms.map((t) => `"${t}"`).join(" OR ");

/**
 * English function words and question words. They say how a question is asked, not what it is
 * about, and they match most claims, so compile ranking leaves them out of its query (all of them
 * are kept when a query has nothing else). Fixed list: ranking stays deterministic.
 */
export const STOPWORDS: ReadonlySet<string> = new Set((
  "a about above after again against all also am an and any are as at be because been before being below between " +
  "both but by can could d did do does doing done down during each either else ever every few for from further " +
  "get gets got had has have having he her here hers herself him himself his how i if in into is it its itself just " +
  "ll m me might more most must my myself no nor not now of off on once only or other our ours ourselves out over own " +
  "re s same shall she should so some such t than that the their theirs them themselves then there these they this " +
  "those through to too under until up upon us ve very was we were what whatever when where whether which while who " +
  "whom whose why will with would yet you your yours yourself yourselves"
).split(" "));

/** Query terms for compile ranking: the words of `text` less stopwords (all words if only stopwords). */
export function rankingTerms(text: string | undefined): string[] {
  const all = queryTerms(text);
  const informative = all.filter((t) => !STOPWORDS.has(t));
  return informative.length ? informative : all;
}

// ---- unicode61 + porter, as claims_fts tokenizes ------------------------------------------------

/** Case-folded, diacritic-free tokens, exactly as unicode61 (claims_fts's tokenizer, before porter) makes them. */
export const ftsTokens = (text: string): string[] => scan(text, false);

const ASCII_TEXT = /^[\x00-\x7f]*$/;
const ASCII_TOKENS = /[a-z0-9]+/g;
const ASCII_WORDS = /[a-z0-9_]+/g;
const DIACRITIC = new Set(DIACRITICS);
let folds: Map<number, number> | undefined;

/** unicode61's folding of a token character (FOLD_RUNS, expanded on first use). */
function fold(cp: number): number {
  if (!folds) {
    folds = new Map();
    for (let i = 0; i < FOLD_RUNS.length; i += 4)
      for (let k = 0; k < FOLD_RUNS[i + 1]; k++) folds.set(FOLD_RUNS[i] + k * FOLD_RUNS[i + 3], FOLD_RUNS[i] + k * FOLD_RUNS[i + 3] + FOLD_RUNS[i + 2]);
  }
  return folds.get(cp) ?? cp;
}

/** Is a non-ASCII code point a unicode61 token character (binary search of TOKEN_RANGES)? */
function isTokenChar(cp: number): boolean {
  let lo = 0;
  let hi = TOKEN_RANGES.length / 2 - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (cp < TOKEN_RANGES[2 * mid]) hi = mid - 1;
    else if (cp > TOKEN_RANGES[2 * mid + 1]) lo = mid + 1;
    else return true;
  }
  return false;
}

/**
 * unicode61's scan (tables in unicode61.ts, measured from SQLite): token characters folded, combining
 * diacritics dropped inside a token, everything else separates. With `underscore`, "_" joins a word
 * (queryTerms). ASCII text, nearly all of it, takes a regular expression.
 */
function scan(text: string, underscore: boolean): string[] {
  if (ASCII_TEXT.test(text)) return text.toLowerCase().match(underscore ? ASCII_WORDS : ASCII_TOKENS) ?? [];
  const out: string[] = [];
  let token = "";
  for (const ch of text) {
    let cp = ch.codePointAt(0)!;
    if (cp < 0x80) {
      if (cp >= 0x41 && cp <= 0x5a) { token += String.fromCharCode(cp + 32); continue; }
      if ((cp >= 0x61 && cp <= 0x7a) || (cp >= 0x30 && cp <= 0x39) || (underscore && cp === 0x5f)) { token += ch; continue; }
    } else {
      if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd; // a lone surrogate reaches SQLite as U+FFFD
      if (isTokenChar(cp)) { token += String.fromCodePoint(fold(cp)); continue; }
      if (token && DIACRITIC.has(cp)) continue;
    }
    if (token) { out.push(token); token = ""; }
  }
  if (token) out.push(token);
  return out;
}

const isVowelAt = (w: string, i: number, prevCons: boolean) => {
  const c = w[i];
  return c === "a" || c === "e" || c === "i" || c === "o" || c === "u" || (prevCons && c === "y");
};

/** Porter's measure m of w[0, n): the number of vowel-consonant runs. */
function measure(w: string, n: number): number {
  let m = 0;
  let cons = false;
  let seenVowel = false;
  for (let i = 0; i < n; i++) {
    cons = !isVowelAt(w, i, cons);
    if (!cons) seenVowel = true;
    else if (seenVowel) {
      m++;
      seenVowel = false;
    }
  }
  return m;
}

/** *v*: w[0, n) holds a vowel ("y" counts after the first letter). */
function hasVowel(w: string, n: number): boolean {
  for (let i = 0; i < n; i++) if (isVowelAt(w, i, i > 0)) return true;
  return false;
}

/** *o: w[0, n) ends consonant-vowel-consonant, the last not w, x or y. */
function endsCvc(w: string, n: number): boolean {
  const last = w[n - 1];
  if (n < 3 || last === "w" || last === "x" || last === "y") return false;
  let cons = false;
  const flags: boolean[] = [];
  for (let i = 0; i < n; i++) flags.push((cons = !isVowelAt(w, i, cons)));
  return flags[n - 3] && !flags[n - 2] && flags[n - 1];
}

type Rule = readonly [suffix: string, replacement: string];
// Steps 2-4: the first rule whose suffix ends the word decides (its condition may still fail).
const STEP2: Rule[] = [
  ["ational", "ate"], ["tional", "tion"], ["enci", "ence"], ["anci", "ance"], ["izer", "ize"], ["logi", "log"],
  ["bli", "ble"], ["alli", "al"], ["entli", "ent"], ["eli", "e"], ["ousli", "ous"], ["ization", "ize"],
  ["ation", "ate"], ["ator", "ate"], ["alism", "al"], ["iveness", "ive"], ["fulness", "ful"], ["ousness", "ous"],
  ["aliti", "al"], ["iviti", "ive"], ["biliti", "ble"],
];
const STEP3: Rule[] = [["ical", "ic"], ["ness", ""], ["icate", "ic"], ["iciti", "ic"], ["ful", ""], ["ative", ""], ["alize", "al"]];
const STEP4 = ["al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou", "ism",
  "ate", "iti", "ous", "ive", "ize"];

/** The rule of `rules` for w (matched within the group of its second-to-last letter, as SQLite does). */
function firstRule<T extends string | Rule>(w: string, rules: readonly T[]): T | undefined {
  const key = w[w.length - 2];
  for (const r of rules) {
    const suffix = typeof r === "string" ? r : r[0];
    if (suffix[suffix.length - 2] !== key) continue;
    if (w.length > suffix.length && w.endsWith(suffix)) return r;
  }
  return undefined;
}

const utf8 = new TextEncoder();
const ASCII = /^[\x00-\x7f]*$/;

/**
 * Porter's stemmer as SQLite's FTS5 "porter" tokenizer applies it, byte for byte: it works on the
 * UTF-8 bytes, so a token with other than ASCII letters is stemmed (and returned) as a string of
 * byte values, and tokens shorter than 3 or longer than 64 bytes pass through unchanged. The result
 * is a key to compare with other stems, not text to show.
 */
export function stemKey(token: string): string {
  const w = ASCII.test(token) ? token : String.fromCharCode(...utf8.encode(token));
  return w.length < 3 || w.length > 64 ? w : stemBytes(w);
}

function stemBytes(word: string): string {
  let w = word;
  // Step 1a.
  if (w.endsWith("s")) {
    if (w[w.length - 2] === "e") {
      if ((w.length > 4 && w.endsWith("sses")) || (w.length > 3 && w.endsWith("ies"))) w = w.slice(0, -2);
      else w = w.slice(0, -1);
    } else if (w[w.length - 2] !== "s") w = w.slice(0, -1);
  }
  // Step 1b.
  let stripped = false;
  if (w.length > 3 && w.endsWith("eed")) {
    if (measure(w, w.length - 3) > 0) w = w.slice(0, -1);
  } else if (w.length > 2 && w.endsWith("ed") && hasVowel(w, w.length - 2)) {
    w = w.slice(0, -2);
    stripped = true;
  } else if (w.length > 3 && w.endsWith("ing") && hasVowel(w, w.length - 3)) {
    w = w.slice(0, -3);
    stripped = true;
  }
  if (stripped) {
    if (w.length > 2 && (w.endsWith("at") || w.endsWith("bl") || w.endsWith("iz"))) w += "e";
    else {
      const c = w[w.length - 1];
      const consonant = !"aeiou".includes(c);
      if (consonant && c !== "l" && c !== "s" && c !== "z" && c === w[w.length - 2]) w = w.slice(0, -1);
      else if (measure(w, w.length) === 1 && endsCvc(w, w.length)) w += "e";
    }
  }
  // Step 1c.
  if (w.endsWith("y") && hasVowel(w, w.length - 1)) w = w.slice(0, -1) + "i";
  // Steps 2 and 3 (m > 0).
  for (const rules of [STEP2, STEP3]) {
    const r = firstRule(w, rules);
    if (r && measure(w, w.length - r[0].length) > 0) w = w.slice(0, -r[0].length) + r[1];
  }
  // Step 4 (m > 1; "ion" only after s or t).
  const s4 = firstRule(w, STEP4);
  if (s4) {
    const n = w.length - s4.length;
    if (measure(w, n) > 1 && (s4 !== "ion" || w[n - 1] === "s" || w[n - 1] === "t")) w = w.slice(0, n);
  }
  // Step 5a.
  if (w.endsWith("e")) {
    const m = measure(w, w.length - 1);
    if (m > 1 || (m === 1 && !endsCvc(w, w.length - 1))) w = w.slice(0, -1);
  }
  // Step 5b.
  if (w.length > 1 && w.endsWith("ll") && measure(w, w.length - 1) > 1) w = w.slice(0, -1);
  return w;
}

// ---- index terms and statistics ------------------------------------------------------------------

/**
 * Token -> stem, memoized for the isolate: a pure function of the token (no tenant data leaves it),
 * bounded, and dropped whole when full. Stemming every word of every candidate anew on each query
 * was the largest part of ranking's cost.
 */
const STEMS = new Map<string, string>();
const STEMS_MAX = 50_000;

/** The stems of `text` in order, as claims_fts indexes it (one per token, repeats kept). */
export function stemsOf(text: string): string[] {
  return ftsTokens(text).map((tok) => {
    let k = STEMS.get(tok);
    if (k === undefined) {
      if (STEMS.size >= STEMS_MAX) STEMS.clear();
      STEMS.set(tok, (k = stemKey(tok)));
    }
    return k;
  });
}

const utf8Text = new TextDecoder();

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
      if ((i === 0 || stored.charCodeAt(i - 1) === 32) && (i + needle.length === stored.length || stored.charCodeAt(i + needle.length) === 32)) tf++;
    return tf;
  };
  return (stored) => {
    if (arrayPath || !ASCII.test(stored)) return bm25(storedStems(stored), phrases, stats);
    let length = stored ? 1 : 0;
    for (let i = stored.indexOf(" "); i !== -1; i = stored.indexOf(" ", i + 1)) length++;
    return bm25Sum(length, counted(stored), idfs, stats);
  };
}
