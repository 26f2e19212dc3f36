// Production index: one Vectorize index (cosine, 384 dimensions) shared by all organizations, one
// namespace per organization, vector id = record id. Queries return ids and scores only
// (returnValues false, returnMetadata "none"). Upserts and deletes are asynchronous (a mutation id);
// describe().processedUpToDatetime tells how far they apply.
//
// Authorized kNN: the read predicate (visibility, grants, workspace roles, validity, retention) is not
// something Vectorize metadata filters can express (grants and roles change without the vector
// changing). Over-fetching Vectorize's nearest and filtering them is not enough either: which readable
// claims make its top 100 (and whether a fallback is needed at all) depends on the unreadable vectors
// lying near the query, so a private claim of someone else could change another caller's answer. So
// queries are answered by the organization's exact int8 mirror (the local index, written with every
// upsert and delete), which filters before taking its top k; Vectorize is the durable copy that
// verify reads and a future audience-partitioned query path can use.
import type { LocalVectorIndex } from "./local-index";
import { type AcceptIds, guardBackend, MAX_TOP_K, type VectorHit, type VectorIndex } from "./types";

/** The slice of the Vectorize binding this module calls, so a typed fake can stand in for it in tests. */
export type VectorizeBinding = Pick<Vectorize, "upsert" | "deleteByIds" | "query" | "getByIds" | "describe">;

/** Ids per getByIds / deleteByIds call, and vectors per upsert call. */
export const VECTORIZE_BATCH = 100;

export class VectorizeIndexBackend implements VectorIndex {
  readonly provider = "vectorize" as const;
  constructor(private readonly index: VectorizeBinding, private readonly namespace: string, private readonly mirror: LocalVectorIndex) {}

  async upsert(items: { id: string; values: Float32Array }[]): Promise<void> {
    for (let i = 0; i < items.length; i += VECTORIZE_BATCH) {
      const batch = items.slice(i, i + VECTORIZE_BATCH).map((it) => ({ id: it.id, values: it.values, namespace: this.namespace }));
      await guardBackend("index", () => this.index.upsert(batch));
    }
    await this.mirror.upsert(items);
  }

  async remove(ids: string[]): Promise<void> {
    // Vectorize ids are global to the index; record ids are globally unique, so deleting by id only
    // ever touches this organization's vectors.
    for (let i = 0; i < ids.length; i += VECTORIZE_BATCH)
      await guardBackend("index", () => this.index.deleteByIds(ids.slice(i, i + VECTORIZE_BATCH)));
    await this.mirror.remove(ids);
  }

  async query(values: Float32Array, topK: number, accept: AcceptIds): Promise<VectorHit[]> {
    return this.mirror.query(values, Math.min(MAX_TOP_K, Math.max(1, topK)), accept);
  }

  async present(ids: string[]): Promise<Set<string>> {
    const have = new Set<string>();
    for (let i = 0; i < ids.length; i += VECTORIZE_BATCH) {
      const got = await guardBackend("index", () => this.index.getByIds(ids.slice(i, i + VECTORIZE_BATCH)));
      // getByIds also returns values; only the id (and namespace, to stay within the organization) is read.
      for (const v of got) if (v.namespace === undefined || v.namespace === this.namespace) have.add(v.id);
    }
    return have;
  }

  async appliedUpTo(): Promise<number | null> {
    const info = await guardBackend("index", () => this.index.describe());
    return info.processedUpToDatetime;
  }
}
