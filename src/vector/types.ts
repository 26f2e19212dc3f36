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

export interface VectorIndex {
  readonly provider: Exclude<IndexProvider, "none">;
  upsert(items: { id: string; values: Float32Array }[]): Promise<void>;
  remove(ids: string[]): Promise<void>;
  /**
   * The `topK` (at most MAX_TOP_K) nearest ids among those `accept` admits, best first (ties: smaller
   * id first). Authorized kNN: the answer is the top k of the admitted ids alone, so it never depends
   * on a vector whose id `accept` refuses. Never returns values or metadata.
   */
  query(values: Float32Array, topK: number, accept: AcceptIds): Promise<VectorHit[]>;
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
  constructor(readonly backend: "embedding" | "index" | "extraction", cause: unknown) {
    super(`${backend} backend unavailable`);
    this.cause = cause;
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
