// Production embedder: Workers AI bge-small-en-v1.5 (384 dimensions, CLS pooling). Only the
// vectors are used; the raw response never leaves this module.
import { WORKERS_AI_EMBEDDING } from "./config";
import { type Embedder, guardBackend, normalize, VectorBackendError } from "./types";

/** Texts per Workers AI call (the model accepts up to 100 inputs per request). */
export const AI_BATCH = 100;

/** The slice of the Ai binding this module calls, so a typed fake can stand in for it in tests. */
export type EmbeddingAi = Pick<Ai, "run">;

export class WorkersAiEmbedder implements Embedder {
  readonly provider = "workers-ai" as const;
  readonly model = WORKERS_AI_EMBEDDING.model;
  readonly dimensions = WORKERS_AI_EMBEDDING.dimensions;
  constructor(private readonly ai: EmbeddingAi) {}

  async embed(texts: string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += AI_BATCH) {
      const batch = texts.slice(i, i + AI_BATCH);
      const res = await guardBackend("embedding", () =>
        this.ai.run(WORKERS_AI_EMBEDDING.model, { text: batch, pooling: WORKERS_AI_EMBEDDING.pooling }),
      );
      const data = (res as { data?: number[][] }).data;
      if (!Array.isArray(data) || data.length !== batch.length || data.some((v) => v?.length !== this.dimensions))
        throw new VectorBackendError("embedding", new Error("unexpected embedding response shape"));
      for (const v of data) out.push(normalize(Float32Array.from(v)));
    }
    return out;
  }
}
