// Enrichment: with extraction configured, the drain reads the observations written since its ledger
// position (org_meta "enrichment_after_seq"), asks the model for candidate claims and stores them as
// pending proposals for review. Proposals are never canonical claims; consolidation stays
// deterministic (model_used false). A model failure answers 503 and leaves the position unchanged.
import { ApiError } from "../../http/errors";
import { ID_PREFIX, newId } from "../../http/ids";
import type { Db } from "../../sql/db";
import { getMeta, setMeta } from "../../org/meta";
import type { ProposedClaim } from "../../vector/extraction";
import type { VectorRuntime } from "../../vector/runtime";
import { VectorBackendError } from "../../vector/types";

export interface ObservationForEnrichment {
  seq: number;
  observation_id: string;
  subject_id: string;
  content: string | null;
}

/**
 * Observations written after `afterSeq` (enrichment's ledger position), in write order, whoever wrote
 * them: the drain is background work of the organization, and what it proposes is shown only to those
 * who may retrieve the source observation (the Atlas's review_queue).
 */
export function observationsAfter(db: Db, afterSeq: number, limit: number): ObservationForEnrichment[] {
  return db.all(
    `SELECT rowid AS seq, observation_id, subject_id, CASE WHEN purged_at IS NULL THEN content END AS content
       FROM observations WHERE rowid > ? ORDER BY rowid LIMIT ?`,
    afterSeq,
    limit,
  );
}

export const observationsAfterCount = (db: Db, afterSeq: number): number =>
  db.first<{ n: number }>("SELECT count(*) AS n FROM observations WHERE rowid > ?", afterSeq)?.n ?? 0;

/** The observations among `ids` that have been purged. */
export const purgedAmong = (db: Db, ids: string[]): Set<string> =>
  new Set(
    db
      .all<{ observation_id: string }>(
        "SELECT observation_id FROM observations WHERE observation_id IN (SELECT value FROM json_each(?)) AND purged_at IS NOT NULL",
        JSON.stringify(ids),
      )
      .map((r) => r.observation_id),
  );

export const ENRICHMENT_POSITION = "enrichment_after_seq";

export interface EnrichmentPlan {
  /** The ledger position the plan started from. */
  from: number;
  lastSeq: number;
  observations: number;
  proposals: { observation_id: string; subject_id: string; claim: ProposedClaim }[];
  model: string;
}

export const enrichmentPosition = (db: Db): number => Number(getMeta(db, ENRICHMENT_POSITION) ?? 0);

/** null: extraction is disabled (the drain answers status "disabled"). */
export async function runEnrichment(db: Db, rt: VectorRuntime, limit: number): Promise<EnrichmentPlan | null> {
  const extractor = rt.extractor;
  if (!extractor) return null;
  const from = enrichmentPosition(db);
  const batch = observationsAfter(db, from, limit);
  const proposals: EnrichmentPlan["proposals"] = [];
  try {
    for (const o of batch) {
      if (!o.content) continue; // purged: nothing to read
      for (const claim of await extractor.propose(o.content))
        proposals.push({ observation_id: o.observation_id, subject_id: o.subject_id, claim });
    }
  } catch (err) {
    if (!(err instanceof VectorBackendError)) throw err;
    throw new ApiError("UNAVAILABLE", "The extraction model is unreachable; the ledger is untouched.", {
      pending: observationsAfterCount(db, from),
      retryable: true,
    });
  }
  return {
    from,
    lastSeq: batch.length ? batch[batch.length - 1].seq : from,
    observations: batch.length,
    proposals,
    model: extractor.model,
  };
}

/** The transactional half: store the proposals and advance the ledger (call in a transaction). */
export function applyEnrichment(db: Db, plan: EnrichmentPlan, at: string): string[] | null {
  // A concurrent drain got there first (the model call awaited): its proposals stand, these are dropped.
  if (enrichmentPosition(db) !== plan.from) return null;
  const ids: string[] = [];
  // An observation purged while the model was called keeps no proposal derived from its content.
  const purged = purgedAmong(db, [...new Set(plan.proposals.map((p) => p.observation_id))]);
  for (const p of plan.proposals) {
    if (purged.has(p.observation_id)) continue;
    const id = newId(ID_PREFIX.proposal);
    ids.push(id);
    db.run(
      `INSERT INTO enrichment_proposals (proposal_id, observation_id, subject_id, kind, statement, status, model, created_at)
       VALUES (?, ?, ?, ?, ?, 'pending', ?, ?)`,
      id,
      p.observation_id,
      p.subject_id,
      p.claim.kind,
      p.claim.statement,
      plan.model,
      at,
    );
  }
  setMeta(db, ENRICHMENT_POSITION, String(plan.lastSeq));
  return ids;
}
