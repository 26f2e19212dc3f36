// Response schemas of the public health routes (published in docs/openapi.json; checked against the suite's answers).
import { z } from "zod";
import { count } from "../../http/shapes";

export const healthResponse = z
  .strictObject({ status: z.literal("ok"), runtime: z.string(), revision: z.string() })
  .meta({ id: "Health" });

const migrations = { applied: count, expected: count };
export const readinessResponse = z
  .strictObject({
    ready: z.boolean(),
    runtime: z.string(),
    revision: z.string(),
    schema: z.strictObject({
      ...migrations,
      index_db: z.strictObject(migrations),
      org_store: z.strictObject({ ...migrations, error: z.string().optional() }),
    }),
    checks: z.record(z.string(), z.enum(["ok", "failing"])),
    capabilities: z.strictObject({
      background_repair: z.enum(["enabled", "external", "disabled"]),
      maintenance_interval_seconds: z.number().nonnegative(),
      vectors: z.boolean(),
      model: z.boolean(),
    }),
  })
  .meta({ id: "Readiness" });
