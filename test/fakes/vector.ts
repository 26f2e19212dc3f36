// Typed fakes of the Workers AI and Vectorize bindings (no network): the production backends run
// against them in tests, including failures and Vectorize's asynchronous mutations.
import { WORKERS_AI_EMBEDDING } from "../../src/vector/config";
import type { EmbeddingAi } from "../../src/vector/workers-ai";
import type { VectorizeBinding } from "../../src/vector/vectorize";

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

interface Stored { id: string; values: number[]; namespace?: string }

/**
 * Vectorize with asynchronous mutations: upserts and deletes are queued with a mutation id and applied
 * only by `apply()` (as Vectorize applies them some time later); describe() reports how far it got.
 */
export class FakeVectorize implements VectorizeBinding {
  failing = false;
  private stored = new Map<string, Stored>();
  private queue: { at: number; op: () => void }[] = [];
  private appliedAt = 0;
  private seq = 0;
  /** Mutation times come from here (tests move it). */
  now = () => Date.now();
  /** Every query's options, to check topK and that values/metadata are never requested. */
  queries: VectorizeQueryOptions[] = [];

  private check() {
    if (this.failing) throw new Error("fake Vectorize: 503 upstream");
  }

  async upsert(vectors: VectorizeVector[]): Promise<VectorizeAsyncMutation> {
    this.check();
    const copies = vectors.map((v) => ({ id: v.id, values: Array.from(v.values), namespace: v.namespace }));
    this.queue.push({ at: this.now(), op: () => { for (const v of copies) this.stored.set(v.id, v); } });
    return { mutationId: `m${++this.seq}` };
  }

  async deleteByIds(ids: string[]): Promise<VectorizeAsyncMutation> {
    this.check();
    const copy = [...ids];
    this.queue.push({ at: this.now(), op: () => { for (const id of copy) this.stored.delete(id); } });
    return { mutationId: `m${++this.seq}` };
  }

  /** Apply every queued mutation (Vectorize catching up). */
  apply(): void {
    for (const m of this.queue) { m.op(); this.appliedAt = Math.max(this.appliedAt, m.at); }
    this.queue = [];
  }

  async query(vector: VectorFloatArray | number[], options: VectorizeQueryOptions = {}): Promise<VectorizeMatches> {
    this.check();
    this.queries.push(options);
    if ((options.topK ?? 5) > 100) throw new Error("topK above 100 with returnValues/metadata none is refused");
    const q = Array.from(vector);
    const qn = Math.hypot(...q) || 1;
    const matches = [...this.stored.values()]
      .filter((v) => v.namespace === options.namespace)
      .map((v) => ({ id: v.id, score: v.values.reduce((s, x, i) => s + x * q[i], 0) / ((Math.hypot(...v.values) || 1) * qn) }))
      .sort((a, b) => b.score - a.score)
      .slice(0, options.topK ?? 5);
    return { matches, count: matches.length };
  }

  async getByIds(ids: string[]): Promise<VectorizeVector[]> {
    this.check();
    return ids.flatMap((id) => { const v = this.stored.get(id); return v ? [{ ...v }] : []; });
  }

  async describe(): Promise<VectorizeIndexInfo> {
    this.check();
    return { vectorCount: this.stored.size, dimensions: WORKERS_AI_EMBEDDING.dimensions,
      processedUpToDatetime: this.appliedAt, processedUpToMutation: this.seq };
  }

  /** Ids held, for assertions. */
  ids(namespace?: string): string[] {
    return [...this.stored.values()].filter((v) => namespace === undefined || v.namespace === namespace).map((v) => v.id).sort();
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
  requests: { url: string; headers: Record<string, string>; body: { model: string; input: string[]; dimensions?: number; encoding_format?: string } }[] = [];
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
    let data = (body.input as string[]).map((t, index) => ({ object: "embedding", index, embedding: fakeEmbedding(t, dims) }));
    if (this.mode === "short") data = data.slice(1);
    if (this.mode === "wrong-length") data = data.map((d, i) => ({ ...d, embedding: i === 1 ? d.embedding.slice(1) : d.embedding }));
    if (this.mode === "reversed") data = data.reverse();
    return Response.json({ object: "list", data, model: body.model, usage: { prompt_tokens: 1, total_tokens: 1 } });
  };
}
