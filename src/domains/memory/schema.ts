// Request schemas of the memory loop: the single source of validation and of published JSON Schema.
import { z } from "zod";
import { trustSchema } from "../../auth/trust";
import { VISIBILITIES } from "../../access/visibility";
import { limitParam, nonEmpty } from "../../http/validate";
import { clock } from "../../http/clock";

export const OBSERVATION_KINDS = ["message", "tool_result", "document", "event", "note"] as const;
export const CLAIM_KINDS = ["fact", "preference", "decision", "instruction", "summary"] as const;
export const CLAIM_STATUSES = ["active", "disputed", "superseded", "revoked"] as const;
export const RELATIONS = ["supports", "contradicts", "qualifies"] as const;
export const OUTCOMES = ["used", "useful", "irrelevant", "incorrect", "harmful"] as const;

export const MAX_CONTENT_CHARS = 200_000;
export const MAX_STATEMENT_CHARS = 4_000;

/** How far past this server's clock a time that says when something happened may lie (clock skew). */
export const MAX_FUTURE_SKEW_MS = 5 * 60_000;
/** An ISO 8601 time (any offset) of something that happened: not more than MAX_FUTURE_SKEW_MS in the future. */
export const happenedAt = z.iso
  .datetime({ offset: true, error: "must be an ISO 8601 timestamp" })
  .refine(
    (at) => !(Date.parse(at) > clock.nowMs() + MAX_FUTURE_SKEW_MS),
    "must not be more than 5 minutes in the future",
  );

const id = (what: string) => z.string().min(1, `must be a ${what} id`).max(64, `must be a ${what} id`);
const visibility = z.enum(VISIBILITIES);

/** A compile's budget, also a channel compile's (governance). */
export const tokenBudget = z
  .number()
  .int("must be an integer")
  .min(1, "must be from 1 to 32000")
  .max(32_000, "must be from 1 to 32000")
  .default(1000);
export const maxItems = z
  .number()
  .int("must be an integer")
  .min(1, "must be from 1 to 200")
  .max(200, "must be from 1 to 200")
  .default(50);

export const resolveProjectBody = z.strictObject({
  reference: nonEmpty(500),
  create: z.boolean().default(false),
  /** The workspace whose memberships scope the new project's records; ignored for an existing project. */
  workspace_id: nonEmpty(100).optional(),
});

/** Where evidence came from; also svc_remember's (defaulted) source. */
export const observationSource = z
  .strictObject({
    type: nonEmpty(100).describe("The kind of source, e.g. chat, tool, document, mcp."),
    ref: z.string().max(500).optional().describe("A pointer into the source: a message id, URL or file path."),
  })
  .describe("Where the evidence came from.");

export const observationBody = z.strictObject({
  subject_id: nonEmpty(200).describe(
    "Who or what the evidence is about: your own stable id for a user, account, repository, task…",
  ),
  kind: z.enum(OBSERVATION_KINDS).describe("What sort of evidence this is."),
  content: z
    .string()
    .min(1, "must not be empty")
    .max(MAX_CONTENT_CHARS, `must be at most ${MAX_CONTENT_CHARS} characters`)
    .describe("The evidence itself, verbatim (up to 200,000 characters)."),
  source: observationSource,
  trust: trustSchema
    .optional()
    .describe("How far to trust it: low, medium (default) or high; capped by the credential's trust ceiling."),
  visibility: visibility.optional().describe("Who may read it: team (default) or private (only you)."),
  project_id: id("project")
    .optional()
    .describe("A project_id from POST /v1/projects/resolve, to scope the evidence to one project."),
  occurred_at: happenedAt
    .optional()
    .describe(
      "When what it records happened (ISO 8601, at most 5 minutes ahead; default: when it is appended). " +
        "Its claims report the latest of their sources' occurred_at, and compile lifts a matching claim whose occurred_at lies within 60 minutes " +
        "of a better match about the same subject (a conversation's session scores by its best turn).",
    ),
});

const sourceEntry = z.union(
  [
    z.strictObject({
      observation_id: id("observation").describe("An observation this claim is drawn from."),
      relation: z.enum(RELATIONS).describe("How the observation bears on the claim."),
    }),
    // Naming an existing claim in a contradicts source disputes it (DESIGN "Entry into disputed").
    z.strictObject({
      claim_id: id("claim").describe("An active claim on the same subject that this claim disputes."),
      relation: z.literal("contradicts").describe("Always contradicts: both claims become disputed."),
    }),
  ],
  { error: 'must be { observation_id, relation } or { claim_id, relation: "contradicts" }' },
);

export const consolidationBody = z.strictObject({
  subject_id: nonEmpty(200).describe("The subject every claim of this call is about (the observations' subject_id)."),
  project_id: id("project").optional().describe("A project_id to scope the claims to."),
  claims: z
    .array(
      z.strictObject({
        kind: z.enum(CLAIM_KINDS).describe("What sort of claim this is."),
        statement: nonEmpty(MAX_STATEMENT_CHARS).describe(
          "The claim as one self-contained sentence, as it should be recalled.",
        ),
        visibility: visibility
          .optional()
          .describe("team, or private (only you); defaults to private when any source is private."),
        valid_to: z.iso
          .datetime({ offset: true, error: "must be an ISO 8601 timestamp" })
          .optional()
          .describe("When the claim stops being true (ISO 8601, in the future); omit for open-ended."),
        sources: z
          .array(sourceEntry)
          .min(1, "must name at least one source")
          .max(50, "must have at most 50 entries")
          .describe("1 to 50 sources; at least one observation."),
      }),
    )
    .min(1, "must hold 1 to 50 claims")
    .max(50, "must hold 1 to 50 claims")
    .describe("The claims to derive, 1 to 50."),
});

export const compileBody = z.strictObject({
  query: z
    .string()
    .max(4000)
    .optional()
    .describe(
      "The task or question to find relevant claims for, in plain words. " +
        "With a query, only claims that hold one of its words, or are at least the embedder's similarity floor from it, are packed.",
    ),
  subject_id: nonEmpty(200).optional().describe("Only claims about this subject (as GET /v1/memories filters)."),
  project_id: id("project").optional().describe("Only claims in this project (as GET /v1/memories filters)."),
  kinds: z.array(z.enum(CLAIM_KINDS)).min(1).max(CLAIM_KINDS.length).optional().describe("Only claims of these kinds."),
  token_budget: tokenBudget.describe("At most this many tokens of claims (1 to 32,000)."),
  max_items: maxItems.describe("At most this many claims (1 to 200)."),
});

export const feedbackBody = z.strictObject({
  outcome: z.enum(OUTCOMES).describe("How the recalled context (or one claim in it) worked out."),
  claim_id: id("claim").optional().describe("One claim of the context to rate; omit to rate the whole context."),
  note: z.string().max(2000).optional().describe("A short free-text remark, kept with the feedback."),
  client_mutation_id: nonEmpty(200)
    .optional()
    .describe("Your own unique id for this feedback; a repeat is refused as a conflict."),
});

export const memoriesQuery = z.object({
  q: z.string().max(1000).optional().describe("Words that must all appear in the claim statement."),
  subject_id: z.string().max(200).optional().describe("Only claims about this subject."),
  project_id: z.string().max(64).optional().describe("Only claims in this project."),
  status: z.enum(CLAIM_STATUSES).optional().describe("Only claims in this status (default: active and disputed)."),
  visibility: visibility.optional().describe("Only team or only private claims."),
  kind: z.enum(CLAIM_KINDS).optional().describe("Only claims of this kind."),
  limit: limitParam(1, 100, 25).describe("Page size, 1 to 100 (default 25)."),
  after: z.string().max(512).optional().describe("next_cursor from the previous page."),
});

export const supersedeBody = z.strictObject({ superseded_by: id("claim"), reason: z.string().max(1000).optional() });
export const reasonBody = z.strictObject({ reason: z.string().max(1000).optional() });
