// The model configuration: read once per isolate from the Worker's variables into an immutable
// snapshot (GET /v1/models/config shows it). Backends are chosen by these variables alone; a
// binding's presence only decides whether a chosen backend is usable ("partial" when it is not),
// never which backend runs. Nothing secret is ever part of it: a binding is reported as present or
// absent, never its value.
import {
  EMBEDDING_PROVIDERS,
  EXTRACTION_PROVIDERS,
  INDEX_PROVIDERS,
  type EmbeddingProvider,
  type ExtractionProvider,
  type IndexProvider,
} from "./types";
import { LOCAL_EMBEDDER_INFO } from "./local-embedder";

/**
 * similarityFloor: the cosine from the query at which a vector hit alone is evidence of relevance in
 * compile (the relevance floor), a constant per model chosen by measurement (docs/BENCHMARKS.md); null:
 * not measured, so this model's hits only re-rank claims that hold a query word.
 */
export const WORKERS_AI_EMBEDDING = {
  model: "@cf/baai/bge-small-en-v1.5",
  dimensions: 384,
  pooling: "cls",
  similarityFloor: null,
} as const;
/** The largest EMBEDDING_DIMENSIONS accepted. */
export const MAX_EMBEDDING_DIMENSIONS = 4096;
export const WORKERS_AI_EXTRACTION_MODEL = "@cf/meta/llama-3.1-8b-instruct";

/** The variables and bindings the snapshot reads (a subset of the Worker's env). */
export interface ModelEnv {
  EMBEDDING_PROVIDER?: string;
  /** openai-compatible: the embeddings endpoint (or its base URL), the model name, and optionally the vector length. */
  EMBEDDING_URL?: string;
  EMBEDDING_MODEL?: string;
  EMBEDDING_DIMENSIONS?: string;
  /** openai-compatible: the secret bearer token; only whether it is set is ever reported. */
  EMBEDDING_API_KEY?: string;
  /** Replaces the embedder's relevance floor (a cosine, 0 to 1), for a model whose floor was measured elsewhere. */
  EMBEDDING_SIMILARITY_FLOOR?: string;
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
  embedding: {
    provider: EmbeddingProvider;
    model: string | null;
    dimensions: number | null;
    pooling: string | null;
    /** Compile's relevance floor for this embedder's hits (null: its hits alone never admit a claim). */
    similarity_floor: number | null;
    status: Status;
    key_state: KeyState;
    problems: string[];
  };
  vector_index: {
    provider: IndexProvider;
    metric: "cosine";
    namespace: "organization" | null;
    status: Status;
    key_state: KeyState;
    problems: string[];
  };
  extraction: {
    provider: ExtractionProvider;
    model: string | null;
    status: Status;
    key_state: KeyState;
    problems: string[];
  };
  /** Vector capability = an enabled embedder and an enabled index of matching dimensions. */
  vectors: { status: Status; problems: string[] };
}

/** Unset variables select the embedded default: local embeddings and index, no extraction. */
const DEFAULTS = { EMBEDDING_PROVIDER: "local", VECTOR_INDEX: "local", EXTRACTION_PROVIDER: "none" } as const;

function choose<T extends string>(
  name: keyof typeof DEFAULTS,
  raw: string | undefined,
  allowed: readonly T[],
  problems: string[],
): T | "none" {
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
  const ep: string[] = [],
    ip: string[] = [],
    xp: string[] = [];
  const embeddingProvider = choose<EmbeddingProvider>(
    "EMBEDDING_PROVIDER",
    env.EMBEDDING_PROVIDER,
    EMBEDDING_PROVIDERS,
    ep,
  );
  const indexProvider = choose<IndexProvider>("VECTOR_INDEX", env.VECTOR_INDEX, INDEX_PROVIDERS, ip);
  const extractionProvider = choose<ExtractionProvider>(
    "EXTRACTION_PROVIDER",
    env.EXTRACTION_PROVIDER,
    EXTRACTION_PROVIDERS,
    xp,
  );
  const aiPresent = env.AI != null;
  const vectorizePresent = env.VECTORIZE != null;

  const binding = (needed: boolean, present: boolean, name: string, problems: string[]): Status => {
    if (!needed) return "enabled";
    if (present) return "enabled";
    problems.push(`binding ${name} is not configured`);
    return "partial";
  };
  const remote = embeddingProvider === "openai-compatible" ? openAiCompatible(env, ep) : null;
  const floor = embeddingProvider === "none" ? null : similarityFloorOf(env, embeddingProvider, ep);
  const embeddingStatus: Status =
    embeddingProvider === "none"
      ? ep.length
        ? "partial"
        : "disabled"
      : ep.length
        ? "partial"
        : binding(embeddingProvider === "workers-ai", aiPresent, "AI", ep);
  const indexStatus: Status =
    indexProvider === "none"
      ? ip.length
        ? "partial"
        : "disabled"
      : binding(indexProvider === "vectorize", vectorizePresent, "VECTORIZE", ip);
  const extractionStatus: Status =
    extractionProvider === "none" ? (xp.length ? "partial" : "disabled") : binding(true, aiPresent, "AI", xp);

  const model =
    embeddingProvider === "workers-ai"
      ? WORKERS_AI_EMBEDDING.model
      : embeddingProvider === "local"
        ? LOCAL_EMBEDDER_INFO.model
        : (remote?.model ?? null);
  const dimensions =
    embeddingProvider === "workers-ai"
      ? WORKERS_AI_EMBEDDING.dimensions
      : embeddingProvider === "local"
        ? LOCAL_EMBEDDER_INFO.dimensions
        : (remote?.dimensions ?? null);
  const keyState: KeyState =
    embeddingProvider === "workers-ai"
      ? aiPresent
        ? "present"
        : "absent"
      : embeddingProvider === "openai-compatible" && env.EMBEDDING_API_KEY
        ? "present"
        : "absent";

  const vp: string[] = [];
  let vectors: Status;
  if (embeddingStatus === "enabled" && indexStatus === "enabled") {
    vectors = "enabled";
    // The production index is created with 384 dimensions (docs/operations.md, "Deploy"); another embedder cannot fill it.
    if (indexProvider === "vectorize" && dimensions !== WORKERS_AI_EMBEDDING.dimensions) {
      vectors = "partial";
      vp.push(
        `the Vectorize index holds ${WORKERS_AI_EMBEDDING.dimensions} dimensions; the embedder produces ${dimensions}`,
      );
    }
  } else if (embeddingStatus === "disabled" && indexStatus === "disabled") vectors = "disabled";
  else {
    vectors = "partial";
    vp.push("vector retrieval needs both an enabled embedder and an enabled index");
  }

  return deepFreeze({
    read_at: at,
    embedding: {
      provider: embeddingProvider,
      model,
      dimensions,
      pooling:
        embeddingProvider === "workers-ai"
          ? WORKERS_AI_EMBEDDING.pooling
          : embeddingProvider === "local"
            ? LOCAL_EMBEDDER_INFO.pooling
            : null,
      similarity_floor: floor,
      status: embeddingStatus,
      key_state: keyState,
      problems: ep,
    },
    vector_index: {
      provider: indexProvider,
      metric: "cosine",
      namespace: indexProvider === "vectorize" ? "organization" : null,
      status: indexStatus,
      key_state: indexProvider === "vectorize" && vectorizePresent ? "present" : "absent",
      problems: ip,
    },
    extraction: {
      provider: extractionProvider,
      model: extractionProvider === "workers-ai" ? WORKERS_AI_EXTRACTION_MODEL : null,
      status: extractionStatus,
      key_state: extractionProvider === "workers-ai" && aiPresent ? "present" : "absent",
      problems: xp,
    },
    vectors: { status: vectors, problems: vp },
  });
}

/** openai-compatible's settings (model, dimensions), each problem named in `problems`. */
function openAiCompatible(env: ModelEnv, problems: string[]): { model: string | null; dimensions: number | null } {
  const url = env.EMBEDDING_URL?.trim();
  if (!url) problems.push("EMBEDDING_URL is not set");
  else {
    let parsed: URL | null = null;
    try {
      parsed = new URL(url);
    } catch {
      /* reported below */
    }
    if (!parsed || (parsed.protocol !== "http:" && parsed.protocol !== "https:"))
      problems.push("EMBEDDING_URL is not an http(s) URL");
  }
  const model = env.EMBEDDING_MODEL?.trim() || null;
  if (!model) problems.push("EMBEDDING_MODEL is not set");
  const raw = env.EMBEDDING_DIMENSIONS?.trim();
  let dimensions: number | null = null;
  if (raw) {
    dimensions = /^\d+$/.test(raw) ? Number(raw) : NaN;
    if (!(dimensions >= 1 && dimensions <= MAX_EMBEDDING_DIMENSIONS)) {
      problems.push(`EMBEDDING_DIMENSIONS "${raw}" is not a whole number from 1 to ${MAX_EMBEDDING_DIMENSIONS}`);
      dimensions = null;
    }
  }
  return { model, dimensions };
}

/** The relevance floor: EMBEDDING_SIMILARITY_FLOOR when set, else the model's measured constant. */
function similarityFloorOf(env: ModelEnv, provider: EmbeddingProvider | "none", problems: string[]): number | null {
  const raw = env.EMBEDDING_SIMILARITY_FLOOR?.trim();
  if (raw) {
    const v = Number(raw);
    if (Number.isFinite(v) && v >= 0 && v <= 1) return v;
    problems.push(`EMBEDDING_SIMILARITY_FLOOR "${raw}" is not a number from 0 to 1`);
  }
  return provider === "local"
    ? LOCAL_EMBEDDER_INFO.similarityFloor
    : provider === "workers-ai"
      ? WORKERS_AI_EMBEDDING.similarityFloor
      : null;
}

/** One snapshot per isolate: the env object is the isolate's, so it keys the memo. */
const SNAPSHOTS = new WeakMap<object, ModelConfig>();

export function modelConfig(env: ModelEnv, now: () => string): ModelConfig {
  let snap = SNAPSHOTS.get(env);
  if (!snap) SNAPSHOTS.set(env, (snap = readModelConfig(env, now())));
  return snap;
}
