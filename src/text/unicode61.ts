// The JavaScript side of claims_fts's tokenizer (unicode61, before porter): the tokens a text is
// indexed as, and the words of a query folded the same way. Shared by memory search and ranking and by
// the local embedder, so that all of them read a text as the index does.
import { DIACRITICS, FOLD_RUNS, TOKEN_RANGES } from "../generated/unicode61-tables";

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
      for (let k = 0; k < FOLD_RUNS[i + 1]; k++)
        folds.set(FOLD_RUNS[i] + k * FOLD_RUNS[i + 3], FOLD_RUNS[i] + k * FOLD_RUNS[i + 3] + FOLD_RUNS[i + 2]);
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
 * unicode61's scan (tables in src/generated/unicode61-tables.ts, measured from SQLite): token characters folded, combining
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
      if (cp >= 0x41 && cp <= 0x5a) {
        token += String.fromCharCode(cp + 32);
        continue;
      }
      if ((cp >= 0x61 && cp <= 0x7a) || (cp >= 0x30 && cp <= 0x39) || (underscore && cp === 0x5f)) {
        token += ch;
        continue;
      }
    } else {
      if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd; // a lone surrogate reaches SQLite as U+FFFD
      if (isTokenChar(cp)) {
        token += String.fromCodePoint(fold(cp));
        continue;
      }
      if (token && DIACRITIC.has(cp)) continue;
    }
    if (token) {
      out.push(token);
      token = "";
    }
  }
  if (token) out.push(token);
  return out;
}
