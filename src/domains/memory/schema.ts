// Request schemas of the memory loop: the single source of validation and of published JSON Schema.
import { z } from "zod";
import { trustSchema } from "../../auth/trust";
import { VISIBILITIES } from "../../access/visibility";
import { limitParam, nonEmpty } from "../../http/validate";

export const OBSERVATION_KINDS = ["message", "tool_result", "document", "event", "note"] as const;
export const CLAIM_KINDS = ["fact", "preference", "decision", "instruction", "summary"] as const;
export const CLAIM_STATUSES = ["active", "disputed", "superseded", "revoked"] as const;
export const RELATIONS = ["supports", "contradicts", "qualifies"] as const;
export const OUTCOMES = ["used", "useful", "irrelevant", "incorrect", "harmful"] as const;

export const MAX_CONTENT_CHARS = 200_000;
export const MAX_STATEMENT_CHARS = 4_000;

const id = (what: string) => z.string().min(1, `must be a ${what} id`).max(64, `must be a ${what} id`);
const visibility = z.enum(VISIBILITIES);

export const resolveProjectBody = z.strictObject({
  reference: nonEmpty(500),
  create: z.boolean().default(false),
  /** The workspace whose memberships scope the new project's records; ignored for an existing project. */
  workspace_id: nonEmpty(100).optional(),
});

export const observationBody = z.strictObject({
  subject_id: nonEmpty(200),
  kind: z.enum(OBSERVATION_KINDS),
  content: z.string().min(1, "must not be empty").max(MAX_CONTENT_CHARS, `must be at most ${MAX_CONTENT_CHARS} characters`),
  source: z.strictObject({ type: nonEmpty(100), ref: z.string().max(500).optional() }),
  trust: trustSchema.optional(),
  visibility: visibility.optional(),
  project_id: id("project").optional(),
});

const sourceEntry = z.union([
  z.strictObject({ observation_id: id("observation"), relation: z.enum(RELATIONS) }),
  // Naming an existing claim in a contradicts source disputes it (DESIGN "Entry into disputed").
  z.strictObject({ claim_id: id("claim"), relation: z.literal("contradicts") }),
], { error: "must be { observation_id, relation } or { claim_id, relation: \"contradicts\" }" });

export const consolidationBody = z.strictObject({
  subject_id: nonEmpty(200),
  project_id: id("project").optional(),
  claims: z.array(z.strictObject({
    kind: z.enum(CLAIM_KINDS),
    statement: nonEmpty(MAX_STATEMENT_CHARS),
    visibility: visibility.optional(),
    valid_to: z.iso.datetime({ offset: true, error: "must be an ISO 8601 timestamp" }).optional(),
    sources: z.array(sourceEntry).min(1, "must name at least one source").max(50, "must have at most 50 entries"),
  })).min(1, "must hold 1 to 50 claims").max(50, "must hold 1 to 50 claims"),
});

export const compileBody = z.strictObject({
  query: z.string().max(4000).optional(),
  subject_id: nonEmpty(200).optional(),
  project_id: id("project").optional(),
  kinds: z.array(z.enum(CLAIM_KINDS)).min(1).max(CLAIM_KINDS.length).optional(),
  token_budget: z.number().int("must be an integer").min(1, "must be from 1 to 32000").max(32_000, "must be from 1 to 32000").default(1000),
  max_items: z.number().int("must be an integer").min(1, "must be from 1 to 200").max(200, "must be from 1 to 200").default(50),
});

export const feedbackBody = z.strictObject({
  outcome: z.enum(OUTCOMES),
  claim_id: id("claim").optional(),
  note: z.string().max(2000).optional(),
  client_mutation_id: nonEmpty(200).optional(),
});

export const memoriesQuery = z.object({
  q: z.string().max(1000).optional(),
  subject_id: z.string().max(200).optional(),
  project_id: z.string().max(64).optional(),
  status: z.enum(CLAIM_STATUSES).optional(),
  visibility: visibility.optional(),
  kind: z.enum(CLAIM_KINDS).optional(),
  limit: limitParam(1, 100, 25),
  after: z.string().max(512).optional(),
});

export const supersedeBody = z.strictObject({ superseded_by: id("claim"), reason: z.string().max(1000).optional() });
export const reasonBody = z.strictObject({ reason: z.string().max(1000).optional() });
