// The two seams of vector retrieval: an Embedder turns text into unit vectors, a VectorIndex stores
// and searches them per organization. Every backend (Workers AI + Vectorize in production, the
// embedded local ones, any OpenAI-compatible embeddings endpoint) implements these and runs against the same contract suite
// (test/vector-contract.test.ts). Backends are chosen by configuration (config.ts), never by
// whether a binding happens to exist.

/** The values EMBEDDING_PROVIDER, VECTOR_INDEX and EXTRACTION_PROVIDER may take (config.ts), as published. */
export const EMBEDDING_PROVIDERS = ["workers-ai", "local", "openai-compatible", "none"] as const;
export const INDEX_PROVIDERS = ["vectorize", "local", "none"] as const;
export const EXTRACTION_PROVIDERS = ["workers-ai", "none"] as const;
export type EmbeddingProvider = (typeof EMBEDDING_PROVIDERS)[number];
export type IndexProvider = (typeof INDEX_PROVIDERS)[number];
export type ExtractionProvider = (typeof EXTRACTION_PROVIDERS)[number];

export interface Embedder {
  readonly provider: Exclude<EmbeddingProvider, "none">;
  readonly model: string;
  /** The length of its vectors (an endpoint that does not declare it: the last answer's, 0 before the first). */
  readonly dimensions: number;
  /** One unit-length vector per text, in order. Throws VectorBackendError when the model is unreachable. */
  embed(texts: string[]): Promise<Float32Array[]>;
}

export interface VectorHit {
  id: string;
  /** Cosine similarity, -1..1. */
  score: number;
}

/**
 * Which of these ids the asker may receive: the compile candidate predicate (memory/compile.ts
 * candidateRowsAmong: retrievable, current, of the kinds) as a set. Synchronous: a read of the
 * organization's own SQLite.
 */
export type AcceptIds = (ids: string[]) => Set<string>;

/** Admits every id (index maintenance and the contract tests, never compile). */
export const ACCEPT_ALL: AcceptIds = (ids) => new Set(ids);

/** A metadata value as Vectorize stores and filters it (a string index holds the first 64 bytes). */
export type MetadataValue = string | number | boolean;

/** What a vector carries beside its values: flat key -> value (Vectorize metadata). */
export type VectorMetadata = Record<string, MetadataValue>;

/**
 * One metadata condition in Vectorize's filter language: a bare value (equality), or one documented
 * operator: $eq / $ne (a value or null), $in / $nin (an array of values).
 */
export type FilterCondition =
  | MetadataValue
  | null
  | { $eq: MetadataValue | null }
  | { $ne: MetadataValue | null }
  | { $in: MetadataValue[] }
  | { $nin: MetadataValue[] };

/** A metadata filter: every condition must hold (Vectorize ANDs them; it has no OR). {}: no condition. */
export type VectorFilter = Record<string, FilterCondition>;

/**
 * Who is asking, as the index can use it: `ways`, the metadata filters of each way the asker may read
 * a record (their OR is what it may read), and `accept`, the read rule itself over ids. The asker
 * guarantees that `accept` admits only ids whose metadata matches one of `ways` (ways are the read
 * rule's decomposition), so a backend may narrow by either and must re-check by `accept`.
 */
export interface VectorAsk {
  ways: VectorFilter[];
  accept: AcceptIds;
}

/** Every vector may be received (index maintenance and the contract tests, never compile). */
export const ASK_ALL: VectorAsk = { ways: [{}], accept: ACCEPT_ALL };

export interface VectorItem {
  id: string;
  values: Float32Array;
  /** The fields the ways filter on (src/vector/metadata.ts); the local index keeps none. */
  metadata: VectorMetadata;
}

export interface VectorIndex {
  readonly provider: Exclude<IndexProvider, "none">;
  /** Inserts or replaces each vector with its metadata (a changed record is upserted again). */
  upsert(items: VectorItem[]): Promise<void>;
  remove(ids: string[]): Promise<void>;
  /**
   * The `topK` (at most MAX_TOP_K) nearest ids among those `ask` lets the asker receive, best first
   * (ties: smaller id first). Authorized kNN: which ids come back never depends on a vector the asker
   * may not receive (each backend's header says why). Never returns values or metadata. Throws
   * IndexAboveBound when the backend cannot answer at the organization's size (compile then ranks
   * without vectors).
   */
  query(values: Float32Array, topK: number, ask: VectorAsk): Promise<VectorHit[]>;
  /** Which of `ids` the index holds now (ids only: embedding values are never read back). */
  present(ids: string[]): Promise<Set<string>>;
  /**
   * For indexes that apply upserts asynchronously: the time (ms) up to which mutations are applied.
   * An id upserted after it may not be visible yet (pending, not missing). null: synchronous.
   */
  appliedUpTo(): Promise<number | null>;
}

/** Vectorize's query limit when values and metadata are not returned. */
export const MAX_TOP_K = 100;

/** The model or the index could not be reached: callers answer 503 UNAVAILABLE and keep the queue. */
export class VectorBackendError extends Error {
  constructor(
    readonly backend: "embedding" | "index" | "extraction",
    cause: unknown,
  ) {
    super(`${backend} backend unavailable`);
    this.cause = cause;
  }
}

/**
 * The local index holds more vectors than its memory bound (local-index.ts): it answers no query,
 * and compile ranks without vectors (meta.degraded.vectors) until the organization is back under it.
 */
export class IndexAboveBound extends VectorBackendError {
  constructor(
    readonly vectors: number,
    readonly bound: number,
  ) {
    super("index", new Error(`the local vector index holds ${vectors} vectors, above its bound of ${bound}`));
  }
}

/** Run a backend call; any failure becomes a VectorBackendError naming the backend. */
export async function guardBackend<T>(backend: VectorBackendError["backend"], work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw err instanceof VectorBackendError ? err : new VectorBackendError(backend, err);
  }
}

export function normalize(v: Float32Array): Float32Array {
  let n = 0;
  for (let i = 0; i < v.length; i++) n += v[i] * v[i];
  n = Math.sqrt(n);
  if (n > 0) for (let i = 0; i < v.length; i++) v[i] /= n;
  return v;
}
