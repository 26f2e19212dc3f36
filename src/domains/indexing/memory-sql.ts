// The few reads of the memory tables that indexing and enrichment need.
// Moves into memory/records.ts at merge (the records branch owns all SQL on those tables).
import type { Db } from "../../org/db";

export interface IndexableClaim {
  claim_id: string;
  statement: string;
  /** 1 when the claim may be retrieved at all: active or disputed, and still valid. */
  current: number;
}

/** State of the named claims (missing ids are simply absent). */
export function claimsForIndex(db: Db, ids: string[], now: string): IndexableClaim[] {
  if (!ids.length) return [];
  return db.all<IndexableClaim>(
    `SELECT claim_id, statement,
            (status IN ('active', 'disputed') AND (valid_to IS NULL OR valid_to > ?)) AS current
       FROM claims WHERE claim_id IN (SELECT value FROM json_each(?))`, now, JSON.stringify(ids));
}

/** Up to `limit` + 1 current claims after `afterSeq`, in write order (verify's pages). */
export function currentClaimsAfter(db: Db, afterSeq: number, limit: number, now: string): { seq: number; claim_id: string }[] {
  return db.all(
    `SELECT seq, claim_id FROM claims
      WHERE seq > ? AND status IN ('active', 'disputed') AND (valid_to IS NULL OR valid_to > ?)
      ORDER BY seq LIMIT ?`, afterSeq, now, limit + 1);
}

export interface ObservationForEnrichment {
  seq: number;
  observation_id: string;
  subject_id: string;
  content: string | null;
}

/** Observations written after `afterSeq` (enrichment's ledger position), in write order. */
export function observationsAfter(db: Db, afterSeq: number, limit: number): ObservationForEnrichment[] {
  return db.all(
    `SELECT rowid AS seq, observation_id, subject_id, CASE WHEN purged_at IS NULL THEN content END AS content
       FROM observations WHERE rowid > ? ORDER BY rowid LIMIT ?`, afterSeq, limit);
}

export const observationsAfterCount = (db: Db, afterSeq: number): number =>
  db.first<{ n: number }>("SELECT count(*) AS n FROM observations WHERE rowid > ?", afterSeq)?.n ?? 0;
