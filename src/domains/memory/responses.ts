// Response schemas of the memory loop: published in docs/openapi.json, and every response the test
// suite receives from these routes is checked against them (test/helpers.ts `call`).
import { z } from "zod";

const id = z.string();
const nullableId = z.string().nullable();
const iso = z.string();

export const observationResponse = z.object({
  observation_id: id, content_hash: z.string().regex(/^sha256:[0-9a-f]{64}$/), subject_id: z.string(), project_id: nullableId,
  kind: z.string(), trust: z.string(), visibility: z.string(), created_at: iso,
});

export const projectResolveResponse = z.object({ project_id: id, reference: z.string(), created: z.boolean() });

export const claimResponse = z.object({
  claim_id: id, subject_id: z.string(), project_id: nullableId, kind: z.string(), statement: z.string(), status: z.string(),
  visibility: z.string(), trust: z.string(), version: z.number().int(), valid_from: iso, valid_to: iso.nullable(),
  superseded_by: nullableId, disputes: z.array(id), sources: z.array(z.object({ relation: z.string() }).loose()),
  created_at: iso, updated_at: iso,
});

export const consolidationResponse = z.object({ claims: z.array(claimResponse), model_used: z.literal(false) });

export const memoriesResponse = z.object({ items: z.array(claimResponse), has_more: z.boolean(), next_cursor: nullableId });

export const compileResponse = z.object({
  context_id: id,
  items: z.array(z.object({ claim_id: id, statement: z.string(), kind: z.string(), status: z.string(), trust: z.string(), score: z.number(), tokens: z.number().int() })),
  token_budget: z.number().int(), tokens_used: z.number().int(),
});

export const feedbackResponse = z.object({
  feedback_id: id, context_id: id, claim_id: nullableId, outcome: z.string(), client_mutation_id: z.string().nullable(), created_at: iso,
});
