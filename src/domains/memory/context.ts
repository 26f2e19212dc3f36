// Context runs: compile a ranked pack into a token budget and record it; read it back; feedback.
import { compileMeta, compileResponse, contextRunResponse, feedbackResponse } from "./responses";
import { clock } from "../../http/clock";
import { conflict, invalid, notFound } from "../../http/errors";
import { ID_PREFIX, newId } from "../../http/ids";
import { orgRoute } from "../../org/route";
import type { Db } from "../../sql/db";
import type { Caller } from "../../org/request";
import { ok } from "../../org/request";
import { commitWrite } from "../../org/write";
import type { z } from "zod";
import { compilePack, type VectorSimilarities } from "./compile";
import { vectorHits } from "./vector-candidates";
import { runtimeFor } from "../../vector/runtime";
import { compileBody, feedbackBody } from "./schema";
import { isCurrentClaim } from "../../access/retrieval";
import {
  addFeedbackScore,
  feedbackMutationUsed,
  insertFeedback,
  insertRun,
  insertRunItems,
  readableRun,
  retrievableRunItems,
} from "./context-store";

export const DEGRADED = { vectors: true, model: true } as const;

/** Outcome weights fed back into ranking (claim_feedback_score). Run-level feedback counts half per item. */
export const OUTCOME_WEIGHT: Record<string, number> = {
  used: 0.5,
  useful: 1,
  irrelevant: -1,
  incorrect: -2,
  harmful: -3,
};

/**
 * Compile and record a run (the caller commits). `vectorsUsed`: a vector hit the caller may retrieve
 * was among the ranked candidates, so what tells the caller "vectors were used" depends only on
 * claims it may read (never on whether the index holds anything else).
 */
export function compileRun(
  db: Db,
  caller: Caller,
  body: z.infer<typeof compileBody>,
  vectors?: VectorSimilarities | null,
) {
  const { ranked, items, floorRemoved } = compilePack(
    db,
    caller,
    body,
    body.token_budget,
    body.max_items,
    undefined,
    vectors ?? undefined,
  );
  const vectorsUsed = !!vectors?.similarities.size && ranked.some((r) => vectors.similarities.has(r.claim.claim_id));
  const tokensUsed = items.reduce((n, i) => n + i.tokens, 0);
  const contextId = newId(ID_PREFIX.context);
  insertRun(db, {
    context_id: contextId,
    actor_id: caller.principalId,
    query: body.query ?? null,
    subject_id: body.subject_id ?? null,
    project_id: body.project_id ?? null,
    kinds: body.kinds ? JSON.stringify(body.kinds) : null,
    token_budget: body.token_budget,
    tokens_used: tokensUsed,
    created_at: clock.nowIso(),
  });
  insertRunItems(
    db,
    contextId,
    items.map((i) => ({ claimId: i.claim.claim_id, score: i.score, tokens: i.tokens })),
  );
  const run = {
    context_id: contextId,
    items: items.map((i) => ({
      claim_id: i.claim.claim_id,
      statement: i.claim.statement,
      kind: i.claim.kind,
      status: i.claim.status,
      trust: i.claim.trust,
      score: i.score,
      tokens: i.tokens,
    })),
    token_budget: body.token_budget,
    tokens_used: tokensUsed,
  };
  return { run, vectorsUsed, floorRemoved };
}

export const contextRoutes = [
  orgRoute({
    method: "POST",
    path: "/v1/context/compile",
    scope: "context:compile",
    body: compileBody,
    readOnly: true,
    response: { 201: compileResponse },
    responseMeta: compileMeta,
    summary: "Rank authorized, current claims into a token budget and record the run (ctx_).",
    operationId: "compileContext",
    tag: "Memory",
    description:
      "Ranks the claims the caller may read that are current and relevant to the query into a token budget, and " +
      "records the run as a `ctx_` context. `meta.degraded` says whether vectors or a model were missing.",
    handler: async (rc) => {
      // The vector lookup (an embedding and an authorized kNN query) runs before the transaction; its
      // hits are re-authorized inside it, with every other candidate (from the rows its accept read when
      // nothing was written in between, compile.ts CandidatesReadAhead). degraded.vectors is false only when a
      // hit the caller may retrieve took part in ranking (not when vectors are off, failed, or found
      // nothing the caller may read).
      // The embedder's relevance floor decides which hits are evidence of relevance on their own.
      const rt = runtimeFor(rc);
      const hits = await vectorHits(rt, rc.db, rc.caller, rc.body);
      const vectors = hits && { ...hits, floor: rt.config.embedding.similarity_floor };
      return commitWrite(rc, (db) => {
        const { run, vectorsUsed, floorRemoved } = compileRun(db, rc.caller, rc.body, vectors);
        return {
          status: 201,
          data: run,
          meta: { degraded: { ...DEGRADED, vectors: !vectorsUsed }, floor_removed: floorRemoved },
          audit: {
            action: "context.compiled",
            resourceType: "context",
            resourceId: run.context_id,
            detail: { items: run.items.length, tokens_used: run.tokens_used, token_budget: run.token_budget },
          },
        };
      });
    },
  }),

  orgRoute({
    method: "GET",
    path: "/v1/context/:id",
    scope: "handoffs:read",
    response: { 200: contextRunResponse },
    summary: "Read a run you compiled or that a handoff delegates to you; item visibility is rechecked now.",
    operationId: "getContextRun",
    tag: "Memory",
    description:
      "Reads a context run the caller compiled, or one a handoff delegates to it. Each item's visibility is checked " +
      "again at read time (`current`).",
    handler: ({ db, caller, params }) => {
      const run = readableRun(db, caller, params.id);
      if (!run) throw notFound("Context");
      // Scores were computed over the compiler's readable claims (normalized to its best match, boosted
      // by its neighbours), so only the compiler sees them; a delegated reader gets null.
      const ownRun = run.actor_id === caller.principalId;
      const items = retrievableRunItems(db, caller, run.context_id).map((c) => ({
        claim_id: c.claim_id,
        statement: c.statement,
        kind: c.kind,
        status: c.status,
        trust: c.trust,
        current: isCurrentClaim(c),
        score: ownRun ? c.score : null,
        tokens: c.tokens,
      }));
      return ok({
        context_id: run.context_id,
        query: run.query,
        subject_id: run.subject_id,
        project_id: run.project_id,
        kinds: run.kinds ? JSON.parse(run.kinds) : null,
        token_budget: run.token_budget,
        tokens_used: items.reduce((n, i) => n + i.tokens, 0),
        items,
        created_at: run.created_at,
      });
    },
  }),

  orgRoute({
    method: "POST",
    path: "/v1/context/:id/feedback",
    scope: "feedback:write",
    body: feedbackBody,
    idempotent: true,
    response: { 201: feedbackResponse, 200: feedbackResponse },
    summary: "Record an outcome for a run or one of its items (claim_id).",
    operationId: "recordFeedback",
    tag: "Memory",
    description:
      "Records an outcome (used, useful, irrelevant, incorrect, harmful) for a context run, or for one of its items " +
      "with `claim_id`. Honours `Idempotency-Key`; `client_mutation_id` is deduplicated per organization.",
    handler: (rc) => {
      const run = readableRun(rc.db, rc.caller, rc.params.id);
      if (!run) throw notFound("Context");
      // Only the items the caller may retrieve now, as GET /v1/context/:id shows them: run-level feedback
      // scores those alone, and naming any other claim answers exactly like naming a non-item.
      const itemIds = retrievableRunItems(rc.db, rc.caller, run.context_id).map((c) => c.claim_id);
      if (rc.body.claim_id !== undefined && !itemIds.includes(rc.body.claim_id))
        throw invalid(`Invalid field "claim_id": not an item of this context run.`);
      return commitWrite(rc, (db) => {
        const feedbackId = newId(ID_PREFIX.feedback);
        const at = clock.nowIso();
        if (rc.body.client_mutation_id && feedbackMutationUsed(db, rc.body.client_mutation_id))
          throw conflict("client_mutation_id was already used for a feedback record in this organization.");
        insertFeedback(db, {
          feedback_id: feedbackId,
          context_id: run.context_id,
          claim_id: rc.body.claim_id ?? null,
          outcome: rc.body.outcome,
          note: rc.body.note ?? null,
          client_mutation_id: rc.body.client_mutation_id ?? null,
          actor_id: rc.caller.principalId,
          created_at: at,
        });
        const weight = OUTCOME_WEIGHT[rc.body.outcome];
        if (rc.body.claim_id) addFeedbackScore(db, rc.body.claim_id, weight);
        else for (const id of itemIds) addFeedbackScore(db, id, weight / 2);
        return {
          status: 201,
          data: {
            feedback_id: feedbackId,
            context_id: run.context_id,
            claim_id: rc.body.claim_id ?? null,
            outcome: rc.body.outcome,
            client_mutation_id: rc.body.client_mutation_id ?? null,
            created_at: at,
          },
          audit: {
            action: "feedback.recorded",
            resourceType: "feedback",
            resourceId: feedbackId,
            detail: { context_id: run.context_id, claim_id: rc.body.claim_id ?? null, outcome: rc.body.outcome },
          },
        };
      });
    },
  }),
];
