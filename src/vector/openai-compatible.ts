// Embedder for any OpenAI-compatible embeddings endpoint (POST /v1/embeddings): OpenAI itself, or a
// self-hosted server such as Ollama, LM Studio or text-embeddings-inference. Configured by
// EMBEDDING_URL, EMBEDDING_MODEL, EMBEDDING_DIMENSIONS (optional) and the secret EMBEDDING_API_KEY
// (optional; sent as a bearer token, never shown or logged). The fetch function is a dependency
// (the Worker passes its own; tests pass a local fake server), never a patched global. Every failure
// (network, timeout, a non-2xx answer, a malformed body, vectors of the wrong count or length) is a
// VectorBackendError, which drain answers as 503 UNAVAILABLE with the queue untouched and compile
// answers by degrading to lexical ranking. Only the vectors are used: the raw answer never leaves here.
import { type Embedder, normalize, VectorBackendError } from "./types";

/** Texts per request: text-embeddings-inference refuses more than 32 by default. */
export const OPENAI_COMPATIBLE_BATCH = 32;
/** One request's time limit. */
export const OPENAI_COMPATIBLE_TIMEOUT_MS = 30_000;

/** The fetch the embedder calls (the Worker's own, or a test's). */
export type FetchFn = (input: string, init: RequestInit) => Promise<Response>;

export interface OpenAiCompatibleOptions {
  /** The embeddings endpoint; a URL whose path does not end in /embeddings gets it appended (a base URL such as …/v1). */
  url: string;
  model: string;
  /** When set: asked of the endpoint (`dimensions`) and required of every vector it answers. */
  dimensions: number | null;
  /** Sent as `Authorization: Bearer …` when present. */
  apiKey: string | null;
  fetch: FetchFn;
}

/** EMBEDDING_URL as the endpoint to post to. */
export function embeddingsEndpoint(url: string): string {
  const u = new URL(url);
  if (!/\/embeddings\/?$/.test(u.pathname)) u.pathname = u.pathname.replace(/\/?$/, "/embeddings");
  return u.toString();
}

const fail = (why: string) => new VectorBackendError("embedding", new Error(why));

export class OpenAiCompatibleEmbedder implements Embedder {
  readonly provider = "openai-compatible" as const;
  readonly model: string;
  private readonly endpoint: string;
  private seen = 0;

  constructor(private readonly options: OpenAiCompatibleOptions) {
    this.model = options.model;
    this.endpoint = embeddingsEndpoint(options.url);
  }

  get dimensions(): number {
    return this.options.dimensions ?? this.seen;
  }

  async embed(texts: string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += OPENAI_COMPATIBLE_BATCH)
      out.push(...(await this.batch(texts.slice(i, i + OPENAI_COMPATIBLE_BATCH))));
    return out;
  }

  private async batch(input: string[]): Promise<Float32Array[]> {
    const { dimensions, apiKey } = this.options;
    const body = JSON.stringify({
      model: this.model,
      input,
      encoding_format: "float",
      ...(dimensions ? { dimensions } : {}),
    });
    const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
    if (apiKey) headers.authorization = `Bearer ${apiKey}`;
    let res: Response;
    try {
      res = await this.options.fetch(this.endpoint, {
        method: "POST",
        headers,
        body,
        signal: AbortSignal.timeout(OPENAI_COMPATIBLE_TIMEOUT_MS),
      });
    } catch (err) {
      throw new VectorBackendError("embedding", err);
    }
    if (!res.ok) {
      await res.body?.cancel().catch(() => {});
      throw fail(`embeddings endpoint answered ${res.status}`);
    }
    let json: unknown;
    try {
      json = await res.json();
    } catch (err) {
      throw new VectorBackendError("embedding", err);
    }
    const data = (json as { data?: unknown })?.data;
    if (!Array.isArray(data) || data.length !== input.length) throw fail("unexpected embeddings response shape");
    // Entries carry their input's index; order by it (servers may answer out of order).
    const rows = data.map((d, k) => ({
      index: typeof d?.index === "number" ? d.index : k,
      embedding: d?.embedding as unknown,
    }));
    rows.sort((a, b) => a.index - b.index);
    const length = dimensions ?? (Array.isArray(rows[0]?.embedding) ? (rows[0].embedding as unknown[]).length : 0);
    const vectors = rows.map((r, k) => {
      const v = r.embedding;
      if (
        r.index !== k ||
        !Array.isArray(v) ||
        v.length === 0 ||
        v.length !== length ||
        !v.every((x) => typeof x === "number" && Number.isFinite(x))
      )
        throw fail("unexpected embeddings response shape");
      return normalize(Float32Array.from(v as number[]));
    });
    this.seen = length;
    return vectors;
  }
}
