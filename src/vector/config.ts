// The model configuration: read once per isolate from the Worker's variables into an immutable
// snapshot (GET /v1/models/config shows it). Backends are chosen by these variables alone; a
// binding's presence only decides whether a chosen backend is usable ("partial" when it is not),
// never which backend runs. Nothing secret is ever part of it: a binding is reported as present or
// absent, never its value.
import {
  EMBEDDING_PROVIDERS, EXTRACTION_PROVIDERS, INDEX_PROVIDERS, type EmbeddingProvider, type ExtractionProvider, type IndexProvider,
} from "./types";
import { LOCAL_EMBEDDER_INFO } from "./local-embedder";

export const WORKERS_AI_EMBEDDING = { model: "@cf/baai/bge-small-en-v1.5", dimensions: 384, pooling: "cls" } as const;
export const WORKERS_AI_EXTRACTION_MODEL = "@cf/meta/llama-3.1-8b-instruct";

/** The variables and bindings the snapshot reads (a subset of the Worker's env). */
export interface ModelEnv {
  EMBEDDING_PROVIDER?: string;
  VECTOR_INDEX?: string;
  EXTRACTION_PROVIDER?: string;
  AI?: unknown;
  VECTORIZE?: unknown;
}

export const STATUSES = ["enabled", "disabled", "partial"] as const;
export const KEY_STATES = ["absent", "present"] as const;
export type Status = (typeof STATUSES)[number];
export type KeyState = (typeof KEY_STATES)[number];

export interface ModelConfig {
  read_at: string;
  embedding: { provider: EmbeddingProvider; model: string | null; dimensions: number | null; pooling: string | null;
    status: Status; key_state: KeyState; problems: string[] };
  vector_index: { provider: IndexProvider; metric: "cosine"; namespace: "organization" | null; status: Status;
    key_state: KeyState; problems: string[] };
  extraction: { provider: ExtractionProvider; model: string | null; status: Status; key_state: KeyState; problems: string[] };
  /** Vector capability = an enabled embedder and an enabled index of matching dimensions. */
  vectors: { status: Status; problems: string[] };
}

/** Unset variables select the embedded default: local embeddings and index, no extraction. */
const DEFAULTS = { EMBEDDING_PROVIDER: "local", VECTOR_INDEX: "local", EXTRACTION_PROVIDER: "none" } as const;

function choose<T extends string>(name: keyof typeof DEFAULTS, raw: string | undefined, allowed: readonly T[], problems: string[]): T | "none" {
  const value = (raw ?? DEFAULTS[name]).trim().toLowerCase();
  if ((allowed as readonly string[]).includes(value)) return value as T;
  problems.push(`${name} "${value}" is not one of ${allowed.join(", ")}; treated as none`);
  return "none";
}

const deepFreeze = <T>(o: T): T => {
  if (o && typeof o === "object") {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
};

export function readModelConfig(env: ModelEnv, at: string): ModelConfig {
  const ep: string[] = [], ip: string[] = [], xp: string[] = [];
  const embeddingProvider = choose<EmbeddingProvider>("EMBEDDING_PROVIDER", env.EMBEDDING_PROVIDER, EMBEDDING_PROVIDERS, ep);
  const indexProvider = choose<IndexProvider>("VECTOR_INDEX", env.VECTOR_INDEX, INDEX_PROVIDERS, ip);
  const extractionProvider = choose<ExtractionProvider>("EXTRACTION_PROVIDER", env.EXTRACTION_PROVIDER, EXTRACTION_PROVIDERS, xp);
  const aiPresent = env.AI != null;
  const vectorizePresent = env.VECTORIZE != null;

  const binding = (needed: boolean, present: boolean, name: string, problems: string[]): Status => {
    if (!needed) return "enabled";
    if (present) return "enabled";
    problems.push(`binding ${name} is not configured`);
    return "partial";
  };
  const embeddingStatus: Status = embeddingProvider === "none" ? (ep.length ? "partial" : "disabled")
    : binding(embeddingProvider === "workers-ai", aiPresent, "AI", ep);
  const indexStatus: Status = indexProvider === "none" ? (ip.length ? "partial" : "disabled")
    : binding(indexProvider === "vectorize", vectorizePresent, "VECTORIZE", ip);
  const extractionStatus: Status = extractionProvider === "none" ? (xp.length ? "partial" : "disabled")
    : binding(true, aiPresent, "AI", xp);

  const model = embeddingProvider === "workers-ai" ? WORKERS_AI_EMBEDDING.model : embeddingProvider === "local" ? LOCAL_EMBEDDER_INFO.model : null;
  const dimensions = embeddingProvider === "workers-ai" ? WORKERS_AI_EMBEDDING.dimensions : embeddingProvider === "local" ? LOCAL_EMBEDDER_INFO.dimensions : null;

  const vp: string[] = [];
  let vectors: Status;
  if (embeddingStatus === "enabled" && indexStatus === "enabled") {
    vectors = "enabled";
    // The production index is created with 384 dimensions (docs/operations.md, "Deploy"); another embedder cannot fill it.
    if (indexProvider === "vectorize" && dimensions !== WORKERS_AI_EMBEDDING.dimensions) {
      vectors = "partial";
      vp.push(`the Vectorize index holds ${WORKERS_AI_EMBEDDING.dimensions} dimensions; the embedder produces ${dimensions}`);
    }
  } else if (embeddingStatus === "disabled" && indexStatus === "disabled") vectors = "disabled";
  else {
    vectors = "partial";
    vp.push("vector retrieval needs both an enabled embedder and an enabled index");
  }

  return deepFreeze({
    read_at: at,
    embedding: { provider: embeddingProvider, model, dimensions,
      pooling: embeddingProvider === "workers-ai" ? WORKERS_AI_EMBEDDING.pooling : embeddingProvider === "local" ? LOCAL_EMBEDDER_INFO.pooling : null,
      status: embeddingStatus, key_state: embeddingProvider === "workers-ai" && aiPresent ? "present" : "absent", problems: ep },
    vector_index: { provider: indexProvider, metric: "cosine", namespace: indexProvider === "vectorize" ? "organization" : null,
      status: indexStatus, key_state: indexProvider === "vectorize" && vectorizePresent ? "present" : "absent", problems: ip },
    extraction: { provider: extractionProvider, model: extractionProvider === "workers-ai" ? WORKERS_AI_EXTRACTION_MODEL : null,
      status: extractionStatus, key_state: extractionProvider === "workers-ai" && aiPresent ? "present" : "absent", problems: xp },
    vectors: { status: vectors, problems: vp },
  });
}

/** One snapshot per isolate: the env object is the isolate's, so it keys the memo. */
const SNAPSHOTS = new WeakMap<object, ModelConfig>();

export function modelConfig(env: ModelEnv, now: () => string): ModelConfig {
  let snap = SNAPSHOTS.get(env);
  if (!snap) SNAPSHOTS.set(env, (snap = readModelConfig(env, now())));
  return snap;
}
