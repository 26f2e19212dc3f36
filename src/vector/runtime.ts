// Builds the configured backends for one organization. Which backend runs is decided by the config
// snapshot alone; a configured backend whose binding is missing is "unusable" (routes answer as if
// the capability were absent and GET /v1/models/config reports it as partial).
import { clock } from "../http/clock";
import type { Db } from "../sql/db";
import { type ModelConfig, type ModelEnv, modelConfig } from "./config";
import { LocalEmbedder } from "./local-embedder";
import { localIndexFor } from "./local-index";
import { type ExtractionAi, WorkersAiExtractor } from "./extraction";
import { type FetchFn, OpenAiCompatibleEmbedder } from "./openai-compatible";
import type { Embedder, VectorIndex } from "./types";
import { VectorizeIndexBackend, type VectorizeBinding } from "./vectorize";
import { type EmbeddingAi, WorkersAiEmbedder } from "./workers-ai";

export interface VectorBindings {
  AI?: unknown;
  VECTORIZE?: unknown;
  /** openai-compatible: where to post (not part of the snapshot: a URL may carry credentials). */
  EMBEDDING_URL?: string;
  /** openai-compatible: the secret bearer token. */
  EMBEDDING_API_KEY?: string;
  /** openai-compatible: how to reach the endpoint (the Worker's fetch; a test's fake server). */
  fetch?: FetchFn;
}

export interface VectorRuntime {
  config: ModelConfig;
  /** null: no usable embedder configured. */
  embedder: Embedder | null;
  /** null: no usable index configured. */
  index: VectorIndex | null;
  /** null: extraction disabled (or unusable). */
  extractor: WorkersAiExtractor | null;
}

export function embedderFor(config: ModelConfig, env: VectorBindings): Embedder | null {
  if (config.embedding.status !== "enabled") return null;
  if (config.embedding.provider === "local") return new LocalEmbedder();
  if (config.embedding.provider === "workers-ai") return new WorkersAiEmbedder(env.AI as EmbeddingAi);
  if (config.embedding.provider === "openai-compatible" && env.EMBEDDING_URL && config.embedding.model)
    return new OpenAiCompatibleEmbedder({
      url: env.EMBEDDING_URL,
      model: config.embedding.model,
      dimensions: config.embedding.dimensions,
      apiKey: env.EMBEDDING_API_KEY || null,
      fetch: env.fetch ?? ((input, init) => fetch(input, init)),
    });
  return null;
}

export function vectorRuntime(config: ModelConfig, env: VectorBindings, db: Db, orgId: string): VectorRuntime {
  let index: VectorIndex | null = null;
  if (config.vector_index.status === "enabled") {
    if (config.vector_index.provider === "local") index = localIndexFor(db);
    else if (config.vector_index.provider === "vectorize")
      index = new VectorizeIndexBackend(env.VECTORIZE as VectorizeBinding, orgId, localIndexFor(db));
  }
  const extractor = config.extraction.status === "enabled" ? new WorkersAiExtractor(env.AI as ExtractionAi) : null;
  return { config, embedder: embedderFor(config, env), index, extractor };
}

/** Vector retrieval is possible: an embedder and an index whose dimensions agree. */
export const hasVectors = (rt: VectorRuntime): rt is VectorRuntime & { embedder: Embedder; index: VectorIndex } =>
  rt.config.vectors.status === "enabled" && rt.embedder !== null && rt.index !== null;

/** What an organization's Durable Object is given (OrgDeps.models): a test may give fakes instead. */
export interface ModelDeps {
  config: ModelConfig;
  bindings: VectorBindings;
}

/** From the Worker's env: the isolate's snapshot, and the bindings (used only where the config says so). */
export const modelDeps = (env: ModelEnv): ModelDeps => ({
  config: modelConfig(env, clock.nowIso),
  bindings: {
    AI: env.AI,
    VECTORIZE: env.VECTORIZE,
    EMBEDDING_URL: env.EMBEDDING_URL,
    EMBEDDING_API_KEY: env.EMBEDDING_API_KEY,
  },
});

/** The runtime for one organization's Durable Object. */
export function runtimeFor(ctx: { deps: { models: ModelDeps }; db: Db; orgId: string | undefined }): VectorRuntime {
  return vectorRuntime(ctx.deps.models.config, ctx.deps.models.bindings, ctx.db, ctx.orgId ?? "");
}
