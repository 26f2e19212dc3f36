// Index drain and verify, shared by the routes and the background job. The slow part (embedding,
// upserting, deleting at the backend) runs first, outside any transaction; then one transaction
// acknowledges exactly the queue rows handled and records what the index now holds. A backend failure
// throws before anything is acknowledged, so the queue is untouched and a retry does the same work.
import { decodeCursor, encodeCursor, isSeqCursor } from "../../http/cursor";
import { ApiError } from "../../http/errors";
import { ID_PREFIX } from "../../http/ids";
import { type Db, fromClause, list, sql } from "../../sql/db";
import type { VectorRuntime } from "../../vector/runtime";
import { hasVectors } from "../../vector/runtime";
import { VectorBackendError } from "../../vector/types";
import type { Caller } from "../../org/request";
import { recordRetrievable, retrievable } from "../../access/retrieval";
import { claimMetadata, type ClaimForMetadata } from "../../vector/metadata";
import { ackIndexQueue, indexQueueSize, peekIndexQueue, queuedAmong, queueIndex } from "./queue";

export interface IndexableClaim extends ClaimForMetadata {
  claim_id: string;
  statement: string;
  /** 1 when the claim may be retrieved at all: active or disputed, still valid, not excluded by retention. */
  current: number;
}

/**
 * State of the named claims (missing ids are simply absent), whoever may read them: the index holds
 * every claim that may be retrieved at all (`current`: retrieval.ts recordRetrievable at `now`), and
 * compile re-authorizes every hit for its caller.
 */
export function claimsForIndex(db: Db, ids: string[], now: string): IndexableClaim[] {
  if (!ids.length) return [];
  const current = fromClause(recordRetrievable("c", { current: true }, now));
  return db.all<IndexableClaim>(
    sql`SELECT claim_id, statement, visibility, workspace_id, author_id, project_id, subject_id, kind, (${current}) AS current
          FROM claims c WHERE claim_id IN ${list(ids)}`,
  );
}

/** Up to `limit` + 1 current claims (recordRetrievable at `now`) after `afterSeq`, in write order (verify's pages). */
export function currentClaimsAfter(
  db: Db,
  afterSeq: number,
  limit: number,
  now: string,
): { seq: number; claim_id: string }[] {
  const [current, ...args] = recordRetrievable("c", { current: true }, now);
  return db.all(
    `SELECT seq, claim_id FROM claims c WHERE seq > ? AND ${current} ORDER BY seq LIMIT ?`,
    afterSeq,
    ...args,
    limit + 1,
  );
}

/**
 * How many of the claims the caller may retrieve were indexed with another model or dimension count
 * (all of them when no embedder is configured): GET /v1/models/config's drift for a caller who is not
 * an owner or admin, so that not even one bit of it depends on claims it cannot read.
 */
export function retrievableIndexedWithOtherModel(
  db: Db,
  caller: Caller,
  model: string | null,
  dimensions: number | null,
): number {
  const [rc, ...args] = retrievable(caller, "c");
  return db.first<{ n: number }>(
    `SELECT count(*) AS n FROM indexed_records i JOIN claims c ON c.claim_id = i.record_id
      WHERE (? IS NULL OR i.model <> ? OR i.dimensions <> ?) AND ${rc}`,
    model,
    model,
    dimensions,
    ...args,
  )!.n;
}

export function requireVectors(rt: VectorRuntime) {
  if (!hasVectors(rt))
    throw new ApiError("VALIDATION_ERROR", "No vector capability is configured (see GET /v1/models/config).");
  return rt;
}

/** 503 with the queue's size: the caller may retry; nothing was acknowledged. */
export function unavailable(db: Db, err: VectorBackendError): ApiError {
  const what = err.backend === "index" ? "vector index" : "embedding model";
  return new ApiError("UNAVAILABLE", `The ${what} is unreachable; the queue is untouched.`, {
    pending: indexQueueSize(db),
    retryable: true,
  });
}

/**
 * What the index holds: every record indexed, and those indexed with another model or dimension count
 * than the embedder configured now (all of them when no embedder is configured). One statement.
 */
export function indexDrift(
  db: Db,
  embedder: { model: string | null; dimensions: number | null },
): { indexed: number; other: number } {
  return db.first<{ indexed: number; other: number }>(
    `SELECT count(*) AS indexed, count(CASE WHEN ? IS NULL OR model <> ? OR dimensions <> ? THEN 1 END) AS other
       FROM indexed_records`,
    embedder.model,
    embedder.model,
    embedder.dimensions,
  )!;
}

export interface DrainPlan {
  seqs: number[];
  indexed: string[];
  removed: string[];
  skipped: number;
  model: string;
  dimensions: number;
}

/**
 * Take up to `limit` queue rows and bring the index in line with each record: a current claim is
 * embedded and upserted with its metadata (metadata.ts: what the ways filter on); a claim that was revoked, superseded, expired or removed is deleted from the
 * index if it was there. Observations are queued too (SPEC) but only claims are retrieved, so their
 * rows drain as skipped.
 */
export async function runDrain(db: Db, rt: VectorRuntime, limit: number, now: string): Promise<DrainPlan> {
  const { embedder, index } = requireVectors(rt);
  const rows = peekIndexQueue(db, limit);
  const ids = [...new Set(rows.map((r) => r.payload))];
  const claims = claimsForIndex(
    db,
    ids.filter((id) => id.startsWith(ID_PREFIX.claim)),
    now,
  );
  const byId = new Map(claims.map((c) => [c.claim_id, c]));
  const upsert = claims.filter((c) => c.current);
  const stale = ids.filter((id) => id.startsWith(ID_PREFIX.claim) && !byId.get(id)?.current);
  const held = new Set(
    db
      .all<{ record_id: string }>(
        "SELECT record_id FROM indexed_records WHERE record_id IN (SELECT value FROM json_each(?))",
        JSON.stringify(stale),
      )
      .map((r) => r.record_id),
  );
  const remove = stale.filter((id) => held.has(id));
  try {
    if (upsert.length) {
      const vectors = await embedder.embed(upsert.map((c) => c.statement));
      await index.upsert(upsert.map((c, i) => ({ id: c.claim_id, values: vectors[i], metadata: claimMetadata(c) })));
    }
    if (remove.length) await index.remove(remove);
  } catch (err) {
    if (err instanceof VectorBackendError) throw unavailable(db, err);
    throw err;
  }
  return {
    seqs: rows.map((r) => r.seq),
    indexed: upsert.map((c) => c.claim_id),
    removed: remove,
    skipped: ids.length - upsert.length - remove.length,
    model: embedder.model,
    dimensions: embedder.dimensions,
  };
}

/** The transactional half: acknowledge the rows and record what the index holds (call in a transaction). */
export function applyDrain(db: Db, plan: DrainPlan, at: string): void {
  ackIndexQueue(db, plan.seqs);
  for (const id of plan.indexed)
    db.run(
      `INSERT INTO indexed_records (record_id, model, dimensions, indexed_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (record_id) DO UPDATE SET model = excluded.model, dimensions = excluded.dimensions, indexed_at = excluded.indexed_at`,
      id,
      plan.model,
      plan.dimensions,
      at,
    );
  if (plan.removed.length)
    db.run(
      "DELETE FROM indexed_records WHERE record_id IN (SELECT value FROM json_each(?))",
      JSON.stringify(plan.removed),
    );
  // The plan was made before the model call awaited: a claim that changed meanwhile (revoked after it
  // was embedded, restored after it was removed) may have had its own queue row acknowledged by a
  // concurrent drain. Queue it again, so the index never keeps a vector its claim no longer warrants.
  const current = new Map(
    claimsForIndex(db, [...plan.indexed, ...plan.removed], at).map((c) => [c.claim_id, c.current]),
  );
  const changed = [...plan.indexed.filter((id) => !current.get(id)), ...plan.removed.filter((id) => current.get(id))];
  if (changed.length) queueIndex(db, changed, at);
}

export interface VerifyResult {
  checked: number;
  present: number;
  missing: number;
  pending: number;
  repairs_queued: number;
  next_after: string | null;
  /** Missing ids to queue for repair (inside the write's transaction). */
  repair: string[];
}

/**
 * Check up to `limit` current claims (after the cursor) against the index, reading ids only. An id the
 * index lacks is pending, not missing, when it is still queued or was upserted after the index's
 * applied-up-to time (Vectorize applies mutations asynchronously); otherwise it is missing and one
 * repair is queued for it.
 */
export async function runVerify(
  db: Db,
  rt: VectorRuntime,
  limit: number,
  after: string | undefined,
  now: string,
): Promise<VerifyResult> {
  const { index } = requireVectors(rt);
  const afterSeq = after ? decodeCursor(after, isSeqCursor)[0] : 0;
  const rows = currentClaimsAfter(db, afterSeq, limit, now);
  const page = rows.slice(0, limit);
  const ids = page.map((r) => r.claim_id);
  let have: Set<string>;
  let appliedUpTo: number | null;
  try {
    have = ids.length ? await index.present(ids) : new Set();
    appliedUpTo = await index.appliedUpTo();
  } catch (err) {
    if (err instanceof VectorBackendError) throw unavailable(db, err);
    throw err;
  }
  const absent = ids.filter((id) => !have.has(id));
  const queued = queuedAmong(db, absent);
  const indexedAt = new Map(
    db
      .all<{ record_id: string; indexed_at: string }>(
        "SELECT record_id, indexed_at FROM indexed_records WHERE record_id IN (SELECT value FROM json_each(?))",
        JSON.stringify(absent),
      )
      .map((r) => [r.record_id, Date.parse(r.indexed_at)]),
  );
  const pending = absent.filter(
    (id) => queued.has(id) || (appliedUpTo !== null && (indexedAt.get(id) ?? -Infinity) > appliedUpTo),
  );
  const repair = absent.filter((id) => !pending.includes(id));
  return {
    checked: ids.length,
    present: have.size,
    missing: repair.length,
    pending: pending.length,
    repairs_queued: repair.length,
    next_after: rows.length > limit ? encodeCursor([page[page.length - 1].seq]) : null,
    repair,
  };
}
