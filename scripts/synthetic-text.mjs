// Deterministic synthetic text for benches and tests: a seeded generator, and statements and queries
// drawn with Zipf(1.07) over a vocabulary by rank (a few words are everywhere, most are rare, as in
// real text). Plain JavaScript with no runtime API, so the node scripts (scripts/bench-lib.mjs), the
// in-process benches and the tests (test/helpers.ts) draw the same data from one definition.

/** A seeded pseudo-random generator (mulberry32) in [0, 1): data that repeats run to run. */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Words of `vocab` (most frequent first) drawn by Zipf(1.07); queries leave out `stopwords`. */
export function zipfText(vocab, stopwords) {
  const cdf = (() => {
    const w = vocab.map((_, r) => 1 / Math.pow(r + 1, 1.07));
    const total = w.reduce((a, b) => a + b, 0);
    let acc = 0;
    return w.map((x) => (acc += x / total));
  })();
  const word = (rand) => {
    const u = rand();
    let lo = 0,
      hi = cdf.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    return vocab[lo];
  };
  /** A word that is not a stopword: what an agent's query is made of. */
  const informativeWord = (rand) => {
    for (;;) {
      const w = word(rand);
      if (!stopwords.has(w)) return w;
    }
  };
  return {
    word,
    informativeWord,
    /** A claim's statement: 10-30 words, stopwords included, as in running text. */
    statement: (rand) => Array.from({ length: 10 + Math.floor(rand() * 21) }, () => word(rand)).join(" "),
    /** A compile query: `n` informative words. */
    queryWords: (rand, n = 4) => Array.from({ length: n }, () => informativeWord(rand)).join(" "),
  };
}
