// Typed fakes of the Workers AI and Vectorize bindings (no network): the production backends run
// against them in tests, including failures and Vectorize's asynchronous mutations. FakeVectorize keeps
// Vectorize's documented rules (developers.cloudflare.com/vectorize: "Limits", "Insert vectors", "Query
// vectors", "Metadata filtering") and refuses what Vectorize refuses, so a backend that would fail in
// production fails here:
// - namespaces: at most 64 bytes, 50,000 per index; a query with one sees only its vectors;
// - metadata filters applied before the top k is taken, every condition must hold, and only on
//   properties that had a metadata index when the vector was written (a string filters on its first
//   64 bytes); a bare value is $eq; $eq / $ne take a string, number, boolean or null, $in / $nin an
//   array of those, $lt / $lte / $gt / $gte a string or number (strings in lexicographic order); one
//   property's operators combine only as an upper bound ($lt / $lte) with a lower one ($gt / $gte);
//   a key with a dot names a nested property;
// - a filter is a non-empty object under 2,048 bytes of compact JSON whose keys are not empty, hold no
//   `"`, do not start with `$` and are at most 512 characters;
// - topK at most 100 without values or metadata, at most 20 with either (returnMetadata "indexed"
//   counts as metadata);
// - at most 10 metadata indexes; ids at most 64 bytes; 1,000 vectors per upsert from a Worker; 10 KiB
//   of metadata per vector, whose keys are not empty, hold no `.` or `"` and do not start with `$`;
//   values of the index's dimensions.
import { WORKERS_AI_EMBEDDING } from "../../src/vector/config";
import type { EmbeddingAi } from "../../src/vector/workers-ai";
import type { VectorizeBinding } from "../../src/vector/vectorize";
import { METADATA_INDEXES } from "../../src/vector/metadata";

/** A deterministic 384-dimension "model": hashed words, so texts sharing words are similar. */
export function fakeEmbedding(text: string, dims = WORKERS_AI_EMBEDDING.dimensions): number[] {
  const v = new Array<number>(dims).fill(0);
  for (const w of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    let h = 2166136261;
    for (let i = 0; i < w.length; i++) h = Math.imul(h ^ w.charCodeAt(i), 16777619) >>> 0;
    v[h % dims] += h & 1 ? 1 : -1;
    v[(h >>> 9) % dims] += 0.5;
  }
  return v;
}

export class FakeAi implements EmbeddingAi {
  failing = false;
  calls: { model: string; inputs: unknown }[] = [];
  /** Answer for text-generation models (extraction). */
  generation = '[{"kind":"fact","statement":"The proposal from the fake model"}]';
  run = (async (model: string, inputs: { text?: string[]; pooling?: string; messages?: unknown[] }) => {
    this.calls.push({ model, inputs });
    if (this.failing) throw new Error("fake Workers AI: 503 upstream");
    if (model === WORKERS_AI_EMBEDDING.model) {
      const data = (inputs.text ?? []).map((t) => fakeEmbedding(t));
      return { shape: [data.length, WORKERS_AI_EMBEDDING.dimensions], data, pooling: inputs.pooling };
    }
    return { response: this.generation };
  }) as unknown as EmbeddingAi["run"];
}

type Scalar = string | number | boolean;

/** Namespaces per index (Workers Paid). */
export const MAX_NAMESPACES = 50_000;
type IndexType = "string" | "number" | "boolean";

interface Stored {
  id: string;
  values: number[];
  namespace?: string;
  metadata?: Record<string, VectorizeVectorMetadata>;
  /** What each metadata index held for this vector when it was written (only those existing then). */
  indexed: Map<string, Scalar | null>;
}

const utf8 = new TextEncoder();
const bytes = (s: string) => utf8.encode(s).length;

/** A string's first 64 bytes on a UTF-8 character boundary: what a string metadata index holds. */
export function first64Bytes(s: string): string {
  let out = "";
  let n = 0;
  for (const ch of s) {
    const b = bytes(ch);
    if (n + b > 64) break;
    out += ch;
    n += b;
  }
  return out;
}

const OPERATORS = new Set(["$eq", "$ne", "$in", "$nin", "$lt", "$lte", "$gt", "$gte"]);
const UPPER = new Set(["$lt", "$lte"]);
const LOWER = new Set(["$gt", "$gte"]);
const refuse = (why: string): never => {
  throw new Error(`VECTOR_QUERY_ERROR (fake Vectorize): ${why}`);
};

/** A metadata key as upserted: not empty, no `.` (it names nesting) or `"`, not starting with `$`. */
function checkMetadataKey(key: string) {
  if (!key || key.includes('"') || key.includes(".") || key.startsWith("$")) refuse(`invalid metadata key "${key}"`);
}

/** A filter key or metadata index property: as a metadata key, but a `.` names a nested property; at most 512 characters. */
function checkFilterKey(key: string, what: string) {
  if (!key || key.includes('"') || key.startsWith("$") || key.length > 512) refuse(`invalid ${what} key "${key}"`);
}

const isScalar = (v: unknown): v is Scalar => typeof v === "string" || typeof v === "number" || typeof v === "boolean";

/** The property a (possibly dotted) key names in a vector's metadata. */
function propertyOf(metadata: Record<string, unknown> | undefined, key: string): unknown {
  let at: unknown = metadata;
  for (const part of key.split("."))
    at =
      at !== null && typeof at === "object" && !Array.isArray(at) ? (at as Record<string, unknown>)[part] : undefined;
  return at;
}

/** Refuses a condition Vectorize refuses: an unknown operator, an argument of a type the operator does not take, a combination it does not allow. */
function checkCondition(condition: unknown) {
  if (condition === null || isScalar(condition)) return;
  if (typeof condition !== "object" || Array.isArray(condition)) refuse("a condition is a value or an operator object");
  const ops = Object.keys(condition as object);
  if (!ops.length) refuse("an operator object needs an operator");
  for (const op of ops) if (!OPERATORS.has(op)) refuse(`unknown operator ${op}`);
  const upper = ops.filter((op) => UPPER.has(op)),
    lower = ops.filter((op) => LOWER.has(op));
  if (ops.length > 1 && !(ops.length === 2 && upper.length === 1 && lower.length === 1))
    refuse(`operators ${ops.join(", ")} cannot be combined (only an upper bound with a lower bound)`);
  for (const [op, arg] of Object.entries(condition as Record<string, unknown>)) {
    if (op === "$in" || op === "$nin") {
      if (!Array.isArray(arg) || !arg.every((v) => v === null || isScalar(v)))
        refuse(`${op} takes an array of strings, numbers, booleans or null`);
    } else if (op === "$eq" || op === "$ne") {
      if (arg !== null && !isScalar(arg)) refuse(`${op} takes a string, number, boolean or null`);
    } else if (typeof arg !== "string" && typeof arg !== "number") refuse(`${op} takes a string or number`);
  }
}

/** Does one indexed value satisfy one (checked) filter condition? */
function satisfies(have: Scalar | null, condition: unknown): boolean {
  const norm = (v: unknown) => (typeof v === "string" ? first64Bytes(v) : v);
  if (condition === null || typeof condition !== "object") return norm(condition) === have;
  return Object.entries(condition as Record<string, unknown>).every(([op, arg]) => {
    if (op === "$in" || op === "$nin") {
      const hit = (arg as unknown[]).some((v) => norm(v) === have);
      return op === "$in" ? hit : !hit;
    }
    if (op === "$eq") return norm(arg) === have;
    if (op === "$ne") return norm(arg) !== have;
    if (have === null || typeof have !== typeof arg) return false;
    const a = have as string | number,
      b = norm(arg) as string | number;
    return op === "$lt" ? a < b : op === "$lte" ? a <= b : op === "$gt" ? a > b : a >= b;
  });
}

/**
 * Vectorize with asynchronous mutations: upserts and deletes are queued with a mutation id and applied
 * only by `apply()` (as Vectorize applies them some time later); describe() reports how far it got.
 * `autoApply`: every mutation applies at once (tests that are not about the delay).
 */
export class FakeVectorize implements VectorizeBinding {
  failing = false;
  autoApply = false;
  private stored = new Map<string, Stored>();
  private queue: { at: number; op: () => void }[] = [];
  private appliedAt = 0;
  private seq = 0;
  private metadataIndexes = new Map<string, IndexType>();
  /** Mutation times come from here (tests move it). */
  now = () => Date.now();
  /** Every query's options, to check topK and that values/metadata are never requested. */
  queries: VectorizeQueryOptions[] = [];
  /** The id of every vector upserted, in order. */
  upserted: string[] = [];

  /** An index of `dimensions` (the production index: 384), with the service's metadata indexes unless `metadataIndexes` is false. */
  constructor(
    readonly dimensions: number = WORKERS_AI_EMBEDDING.dimensions,
    opts: { metadataIndexes?: boolean } = {},
  ) {
    if (opts.metadataIndexes !== false)
      for (const m of METADATA_INDEXES) this.createMetadataIndex(m.property, m.type as IndexType);
  }

  /** `wrangler vectorize create-metadata-index`: filters on the property see only vectors written after it. */
  createMetadataIndex(property: string, type: IndexType): void {
    checkFilterKey(property, "metadata index");
    if (this.metadataIndexes.has(property)) refuse(`a metadata index on "${property}" already exists`);
    if (this.metadataIndexes.size >= 10) refuse("at most 10 metadata indexes per index");
    this.metadataIndexes.set(property, type);
  }

  private check() {
    if (this.failing) throw new Error("fake Vectorize: 503 upstream");
  }

  private mutate(op: () => void): VectorizeAsyncMutation {
    this.queue.push({ at: this.now(), op });
    if (this.autoApply) this.apply();
    return { mutationId: `m${++this.seq}` };
  }

  async upsert(vectors: VectorizeVector[]): Promise<VectorizeAsyncMutation> {
    this.check();
    if (vectors.length > 1000) refuse("at most 1000 vectors per upsert from a Worker");
    const copies: Stored[] = vectors.map((v) => {
      if (!v.id || bytes(v.id) > 64) refuse(`vector id "${v.id}" must be 1 to 64 bytes`);
      if (v.namespace !== undefined && bytes(v.namespace) > 64) refuse("a namespace is at most 64 bytes");
      if (v.values.length !== this.dimensions)
        refuse(`${v.values.length} dimensions, the index has ${this.dimensions}`);
      if (v.metadata && bytes(JSON.stringify(v.metadata)) > 10 * 1024) refuse("at most 10 KiB of metadata per vector");
      const checkKeys = (m: unknown): void => {
        if (m === null || typeof m !== "object" || Array.isArray(m)) return;
        for (const [key, inner] of Object.entries(m)) {
          checkMetadataKey(key);
          checkKeys(inner);
        }
      };
      checkKeys(v.metadata);
      const indexed = new Map<string, Scalar | null>();
      for (const [property, type] of this.metadataIndexes) {
        const value = propertyOf(v.metadata, property);
        // A value of another type than the index's is not indexed: the vector has none there.
        indexed.set(
          property,
          typeof value === type ? (type === "string" ? first64Bytes(value as string) : (value as Scalar)) : null,
        );
      }
      return {
        id: v.id,
        values: Array.from(v.values),
        namespace: v.namespace,
        metadata: v.metadata ? { ...v.metadata } : undefined,
        indexed,
      };
    });
    const namespaces = new Set([...this.stored.values()].map((v) => v.namespace));
    for (const v of copies) namespaces.add(v.namespace);
    namespaces.delete(undefined);
    if (namespaces.size > MAX_NAMESPACES) refuse(`at most ${MAX_NAMESPACES} namespaces per index`);
    this.upserted.push(...copies.map((v) => v.id));
    return this.mutate(() => {
      for (const v of copies) this.stored.set(v.id, v);
    });
  }

  async deleteByIds(ids: string[]): Promise<VectorizeAsyncMutation> {
    this.check();
    const copy = [...ids];
    return this.mutate(() => {
      for (const id of copy) this.stored.delete(id);
    });
  }

  /** Apply every queued mutation (Vectorize catching up). */
  apply(): void {
    for (const m of this.queue) {
      m.op();
      this.appliedAt = Math.max(this.appliedAt, m.at);
    }
    this.queue = [];
  }

  /** Does the vector match the filter (every condition, on a property it has indexed)? */
  private matches(v: Stored, filter: VectorizeVectorMetadataFilter): boolean {
    return Object.entries(filter).every(
      ([property, condition]) => v.indexed.has(property) && satisfies(v.indexed.get(property)!, condition),
    );
  }

  async query(vector: VectorFloatArray | number[], options: VectorizeQueryOptions = {}): Promise<VectorizeMatches> {
    this.check();
    this.queries.push(options);
    const topK = options.topK ?? 5;
    const withValues = options.returnValues === true;
    const metadataLevel =
      options.returnMetadata === true
        ? "all"
        : options.returnMetadata === false || options.returnMetadata === undefined
          ? "none"
          : options.returnMetadata;
    const max = withValues || metadataLevel !== "none" ? 20 : 100;
    if (!Number.isInteger(topK) || topK < 1 || topK > max)
      refuse(`topK ${topK}: 1 to ${max} ${max === 20 ? "with values or metadata" : "without values and metadata"}`);
    if (vector.length !== this.dimensions)
      refuse(`query of ${vector.length} dimensions, the index has ${this.dimensions}`);
    if (options.namespace !== undefined && bytes(options.namespace) > 64) refuse("a namespace is at most 64 bytes");
    const filter = options.filter;
    if (filter !== undefined) {
      if (filter === null || typeof filter !== "object" || Array.isArray(filter) || !Object.keys(filter).length)
        refuse("filter must be a non-empty object");
      if (bytes(JSON.stringify(filter)) >= 2048) refuse("filter must be under 2048 bytes of compact JSON");
      for (const [key, condition] of Object.entries(filter)) {
        checkFilterKey(key, "filter");
        checkCondition(condition);
      }
    }
    const q = Array.from(vector);
    const qn = Math.hypot(...q) || 1;
    const ranked = [...this.stored.values()]
      .filter((v) => options.namespace === undefined || v.namespace === options.namespace)
      .filter((v) => !filter || this.matches(v, filter))
      .map((v) => ({ v, score: v.values.reduce((s, x, i) => s + x * q[i], 0) / ((Math.hypot(...v.values) || 1) * qn) }))
      .sort((a, b) => b.score - a.score || (a.v.id < b.v.id ? -1 : 1))
      .slice(0, topK);
    const matches: VectorizeMatch[] = ranked.map(({ v, score }) => ({
      id: v.id,
      score,
      ...(v.namespace !== undefined ? { namespace: v.namespace } : {}),
      ...(withValues ? { values: [...v.values] } : {}),
      ...(metadataLevel === "all" && v.metadata ? { metadata: { ...v.metadata } } : {}),
      ...(metadataLevel === "indexed"
        ? {
            metadata: Object.fromEntries([...v.indexed].filter(([, x]) => x !== null)) as Record<
              string,
              VectorizeVectorMetadata
            >,
          }
        : {}),
    }));
    return { matches, count: matches.length };
  }

  async getByIds(ids: string[]): Promise<VectorizeVector[]> {
    this.check();
    return ids.flatMap((id) => {
      const v = this.stored.get(id);
      return v ? [{ id: v.id, values: [...v.values], namespace: v.namespace, metadata: v.metadata }] : [];
    });
  }

  async describe(): Promise<VectorizeIndexInfo> {
    this.check();
    return {
      vectorCount: this.stored.size,
      dimensions: this.dimensions,
      processedUpToDatetime: this.appliedAt,
      processedUpToMutation: this.seq,
    };
  }

  /** Ids held, for assertions. */
  ids(namespace?: string): string[] {
    return [...this.stored.values()]
      .filter((v) => namespace === undefined || v.namespace === namespace)
      .map((v) => v.id)
      .sort();
  }

  /** A stored vector's metadata, for assertions. */
  metadataOf(id: string): Record<string, VectorizeVectorMetadata> | undefined {
    return this.stored.get(id)?.metadata;
  }
}

/**
 * A local OpenAI-compatible embeddings server, as a fetch function (passed to the embedder as its
 * dependency): POST …/v1/embeddings { model, input, dimensions? } answers { data: [{ index, embedding }] }
 * with hashed-word vectors (texts sharing words are similar). `failing` answers 503; `mode` serves the
 * malformed answers a real server might give; every request is recorded (headers included).
 */
export class FakeEmbeddingServer {
  failing = false;
  mode: "ok" | "network" | "not-json" | "short" | "wrong-length" | "reversed" | "ignores-dimensions" = "ok";
  requests: {
    url: string;
    headers: Record<string, string>;
    body: { model: string; input: string[]; dimensions?: number; encoding_format?: string };
  }[] = [];
  constructor(readonly dims = 64) {}

  fetch = async (url: string, init: RequestInit): Promise<Response> => {
    const headers = Object.fromEntries(new Headers(init.headers).entries());
    const body = JSON.parse(String(init.body));
    this.requests.push({ url, headers, body });
    if (this.mode === "network") throw new TypeError("fetch failed: connection refused");
    if (this.failing) return new Response('{"error":{"message":"model is loading"}}', { status: 503 });
    if (!url.endsWith("/v1/embeddings") || init.method !== "POST") return new Response("not found", { status: 404 });
    if (this.mode === "not-json") return new Response("<html>proxy error</html>", { status: 200 });
    const dims = (this.mode === "ignores-dimensions" ? undefined : body.dimensions) ?? this.dims;
    let data = (body.input as string[]).map((t, index) => ({
      object: "embedding",
      index,
      embedding: fakeEmbedding(t, dims),
    }));
    if (this.mode === "short") data = data.slice(1);
    if (this.mode === "wrong-length")
      data = data.map((d, i) => ({ ...d, embedding: i === 1 ? d.embedding.slice(1) : d.embedding }));
    if (this.mode === "reversed") data = data.reverse();
    return Response.json({ object: "list", data, model: body.model, usage: { prompt_tokens: 1, total_tokens: 1 } });
  };
}
