// Request schemas of legal holds, retention apply and identity mappings (DESIGN part 2 "Legal holds,
// retention, identity mappings"): the single source of validation and of published JSON Schema.
import { z } from "zod";
import { limitParam, nonEmpty } from "../../http/validate";

export const HOLD_TARGETS = ["claim", "observation"] as const;
export const MAPPING_STATUSES = ["active", "retired"] as const;

export const holdBody = z.strictObject({
  target_type: z.enum(HOLD_TARGETS),
  target_id: z.string().min(1, "must be a claim or observation id").max(64, "must be a claim or observation id"),
  reason: nonEmpty(1000),
});
/** Releasing takes no fields; the body may be omitted or `{}`. */
export const holdReleaseBody = z.strictObject({});

export const retentionApplyBody = z.strictObject({
  limit: z.number().int("must be an integer").min(1, "must be from 1 to 500").max(500, "must be from 1 to 500").default(100),
  /** The `next_after` of the previous page. */
  after: z.string().min(1).max(512).optional(),
  /** Count what would happen; change nothing. */
  dry_run: z.boolean().default(false),
});

export const mappingBody = z.strictObject({
  external_system: nonEmpty(64),
  external_id: nonEmpty(256),
  subject_id: nonEmpty(200),
});

export const mappingListQuery = z.object({
  external_system: z.string().max(64).optional(),
  external_id: z.string().max(256).optional(),
  subject_id: z.string().max(200).optional(),
  status: z.enum(MAPPING_STATUSES).optional(),
  limit: limitParam(1, 200, 50),
  after: z.string().max(512).optional(),
});
