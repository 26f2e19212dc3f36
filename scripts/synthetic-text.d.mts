// Types of scripts/synthetic-text.mjs for the TypeScript benches and tests.
export function prng(seed: number): () => number;
export interface ZipfText {
  word(rand: () => number): string;
  informativeWord(rand: () => number): string;
  statement(rand: () => number): string;
  queryWords(rand: () => number, n?: number): string;
}
export function zipfText(vocab: readonly string[], stopwords: ReadonlySet<string>): ZipfText;
