// Which Vectorize index holds an organization's vectors, when a deployment configures several (one
// index holds 50,000 namespaces and 10 million vectors). Rendezvous hashing: every organization
// scores every index and takes the highest, so the answer depends only on (orgId, the set of names):
// not on their order, and adding an index moves only the organizations the new index wins (about
// 1/n of them), removing one moves only its own. Moved organizations need their vectors re-indexed.
// Pure, and not wired: a deployment binds one Vectorize index (VECTORIZE); binding several and
// routing the index drain and queries through this choice is not built.

/** 32-bit FNV-1a with a murmur3 finalizer, so near-identical inputs spread over the whole range. */
function score(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The index name for an organization; throws on an empty list (a deployment error, not a request error). */
export function vectorIndexFor(orgId: string, indexNames: readonly string[]): string {
  if (!indexNames.length) throw new Error("no vector index configured");
  let best = indexNames[0];
  let bestScore = -1;
  for (const name of indexNames) {
    const s = score(`${orgId}\u0000${name}`);
    // Ties (vanishingly rare) break by name, so list order never matters.
    if (s > bestScore || (s === bestScore && name < best)) {
      best = name;
      bestScore = s;
    }
  }
  return best;
}
