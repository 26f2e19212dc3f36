// The SQL of context runs, their items, feedback and the feedback score ranking reads.
import { canRetrieve, heldOrDelegated } from "../../access/retrieval";
import type { Caller } from "../../org/request";
import { type Db, fromClause, sql } from "../../sql/db";
import type { ClaimRow } from "./records";

export interface RunRow {
  context_id: string;
  actor_id: string;
  query: string | null;
  subject_id: string | null;
  project_id: string | null;
  kinds: string | null;
  token_budget: number;
  tokens_used: number;
  created_at: string;
}

/**
 * A run is readable by the principal that compiled it, and by the recipient of a live handoff that
 * delegates it (retrieval.ts heldOrDelegated); null otherwise.
 */
export const readableRun = (db: Db, caller: Caller, contextId: string) =>
  db.first<RunRow>(sql`SELECT * FROM context_runs r WHERE r.context_id = ${contextId}
    AND ${fromClause(heldOrDelegated(caller, "r", { id: "context_id", writer: "actor_id" }))}`);

/**
 * The items of a recorded run that the caller may retrieve now, in order, with their item score and
 * tokens: an item it can no longer read is left out without a trace.
 */
export const retrievableRunItems = (db: Db, caller: Caller, contextId: string) =>
  db
    .all<ClaimRow & { score: number; tokens: number }>(
      sql`SELECT c.*, i.score, i.tokens FROM context_items i JOIN claims c ON c.claim_id = i.claim_id
        WHERE i.context_id = ${contextId} ORDER BY i.position`,
    )
    .filter((c) => canRetrieve(caller, c));

export const insertRun = (db: Db, r: RunRow) =>
  db.run(sql`INSERT INTO context_runs (context_id, actor_id, query, subject_id, project_id, kinds, token_budget, tokens_used, created_at)
    VALUES (${r.context_id}, ${r.actor_id}, ${r.query}, ${r.subject_id}, ${r.project_id}, ${r.kinds}, ${r.token_budget},
      ${r.tokens_used}, ${r.created_at})`);

/** The run's items, in their order. */
export function insertRunItems(
  db: Db,
  contextId: string,
  items: readonly { claimId: string; score: number; tokens: number }[],
) {
  items.forEach((item, position) =>
    db.run(sql`INSERT INTO context_items (context_id, position, claim_id, score, tokens)
      VALUES (${contextId}, ${position}, ${item.claimId}, ${item.score}, ${item.tokens})`),
  );
}

export interface FeedbackRow {
  feedback_id: string;
  context_id: string;
  claim_id: string | null;
  outcome: string;
  note: string | null;
  client_mutation_id: string | null;
  actor_id: string;
  created_at: string;
}

export const feedbackMutationUsed = (db: Db, clientMutationId: string) =>
  !!db.first(sql`SELECT 1 FROM feedback WHERE client_mutation_id = ${clientMutationId}`);

export const insertFeedback = (db: Db, f: FeedbackRow) =>
  db.run(sql`INSERT INTO feedback (feedback_id, context_id, claim_id, outcome, note, client_mutation_id, actor_id, created_at)
    VALUES (${f.feedback_id}, ${f.context_id}, ${f.claim_id}, ${f.outcome}, ${f.note}, ${f.client_mutation_id},
      ${f.actor_id}, ${f.created_at})`);

/** Adds an outcome's weight to the claim's feedback score (claim_feedback_score, read by ranking). */
export const addFeedbackScore = (db: Db, claimId: string, weight: number) =>
  db.run(sql`INSERT INTO claim_feedback_score (claim_id, score) VALUES (${claimId}, ${weight})
    ON CONFLICT (claim_id) DO UPDATE SET score = score + excluded.score`);
