// Production index: one Vectorize index (cosine, 384 dimensions) shared by all organizations, one
// namespace per organization, vector id = record id, each vector with the metadata its record's read
// rule decides on (src/vector/metadata.ts). Upserts and deletes are asynchronous (a
// mutation id); describe().processedUpToDatetime tells how far they apply.
//
// Authorized kNN, one query per way. The asker passes the ways it may read a record (policy.ts
// readableWayConditions: team records outside workspaces, its own, each readable workspace's team
// records and, for a workspace admin or owner, its private ones, each grant's projects or subjects)
// as metadata filters. Vectorize ANDs the conditions of one filter and has no OR, so each way is one
// query in the organization's namespace (topK 100, no values, no metadata), all in parallel; the
// answers are merged by score (then id) and every hit is re-checked by the asker's `accept`, the read
// rule itself, so status, validity, retention and kinds still gate.
//
// Why no hit depends on a vector the asker cannot read: a way's filter admits only vectors that way
// makes readable, and Vectorize applies the filter before it takes the top k, so each way's answer is
// the top k of vectors the asker may read through it; a vector it may not read is in no way's
// candidates, so it can neither take a place nor push one out. The merge keeps the best of the union,
// which is the top k of everything readable: a vector in that top k is in the top k of every way that
// admits it. (That holds for the candidates; within a filter, Vectorize searches approximately, by its
// own index structure, as for any query.) Two bounds to this, both about records the asker may read or the organization's size,
// never which other vectors exist: hits refused by `accept` (a claim revoked or expired since its
// vector was written, a kind not asked) leave their places empty rather than reach further (topK is
// at most 100), and metadata lags a write until Vectorize applies the re-upsert (the outbox queues it
// in the write's transaction; `accept` drops what no longer passes).
//
// Small organizations are answered by the mirror instead: the local index (written with every upsert
// and delete) answers exactly, in memory, without a network round trip, while it holds the
// organization within its bound (local-index.ts, 32 MiB: 65,536 vectors of 384 dimensions);
// above it, Vectorize answers. Which of the two answers depends only on the organization's vector count.
import type { LocalVectorIndex } from "./local-index";
import { guardBackend, MAX_TOP_K, type VectorAsk, type VectorHit, type VectorIndex, type VectorItem } from "./types";

/** The slice of the Vectorize binding this module calls, so a typed fake can stand in for it in tests. */
export type VectorizeBinding = Pick<Vectorize, "upsert" | "deleteByIds" | "query" | "getByIds" | "describe">;

/** Ids per getByIds / deleteByIds call, and vectors per upsert call (Vectorize takes up to 1,000 per upsert from a Worker). */
export const VECTORIZE_BATCH = 100;

/** What a query of one way asks: ids and scores only, so topK may be 100 (20 with values or metadata). */
export const wayQueryOptions = (
  namespace: string,
  filter: VectorizeQueryOptions["filter"],
  topK: number,
): VectorizeQueryOptions => ({
  topK,
  namespace,
  returnValues: false,
  returnMetadata: "none",
  ...(filter && Object.keys(filter).length ? { filter } : {}),
});

/** What one query answered: how many ways were asked and how many distinct ids came back. */
export interface VectorizeQueryStats {
  queries: number;
  waysAsked: number;
  idsReturned: number;
  answeredByMirror: number;
}

export class VectorizeIndexBackend implements VectorIndex {
  readonly provider = "vectorize" as const;
  readonly stats: VectorizeQueryStats = { queries: 0, waysAsked: 0, idsReturned: 0, answeredByMirror: 0 };
  /** `mirror`: the organization's local index (production); null: Vectorize answers every query (tests of that path). */
  constructor(
    private readonly index: VectorizeBinding,
    private readonly namespace: string,
    private readonly mirror: LocalVectorIndex | null,
  ) {}

  async upsert(items: VectorItem[]): Promise<void> {
    for (let i = 0; i < items.length; i += VECTORIZE_BATCH) {
      const batch = items
        .slice(i, i + VECTORIZE_BATCH)
        .map((it) => ({ id: it.id, values: it.values, namespace: this.namespace, metadata: it.metadata }));
      await guardBackend("index", () => this.index.upsert(batch));
    }
    await this.mirror?.upsert(items);
  }

  async remove(ids: string[]): Promise<void> {
    // Vectorize ids are global to the index; record ids are globally unique, so deleting by id only
    // ever touches this organization's vectors.
    for (let i = 0; i < ids.length; i += VECTORIZE_BATCH)
      await guardBackend("index", () => this.index.deleteByIds(ids.slice(i, i + VECTORIZE_BATCH)));
    await this.mirror?.remove(ids);
  }

  async query(values: Float32Array, topK: number, ask: VectorAsk): Promise<VectorHit[]> {
    const k = Math.min(MAX_TOP_K, Math.max(1, topK));
    this.stats.queries++;
    const mirror = this.mirror;
    if (mirror && (await guardBackend("index", async () => mirror.answers(values.length)))) {
      this.stats.answeredByMirror++;
      return mirror.query(values, k, ask);
    }
    const answers = await Promise.all(
      ask.ways.map((filter) =>
        guardBackend("index", () => this.index.query(values, wayQueryOptions(this.namespace, filter, MAX_TOP_K))),
      ),
    );
    this.stats.waysAsked += ask.ways.length;
    // The same vector has the same score in every way that returns it.
    const best = new Map<string, number>();
    for (const a of answers) for (const m of a.matches) if (!best.has(m.id)) best.set(m.id, m.score);
    this.stats.idsReturned += best.size;
    const merged = [...best]
      .map(([id, score]) => ({ id, score }))
      .sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const ok = merged.length ? ask.accept(merged.map((h) => h.id)) : new Set<string>();
    return merged.filter((h) => ok.has(h.id)).slice(0, k);
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
