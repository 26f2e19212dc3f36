// Porter's stemmer exactly as SQLite's FTS5 "porter" tokenizer applies it (claims_fts), on the tokens
// of ./unicode61.ts.

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
  ["ational", "ate"],
  ["tional", "tion"],
  ["enci", "ence"],
  ["anci", "ance"],
  ["izer", "ize"],
  ["logi", "log"],
  ["bli", "ble"],
  ["alli", "al"],
  ["entli", "ent"],
  ["eli", "e"],
  ["ousli", "ous"],
  ["ization", "ize"],
  ["ation", "ate"],
  ["ator", "ate"],
  ["alism", "al"],
  ["iveness", "ive"],
  ["fulness", "ful"],
  ["ousness", "ous"],
  ["aliti", "al"],
  ["iviti", "ive"],
  ["biliti", "ble"],
];
const STEP3: Rule[] = [
  ["ical", "ic"],
  ["ness", ""],
  ["icate", "ic"],
  ["iciti", "ic"],
  ["ful", ""],
  ["ative", ""],
  ["alize", "al"],
];
const STEP4 = [
  "al",
  "ance",
  "ence",
  "er",
  "ic",
  "able",
  "ible",
  "ant",
  "ement",
  "ment",
  "ent",
  "ion",
  "ou",
  "ism",
  "ate",
  "iti",
  "ous",
  "ive",
  "ize",
];

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
