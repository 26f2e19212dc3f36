import { z } from "zod";

const intIn = (min: number, max: number) =>
  z.number().int(`must be an integer from ${min} to ${max}`).min(min, `must be an integer from ${min} to ${max}`)
    .max(max, `must be an integer from ${min} to ${max}`);

export const INDEX_DRAIN_MAX = 100;
export const VERIFY_MAX = 100;
export const ENRICHMENT_MAX = 50;

export const indexDrainBody = z.strictObject({ limit: intIn(1, INDEX_DRAIN_MAX).default(50) });
export const indexVerifyBody = z.strictObject({
  limit: intIn(1, VERIFY_MAX).default(VERIFY_MAX),
  after: z.string().max(200, "must be at most 200 characters").optional(),
});
export const enrichmentDrainBody = z.strictObject({ limit: intIn(1, ENRICHMENT_MAX).default(10) });
