// Turning free text into a safe FTS5 query: words only (no operators from the client), each quoted.
const WORD = /[\p{L}\p{N}_]+/gu;
const MAX_TERMS = 32;

export function queryTerms(text: string | undefined): string[] {
  if (!text) return [];
  const seen = new Set<string>();
  for (const m of text.toLowerCase().matchAll(WORD)) {
    seen.add(m[0]);
    if (seen.size >= MAX_TERMS) break;
  }
  return [...seen];
}

/** All terms must match (memories search). */
export const matchAll = (terms: string[]) => terms.map((t) => `"${t}"`).join(" ");
/** Any term may match (compile candidate selection; bm25 ranks by how many and how rare). */
export const matchAny = (terms: string[]) => terms.map((t) => `"${t}"`).join(" OR ");
