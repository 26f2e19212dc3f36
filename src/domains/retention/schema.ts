// Request schemas of legal holds, retention apply and identity mappings (DESIGN part 2 "Legal holds,
// retention, identity mappings"): the single source of validation and of published JSON Schema.
import { z } from "zod";
import { ID_PREFIX } from "../../http/ids";
import { count, idOf, pageOf, principalId, timestamp } from "../../http/shapes";
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
  limit: z
    .number()
    .int("must be an integer")
    .min(1, "must be from 1 to 500")
    .max(500, "must be from 1 to 500")
    .default(100),
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

// Response schemas (published in docs/openapi.json; checked against every answer of the test suite).

export const holdResponse = z
  .strictObject({
    hold_id: idOf(ID_PREFIX.hold),
    target_type: z.enum(HOLD_TARGETS),
    target_id: z.string(),
    reason: z.string(),
    status: z.enum(["active", "released"]),
    created_by: principalId,
    created_at: timestamp,
    released_by: principalId.nullable(),
    released_at: timestamp.nullable(),
  })
  .meta({ id: "LegalHold" });
export const holdReleasedResponse = holdResponse
  .extend({ already_released: z.boolean() })
  .meta({ id: "ReleasedLegalHold" });

export const retentionApplyResponse = z
  .strictObject({
    policy_id: idOf(ID_PREFIX.policy),
    policy_version: z.number().int().positive(),
    examined: count,
    excluded: count,
    held: count,
    next_after: z.string().nullable().describe("Pass as `after` to continue; null when done"),
    done: z.boolean(),
    dry_run: z.boolean(),
  })
  .meta({ id: "RetentionRun" });

export const mappingResponse = z
  .strictObject({
    mapping_id: idOf(ID_PREFIX.mapping),
    external_system: z.string(),
    external_id: z.string(),
    subject_id: z.string(),
    version: z.number().int().positive(),
    status: z.enum(MAPPING_STATUSES),
    created_by: principalId,
    created_at: timestamp,
    retired_at: timestamp.nullable(),
  })
  .meta({ id: "IdentityMapping" });
export const mappingListResponse = pageOf("mappings", mappingResponse).meta({ id: "IdentityMappingList" });
export const mappingRetiredResponse = mappingResponse
  .extend({ already_retired: z.boolean() })
  .meta({ id: "RetiredIdentityMapping" });
