// Request schemas of governance (DESIGN part 2 "Governance, approvals, channels, releases"): the single
// source of validation and of published JSON Schema.
import { z } from "zod";
import { VISIBILITIES } from "../../access/visibility";
import { trustSchema } from "../../auth/trust";
import { ID_PREFIX } from "../../http/ids";
import { contentHash, count, idOf, pageOf, principalId, timestamp } from "../../http/shapes";
import { limitParam, nonEmpty } from "../../http/validate";
import { CLAIM_KINDS, compileBody, maxItems, OBSERVATION_KINDS, RELATIONS, tokenBudget } from "../memory/schema";

const id = (what: string) => z.string().min(1, `must be a ${what} id`).max(64, `must be a ${what} id`);
const version = z.number().int("must be an integer").min(1, "must be at least 1");

export const POLICY_TYPES = ["approval", "release", "retention"] as const;
export const POLICY_STATUSES = ["draft", "active", "retired"] as const;
export const APPROVAL_STATUSES = ["pending", "approved", "rejected"] as const;
export const CHANNEL_STATUSES = ["active", "paused", "disabled"] as const;
export const RELEASE_STATUSES = ["draft", "approved", "active", "revoked"] as const;

const maxAge = z
  .number()
  .int("must be an integer")
  .min(1, "must be from 1 to 36500")
  .max(36_500, "must be from 1 to 36500");

/** Rules of each policy type. Retention rules are defined here; the retention issue applies them. */
export const POLICY_RULES = {
  approval: z.strictObject({ separation_of_duty: z.boolean() }),
  release: z.strictObject({ separation_of_duty: z.boolean(), require_approved_claim: z.boolean() }),
  retention: z.strictObject({
    rules: z
      .array(
        z.discriminatedUnion("record_type", [
          z.strictObject({
            record_type: z.literal("observation"),
            max_age_days: maxAge,
            kinds: z.array(z.enum(OBSERVATION_KINDS)).min(1).max(OBSERVATION_KINDS.length).optional(),
            visibility: z.enum(VISIBILITIES).optional(),
          }),
          z.strictObject({
            record_type: z.literal("claim"),
            max_age_days: maxAge,
            kinds: z.array(z.enum(CLAIM_KINDS)).min(1).max(CLAIM_KINDS.length).optional(),
            visibility: z.enum(VISIBILITIES).optional(),
          }),
        ]),
      )
      .min(1, "must hold 1 to 20 rules")
      .max(20, "must hold 1 to 20 rules"),
  }),
} as const;
export type PolicyType = keyof typeof POLICY_RULES;
export type ApprovalRules = z.infer<typeof POLICY_RULES.approval>;
export type ReleaseRules = z.infer<typeof POLICY_RULES.release>;

const createStatus = z.enum(["draft", "active"]).optional();
const policyName = nonEmpty(200);

export const policyBody = z.discriminatedUnion(
  "type",
  [
    z.strictObject({
      type: z.literal("approval"),
      name: policyName,
      rules: POLICY_RULES.approval,
      status: createStatus,
    }),
    z.strictObject({ type: z.literal("release"), name: policyName, rules: POLICY_RULES.release, status: createStatus }),
    z.strictObject({
      type: z.literal("retention"),
      name: policyName,
      rules: POLICY_RULES.retention,
      status: createStatus,
    }),
  ],
  { error: `Invalid option: expected one of "approval"|"release"|"retention"` },
);

/** `rules`, when given, must also match the policy's own type (checked by the handler). */
export const policyPatchBody = z
  .strictObject({
    expected_version: version,
    status: z.enum(POLICY_STATUSES).optional(),
    rules: z.union([POLICY_RULES.approval, POLICY_RULES.release, POLICY_RULES.retention]).optional(),
  })
  .refine((b) => b.status !== undefined || b.rules !== undefined, { message: "give status, rules or both" });

const listPage = { limit: limitParam(1, 200, 50), after: z.string().max(512).optional() };

export const policyListQuery = z.object({
  type: z.enum(POLICY_TYPES).optional(),
  status: z.enum(POLICY_STATUSES).optional(),
  ...listPage,
});

export const approvalBody = z.strictObject({ claim_id: id("claim"), note: z.string().max(2000).optional() });
export const decideBody = z.strictObject({
  decision: z.enum(["approved", "rejected"]),
  note: z.string().max(2000).optional(),
});
export const approvalListQuery = z.object({
  claim_id: z.string().max(64).optional(),
  status: z.enum(APPROVAL_STATUSES).optional(),
  ...listPage,
});

export const channelBody = z.strictObject({
  name: nonEmpty(100),
  audiences: z.array(nonEmpty(100)).min(1, "must hold 1 to 20 audiences").max(20, "must hold 1 to 20 audiences"),
  min_trust: trustSchema,
  gateway_principal_id: id("principal"),
});
export const channelPatchBody = z.strictObject({ status: z.enum(CHANNEL_STATUSES), expected_version: version });
export const channelListQuery = z.object({ status: z.enum(CHANNEL_STATUSES).optional(), ...listPage });

export const releaseBody = z.strictObject({
  claim_id: id("claim"),
  channel_id: id("channel"),
  /** When given, the claim's current version must equal it (else 409). */
  claim_version: version.optional(),
});
/** Release moves take no fields; the body may be omitted or `{}`. */
export const releaseMoveBody = z.strictObject({});
export const releaseListQuery = z.object({
  channel_id: z.string().max(64).optional(),
  status: z.enum(RELEASE_STATUSES).optional(),
  ...listPage,
});

export const channelCompileBody = z.strictObject({
  query: z
    .string()
    .max(4000)
    .optional()
    .describe("With a query, only snapshots that hold one of its words are served."),
  /** Must be one of the channel's audiences. */
  audience: nonEmpty(100).optional(),
  // The same filters as POST /v1/context/compile (and GET /v1/memories), over the served snapshots.
  subject_id: compileBody.shape.subject_id,
  project_id: compileBody.shape.project_id,
  kinds: compileBody.shape.kinds,
  token_budget: tokenBudget,
  max_items: maxItems,
});

// Response schemas (published in docs/openapi.json; checked against every answer of the test suite).
const claimId = idOf(ID_PREFIX.claim);
const channelId = idOf(ID_PREFIX.channel);
const observationId = idOf(ID_PREFIX.observation);

const policyFields = {
  policy_id: idOf(ID_PREFIX.policy),
  name: z.string(),
  status: z.enum(POLICY_STATUSES),
  version: z.number().int().positive(),
  created_by: principalId,
  created_at: timestamp,
  updated_at: timestamp,
};
export const policyResponse = z
  .discriminatedUnion("type", [
    z.strictObject({ ...policyFields, type: z.literal("approval"), rules: POLICY_RULES.approval }),
    z.strictObject({ ...policyFields, type: z.literal("release"), rules: POLICY_RULES.release }),
    z.strictObject({ ...policyFields, type: z.literal("retention"), rules: POLICY_RULES.retention }),
  ])
  .meta({ id: "Policy" });
export const policyListResponse = pageOf("policies", policyResponse).meta({ id: "PolicyList" });

export const approvalResponse = z
  .strictObject({
    approval_id: idOf(ID_PREFIX.approval),
    claim_id: claimId,
    claim_version: z.number().int().positive(),
    status: z.enum(APPROVAL_STATUSES),
    evidence: z.strictObject({
      observation_ids: z.array(observationId).describe("The evidence the caller may read"),
      hidden_source_count: count,
    }),
    note: z.string().nullable(),
    submitted_by: principalId,
    decided_by: principalId.nullable(),
    decided_at: timestamp.nullable(),
    decision_note: z.string().nullable(),
    created_at: timestamp,
  })
  .meta({ id: "ClaimApproval" });
export const approvalListResponse = pageOf("approvals", approvalResponse).meta({ id: "ClaimApprovalList" });

export const channelResponse = z
  .strictObject({
    channel_id: channelId,
    name: z.string(),
    audiences: z.array(z.string()),
    min_trust: trustSchema,
    gateway_principal_id: principalId,
    status: z.enum(CHANNEL_STATUSES),
    version: z.number().int().positive(),
    created_by: principalId,
    created_at: timestamp,
    updated_at: timestamp,
  })
  .meta({ id: "Channel" });
export const channelListResponse = pageOf("channels", channelResponse).meta({ id: "ChannelList" });

export const releaseResponse = z
  .strictObject({
    release_id: idOf(ID_PREFIX.release),
    channel_id: channelId,
    claim_id: claimId,
    claim_version: z.number().int().positive(),
    status: z.enum(RELEASE_STATUSES),
    snapshot: z.strictObject({
      subject_id: z.string(),
      kind: z.enum(CLAIM_KINDS),
      statement: z.string(),
      trust: trustSchema,
      valid_to: timestamp.nullable(),
      evidence: z
        .array(
          z.strictObject({ observation_id: observationId, relation: z.enum(RELATIONS), content_hash: contentHash }),
        )
        .describe("The snapshot's evidence the caller may read"),
    }),
    hidden_source_count: count,
    created_by: principalId,
    approved_by: principalId.nullable(),
    approved_at: timestamp.nullable(),
    activated_at: timestamp.nullable(),
    revoked_by: principalId.nullable(),
    revoked_at: timestamp.nullable(),
    created_at: timestamp,
  })
  .meta({ id: "KnowledgeRelease" });
export const releaseListResponse = pageOf("releases", releaseResponse).meta({ id: "KnowledgeReleaseList" });

export const channelCompileResponse = z
  .strictObject({
    channel_id: channelId,
    items: z.array(
      z.strictObject({
        release_id: idOf(ID_PREFIX.release),
        claim_id: claimId,
        statement: z.string(),
        kind: z.enum(CLAIM_KINDS),
        trust: trustSchema,
        score: z.number(),
        tokens: count,
      }),
    ),
    token_budget: count,
    tokens_used: count,
  })
  .meta({ id: "ChannelContext" });
