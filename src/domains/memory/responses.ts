// Response schemas of the memory domain: published in docs/openapi.json, and every success answer the
// test suite receives is checked against them (test/helpers.ts `call`).
import { z } from "zod";
import { ID_PREFIX } from "../../http/ids";
import { contentHash, count, idOf, pageOf, principalId, timestamp } from "../../http/shapes";
import { trustSchema } from "../../auth/trust";
import { visibilitySchema } from "../../access/visibility";
import { CLAIM_KINDS, CLAIM_STATUSES, OBSERVATION_KINDS, OUTCOMES, RELATIONS } from "./schema";

const projectId = idOf(ID_PREFIX.project);
const claimId = idOf(ID_PREFIX.claim);
const observationId = idOf(ID_PREFIX.observation);
const contextId = idOf(ID_PREFIX.context);

export const observationResponse = z
  .strictObject({
    observation_id: observationId,
    content_hash: contentHash,
    subject_id: z.string(),
    project_id: projectId.nullable(),
    kind: z.enum(OBSERVATION_KINDS),
    trust: trustSchema,
    visibility: visibilitySchema,
    created_at: timestamp,
    occurred_at: timestamp.describe("When what it records happened (the append's occurred_at, else created_at)"),
  })
  .meta({ id: "Observation" });

/** An observation as a reader sees it (evidence, purge): content is null once purged. */
export const observationView = z.strictObject({
  observation_id: observationId,
  subject_id: z.string(),
  project_id: projectId.nullable(),
  kind: z.enum(OBSERVATION_KINDS),
  content: z.string().nullable(),
  content_hash: contentHash,
  source: z.strictObject({ type: z.string(), ref: z.string().optional() }),
  trust: trustSchema,
  visibility: visibilitySchema,
  author_id: principalId,
  created_at: timestamp,
  occurred_at: timestamp.describe("When what it records happened (the append's occurred_at, else created_at)"),
  purged: z.boolean(),
  purged_at: timestamp.nullable(),
});

export const purgeResponse = observationView.extend({ already_purged: z.boolean() }).meta({ id: "PurgedObservation" });

export const projectResolveResponse = z
  .strictObject({
    project_id: projectId,
    reference: z.string(),
    created: z.boolean(),
    workspace_id: idOf(ID_PREFIX.workspace).nullable(),
  })
  .meta({ id: "ResolvedProject" });

/** A claim as the caller sees it: sources, disputes and superseded_by limited to what it may read. */
export const claimResponse = z
  .strictObject({
    claim_id: claimId,
    subject_id: z.string(),
    project_id: projectId.nullable(),
    kind: z.enum(CLAIM_KINDS),
    statement: z.string(),
    status: z.enum(CLAIM_STATUSES),
    visibility: visibilitySchema,
    trust: trustSchema,
    version: z.number().int().positive(),
    valid_from: timestamp,
    valid_to: timestamp.nullable(),
    superseded_by: claimId.nullable(),
    disputes: z.array(claimId),
    sources: z.array(z.strictObject({ observation_id: observationId, relation: z.enum(RELATIONS) })),
    created_at: timestamp,
    updated_at: timestamp,
    occurred_at: timestamp.describe(
      "When what it says happened: the latest occurred_at of its source observations, fixed at consolidation",
    ),
  })
  .meta({ id: "Claim" });

export const consolidationResponse = z
  .strictObject({ claims: z.array(claimResponse), model_used: z.literal(false) })
  .meta({ id: "Consolidation" });
export const revokeResponse = claimResponse.extend({ already_revoked: z.boolean() }).meta({ id: "RevokedClaim" });
export const expireResponse = claimResponse.extend({ already_expired: z.boolean() }).meta({ id: "ExpiredClaim" });

const evidenceItem = observationView.extend({ relation: z.enum(RELATIONS) }).meta({ id: "EvidenceObservation" });
export const evidenceResponse = z
  .strictObject({
    claim: claimResponse,
    supporting: z.array(evidenceItem),
    contradicting: z.array(evidenceItem),
    qualifying: z.array(evidenceItem),
    hidden_source_count: count,
  })
  .meta({ id: "ClaimEvidence" });

export const memoriesResponse = pageOf("items", claimResponse).meta({ id: "ClaimList" });

const compiledItem = {
  claim_id: claimId,
  statement: z.string(),
  kind: z.enum(CLAIM_KINDS),
  status: z.enum(CLAIM_STATUSES),
  trust: trustSchema,
  score: z.number(),
  tokens: count,
};
export const compileResponse = z
  .strictObject({
    context_id: contextId,
    items: z.array(z.strictObject(compiledItem)),
    token_budget: count,
    tokens_used: count,
  })
  .meta({ id: "CompiledContext" });

export const contextRunResponse = z
  .strictObject({
    context_id: contextId,
    query: z.string().nullable(),
    subject_id: z.string().nullable(),
    project_id: projectId.nullable(),
    kinds: z.array(z.enum(CLAIM_KINDS)).nullable(),
    token_budget: count,
    tokens_used: count,
    // score: null for a delegated reader (scores were computed over what the compiler may read).
    items: z.array(z.strictObject({ ...compiledItem, score: z.number().nullable(), current: z.boolean() })),
    created_at: timestamp,
  })
  .meta({ id: "ContextRun" });

export const feedbackResponse = z
  .strictObject({
    feedback_id: idOf(ID_PREFIX.feedback),
    context_id: contextId,
    claim_id: claimId.nullable(),
    outcome: z.enum(OUTCOMES),
    client_mutation_id: z.string().nullable(),
    created_at: timestamp,
  })
  .meta({ id: "Feedback" });

/**
 * Compile's `meta` beside request_id: what this pack was ranked without (vectors: lexical only), and
 * how many candidates the relevance floor removed (claims the caller may read under the filters that
 * neither hold a query word nor reach the embedder's similarity floor; 0 without a query).
 */
export const compileMeta = {
  degraded: z.strictObject({ vectors: z.boolean(), model: z.boolean() }),
  floor_removed: count.describe(
    "Candidates the relevance floor left out: readable claims under the filters with no query word and a vector similarity below the embedder's floor (0 without a query)",
  ),
};
/** Consolidation's `meta` beside request_id and replayed: it is deterministic, no model takes part. */
export const consolidationMeta = { model: z.literal("disabled") };
