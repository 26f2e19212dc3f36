import { z } from "zod";
import { count, timestamp } from "../../http/shapes";
import { intRange } from "../../http/validate";

export const INDEX_DRAIN_MAX = 100;
export const VERIFY_MAX = 100;
export const ENRICHMENT_MAX = 50;

export const indexDrainBody = z.strictObject({ limit: intRange(1, INDEX_DRAIN_MAX).default(50) });
export const indexVerifyBody = z.strictObject({
  limit: intRange(1, VERIFY_MAX).default(VERIFY_MAX),
  after: z.string().max(200, "must be at most 200 characters").optional(),
});
export const enrichmentDrainBody = z.strictObject({ limit: intRange(1, ENRICHMENT_MAX).default(10) });

// ---- responses (published in docs/openapi.json; checked against every answer of the test suite) ----

export const indexDrainResponse = z
  .strictObject({
    drained: count,
    indexed: count,
    removed: count,
    skipped: count,
    remaining: count,
    model: z.string(),
    dimensions: count,
    at: timestamp,
  })
  .meta({ id: "IndexDrain" });
export const indexVerifyResponse = z
  .strictObject({
    checked: count,
    present: count,
    missing: count,
    pending: count,
    repairs_queued: count,
    next_after: z.string().nullable(),
  })
  .meta({ id: "IndexVerification" });
export const enrichmentDrainResponse = z
  .union([
    z.strictObject({ drained: z.literal(0), status: z.literal("disabled") }),
    z.strictObject({
      drained: count,
      proposed: count,
      remaining: count,
      status: z.literal("enabled"),
      model: z.string(),
    }),
  ])
  .meta({ id: "EnrichmentDrain" });
