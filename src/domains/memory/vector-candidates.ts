// Vector candidates for compile: the query's nearest claim ids and similarities, found by authorized
// kNN. The index is asked with the caller's ways to read a claim (policy.ts readableWayConditions, as
// metadata filters narrowed by compile's filters: src/vector/metadata.ts) and with `accept`, the compile
// candidate predicate itself (compile.ts candidateRowsAmong: retrievable, current, under compile's
// filters); it takes the top k among what those let the caller receive, never the organization-wide top
// k filtered afterwards, so neither which hits come back nor their scores depend on a record the caller
// cannot read (each backend's header says how). Ranking then re-authorizes the hits inside compile's
// transaction through the same filter as every other candidate: the rows the accept read are carried
// there (`ahead`) and taken only when nothing was written since (compile.ts CandidatesReadAhead), else
// read again.
import { ID_PREFIX } from "../../http/ids";
import type { Db } from "../../sql/db";
import type { Caller } from "../../org/request";
import { hasVectors, type VectorRuntime } from "../../vector/runtime";
import { readableWayConditions } from "../../access/policy";
import { wayFilters } from "../../vector/metadata";
import { MAX_TOP_K, type VectorAsk, VectorBackendError } from "../../vector/types";
import { type CandidateFilter, candidateRowsAmong, readAhead, type VectorSimilarities } from "./compile";

/** Vector hits per compile (the index's query limit). */
export const VECTOR_CANDIDATES = MAX_TOP_K;

/**
 * Nearest ids with their cosine similarity, and the rows the accept read for them; null when vectors
 * were not used for this query.
 */
export async function vectorHits(
  rt: VectorRuntime,
  db: Db,
  caller: Caller,
  f: CandidateFilter & { query?: string },
): Promise<VectorSimilarities | null> {
  if (!f.query?.trim() || !hasVectors(rt)) return null;
  try {
    const [q] = await rt.embedder.embed([f.query]);
    // A query none of whose words the embedder knows embeds to zero: it has no direction, so no claim
    // is near it (every cosine is 0, and the "nearest" would be the smallest ids). Vectors were asked
    // and found nothing; nothing joins the candidates.
    if (!q.some((x) => x !== 0)) return { similarities: new Map() };
    const ahead = readAhead(db, caller, f);
    const accept = (ids: string[]) =>
      candidateRowsAmong(
        db,
        caller,
        f,
        ids.filter((id) => id.startsWith(ID_PREFIX.claim)),
        ahead,
      );
    const ask: VectorAsk = { ways: wayFilters(readableWayConditions(caller), f), accept };
    const hits = await rt.index.query(q, VECTOR_CANDIDATES, ask);
    // Only claims that point the query's way are near it: a cosine of 0 or less says nothing in common.
    return { similarities: new Map(hits.filter((h) => h.score > 0).map((h) => [h.id, h.score])), ahead };
  } catch (err) {
    // Retrieval degrades to lexical (meta.degraded.vectors stays true); it never fails the compile.
    if (err instanceof VectorBackendError) return null;
    throw err;
  }
}
