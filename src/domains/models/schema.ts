import { z } from "zod";
import { count, timestamp } from "../../http/shapes";
import { KEY_STATES, STATUSES } from "../../vector/config";
import { EMBEDDING_PROVIDERS, EXTRACTION_PROVIDERS, INDEX_PROVIDERS } from "../../vector/types";

export const PROBE_TEXT_MAX = 2000;
export const PROBE_KINDS = ["embedding", "extraction"] as const;
export const PROBE_ERRORS = ["not_configured", "unavailable"] as const;

export const probeBody = z.strictObject({
  kind: z.enum(PROBE_KINDS, { error: 'must be one of "embedding", "extraction"' }),
  text: z.string().min(1, "must not be empty").max(PROBE_TEXT_MAX, `must be at most ${PROBE_TEXT_MAX} characters`),
});

// ---- responses (published in docs/openapi.json; checked against every answer of the test suite) ----
const part = { status: z.enum(STATUSES), key_state: z.enum(KEY_STATES), problems: z.array(z.string()) };

export const modelConfigResponse = z
  .strictObject({
    read_at: timestamp,
    embedding: z.strictObject({
      provider: z.enum(EMBEDDING_PROVIDERS),
      model: z.string().nullable(),
      dimensions: count.nullable(),
      pooling: z.string().nullable(),
      similarity_floor: z
        .number()
        .nullable()
        .describe(
          "Compile's relevance floor: a claim this similar to the query (cosine) enters a pack without a query word; null: vectors only re-rank claims that hold one",
        ),
      ...part,
    }),
    vector_index: z.strictObject({
      provider: z.enum(INDEX_PROVIDERS),
      metric: z.literal("cosine"),
      namespace: z.literal("organization").nullable(),
      ...part,
    }),
    extraction: z.strictObject({ provider: z.enum(EXTRACTION_PROVIDERS), model: z.string().nullable(), ...part }),
    vectors: z.strictObject({ status: z.enum(STATUSES), problems: z.array(z.string()) }),
    drift: z
      .union([
        z.strictObject({ status: z.enum(["drifted", "none"]), indexed: count, indexed_with_other_model: count }),
        z.strictObject({ status: z.enum(["drifted", "none"]) }),
      ])
      .describe("Counts for owners and admins only (they cover every principal's claims)."),
  })
  .meta({ id: "ModelConfig" });
export const probeResponse = z
  .strictObject({
    kind: z.enum(PROBE_KINDS),
    ok: z.boolean(),
    provider: z.string(),
    model: z.string().nullable(),
    dimensions: count.optional(),
    latency_ms: count,
    error_code: z.enum(PROBE_ERRORS).optional(),
  })
  .meta({ id: "ModelProbe" });
