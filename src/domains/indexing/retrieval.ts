// Vector candidates for compile: the query's nearest claim ids and similarities. Only ids come back
// from the index; ranking fetches them through the same SQL filter as every other candidate
// (authorization, status, validity, kinds), so a hit the caller may not read never scores.
import { hasVectors, type VectorRuntime } from "../../vector/runtime";
import { MAX_TOP_K, VectorBackendError } from "../../vector/types";

/** Nearest ids with their cosine similarity, or null when vectors were not used for this query. */
export async function vectorHits(rt: VectorRuntime, query: string | undefined): Promise<Map<string, number> | null> {
  if (!query?.trim() || !hasVectors(rt)) return null;
  try {
    const [q] = await rt.embedder.embed([query]);
    const hits = await rt.index.query(q, MAX_TOP_K);
    return new Map(hits.filter((h) => h.id.startsWith("claim_")).map((h) => [h.id, h.score]));
  } catch (err) {
    // Retrieval degrades to lexical (meta.degraded.vectors stays true); it never fails the compile.
    if (err instanceof VectorBackendError) return null;
    throw err;
  }
}
