// The SQL of webhooks and their deliveries. Which hooks a caller manages (managesShared) and which
// deliveries it may see (the events it may read) are decided here in SQL, like their code forms.
import type { Caller } from "../../access/caller";
import { isAdmin } from "../../access/policy";
import { readableEventsWhere } from "../../org/events";
import { type Db, fromClause, list, sql } from "../../sql/db";

// Webhooks ---------------------------------------------------------------------------------------

export interface WebhookRow {
  webhook_id: string;
  url: string;
  secret: string;
  /** JSON list of event kinds, or ["*"]. */
  events: string;
  status: "active" | "paused" | "disabled";
  failure_count: number;
  created_by: string;
  /** The event log position at registration: the hook receives only later events. */
  from_seq: number;
  /** How far the background has claimed this hook's events (it stays put while the hook is paused). */
  scanned_seq: number;
  created_at: string;
  updated_at: string;
}

export const getHook = (db: Db, webhookId: string) =>
  db.first<WebhookRow>(sql`SELECT * FROM webhooks WHERE webhook_id = ${webhookId}`);

export const countHooks = (db: Db) => db.first<{ n: number }>(sql`SELECT count(*) AS n FROM webhooks`)!.n;

export const insertHook = (db: Db, w: WebhookRow) =>
  db.run(sql`INSERT INTO webhooks (webhook_id, url, secret, events, status, failure_count, created_by, from_seq, scanned_seq, created_at, updated_at)
    VALUES (${w.webhook_id}, ${w.url}, ${w.secret}, ${w.events}, ${w.status}, ${w.failure_count}, ${w.created_by},
      ${w.from_seq}, ${w.scanned_seq}, ${w.created_at}, ${w.updated_at})`);

/** managesShared in SQL over the webhooks table: the hooks the caller may list and manage. */
const managedBy = (caller: Caller) => sql`(${isAdmin(caller) ? 1 : 0} = 1 OR created_by = ${caller.principalId})`;

export const managedHooks = (db: Db, caller: Caller) =>
  db.all<WebhookRow>(sql`SELECT * FROM webhooks WHERE ${managedBy(caller)} ORDER BY created_at, webhook_id`);

export const managedHookIds = (db: Db, caller: Caller) =>
  new Set(
    db
      .all<{ webhook_id: string }>(sql`SELECT webhook_id FROM webhooks WHERE ${managedBy(caller)}`)
      .map((h) => h.webhook_id),
  );

/** Every hook, or only the active ones, in registration order. */
export const hooksInOrder = (db: Db, only?: "active") =>
  db.all<WebhookRow>(
    sql`SELECT * FROM webhooks ${only ? sql`WHERE status = ${only}` : sql``} ORDER BY created_at, webhook_id`,
  );

export const hasActiveHooks = (db: Db) => !!db.first(sql`SELECT 1 FROM webhooks WHERE status = 'active' LIMIT 1`);

/** Removes the hook and its delivery rows; answers how many deliveries went. */
export function deleteHook(db: Db, webhookId: string): number {
  const removed = db.all(sql`DELETE FROM deliveries WHERE webhook_id = ${webhookId} RETURNING 1`).length;
  db.run(sql`DELETE FROM webhooks WHERE webhook_id = ${webhookId}`);
  return removed;
}

/** Pause, or resume (which starts its count of consecutive failures again). */
export const setHookStatus = (db: Db, webhookId: string, status: "active" | "paused", at: string) =>
  db.run(sql`UPDATE webhooks SET status = ${status}, ${status === "active" ? sql`failure_count = 0,` : sql``}
    updated_at = ${at} WHERE webhook_id = ${webhookId}`);

/** The background has looked at the events up to `seq` for this hook. */
export const moveHookPosition = (db: Db, webhookId: string, seq: number) =>
  db.run(sql`UPDATE webhooks SET scanned_seq = ${seq} WHERE webhook_id = ${webhookId}`);

export const resetHookFailures = (db: Db, webhookId: string) =>
  db.run(sql`UPDATE webhooks SET failure_count = 0 WHERE webhook_id = ${webhookId}`);

/**
 * One more delivery of the hook failed for good; the `disableAfter`th in a row disables an active
 * hook. Answers the hook's status afterwards.
 */
export const countHookFailure = (db: Db, webhookId: string, disableAfter: number, at: string) =>
  db.first<{ status: WebhookRow["status"] }>(sql`UPDATE webhooks SET failure_count = failure_count + 1,
      status = CASE WHEN failure_count + 1 >= ${disableAfter} AND status = 'active' THEN 'disabled' ELSE status END,
      updated_at = ${at}
    WHERE webhook_id = ${webhookId} RETURNING status`)?.status;

/**
 * Per hook, what delivery work it has: whether an active hook is behind the end of the log, the
 * earliest due retry of an active hook, and the earliest claim left 'sending' that no pass holds.
 */
export const hookWorkTimes = (db: Db, heldIds: readonly string[]) =>
  db.all<{ webhook_id: string; behind: number; retry: string | null; reclaim: string | null }>(
    sql`SELECT w.webhook_id,
            w.status = 'active' AND max(w.scanned_seq, w.from_seq) < (SELECT coalesce(max(seq), 0) FROM events) AS behind,
            CASE WHEN w.status = 'active' THEN
              (SELECT min(d.next_retry_at) FROM deliveries d WHERE d.webhook_id = w.webhook_id AND d.status = 'pending') END AS retry,
            (SELECT min(coalesce(d.last_attempt_at, d.created_at)) FROM deliveries d
              WHERE d.webhook_id = w.webhook_id AND d.status = 'sending' AND d.delivery_id NOT IN ${list(heldIds)}) AS reclaim
       FROM webhooks w`,
  );

// Deliveries -------------------------------------------------------------------------------------

/** Why a delivery ended 'failed' (its failure_reason). */
export const FAILURE_REASONS = ["attempts_exhausted", "hook_disabled", "event_unreadable"] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

export interface DeliveryRow {
  seq: number;
  delivery_id: string;
  webhook_id: string;
  event_id: string;
  status: "sending" | "pending" | "delivered" | "failed";
  attempts: number;
  last_attempt_at: string | null;
  next_retry_at: string | null;
  response_status: number | null;
  failure_reason: FailureReason | null;
  created_at: string;
}

type DeliveryRef = Pick<DeliveryRow, "delivery_id" | "event_id">;

export const getDelivery = (db: Db, deliveryId: string) =>
  db.first<DeliveryRow>(sql`SELECT * FROM deliveries WHERE delivery_id = ${deliveryId}`);

/** Inserts a 'sending' row for (hook, event) unless one exists; answers whether it did (the claim). */
export const insertClaim = (db: Db, deliveryId: string, webhookId: string, eventId: string, at: string) =>
  db.all(sql`INSERT INTO deliveries (delivery_id, webhook_id, event_id, status, attempts, created_at)
    VALUES (${deliveryId}, ${webhookId}, ${eventId}, 'sending', 0, ${at})
    ON CONFLICT (webhook_id, event_id) DO NOTHING RETURNING 1`).length > 0;

/** The hook's 'sending' rows stamped at or before `before` that no pass holds, oldest first. */
export const abandonedClaims = (db: Db, webhookId: string, before: string, heldIds: readonly string[], max: number) =>
  db.all<DeliveryRef>(sql`SELECT delivery_id, event_id FROM deliveries
    WHERE webhook_id = ${webhookId} AND status = 'sending' AND coalesce(last_attempt_at, created_at) <= ${before}
      AND delivery_id NOT IN ${list(heldIds)} ORDER BY seq LIMIT ${max}`);

/** The hook's 'pending' rows whose retry is due by `now`, earliest first. */
export const dueRetries = (db: Db, webhookId: string, now: string, max: number) =>
  db.all<DeliveryRef>(sql`SELECT delivery_id, event_id FROM deliveries
    WHERE webhook_id = ${webhookId} AND status = 'pending' AND next_retry_at <= ${now}
    ORDER BY next_retry_at, seq LIMIT ${max}`);

/** A send starts (or a claim is taken over) now: the stamp reclaiming is measured from. */
export const stampAttempt = (db: Db, deliveryId: string, at: string) =>
  db.run(sql`UPDATE deliveries SET last_attempt_at = ${at} WHERE delivery_id = ${deliveryId}`);

export const markSending = (db: Db, deliveryId: string) =>
  db.run(sql`UPDATE deliveries SET status = 'sending' WHERE delivery_id = ${deliveryId}`);

/** Back to waiting, due at `dueAt`, nothing sent (its hook was paused since the claim). */
export const backToPending = (db: Db, deliveryId: string, dueAt: string) =>
  db.run(sql`UPDATE deliveries SET status = 'pending', next_retry_at = ${dueAt} WHERE delivery_id = ${deliveryId}`);

/** Ends failed, never tried again automatically. */
export const failDelivery = (db: Db, deliveryId: string, reason: FailureReason) =>
  db.run(sql`UPDATE deliveries SET status = 'failed', next_retry_at = NULL, failure_reason = ${reason}
    WHERE delivery_id = ${deliveryId}`);

/** Every delivery of these hooks still waiting for a retry ends failed: the hooks were disabled. */
export const failWaitingDeliveries = (db: Db, webhookIds: readonly string[]) =>
  db.run(sql`UPDATE deliveries SET status = 'failed', next_retry_at = NULL, failure_reason = 'hook_disabled'
    WHERE webhook_id IN ${list(webhookIds)} AND status = 'pending'`);

export const markDelivered = (db: Db, deliveryId: string, at: string, responseStatus: number) =>
  db.run(sql`UPDATE deliveries SET status = 'delivered', attempts = attempts + 1, last_attempt_at = ${at},
      next_retry_at = NULL, response_status = ${responseStatus}
    WHERE delivery_id = ${deliveryId}`);

/** A failed attempt: waiting for its retry at `nextRetryAt`, or failed for good with `reason`. */
export function recordFailedAttempt(
  db: Db,
  deliveryId: string,
  a: {
    attempts: number;
    at: string;
    nextRetryAt: string | null;
    responseStatus: number | null;
    reason: FailureReason | null;
  },
) {
  db.run(sql`UPDATE deliveries SET status = ${a.reason ? "failed" : "pending"}, attempts = ${a.attempts},
      last_attempt_at = ${a.at}, next_retry_at = ${a.nextRetryAt}, response_status = ${a.responseStatus},
      failure_reason = ${a.reason}
    WHERE delivery_id = ${deliveryId}`);
}

/** A failed delivery goes back to waiting, due at `dueAt`, under the same id (a redelivery). */
export const reopenFailedDelivery = (db: Db, deliveryId: string, dueAt: string) =>
  db.run(sql`UPDATE deliveries SET status = 'pending', next_retry_at = ${dueAt}, failure_reason = NULL
    WHERE delivery_id = ${deliveryId} AND status = 'failed'`);

// Deliveries as a caller sees them: only those of events it may read (GET /v1/events/:id answers them).

const readableDeliveries = (caller: Caller, webhookId: string) =>
  sql`FROM deliveries d JOIN events e ON e.event_id = d.event_id
    WHERE d.webhook_id = ${webhookId} AND ${fromClause(readableEventsWhere(caller, "e"))}`;

/** One delivery of the hook the caller may see, or null (as missing as a random id). */
export const readableDelivery = (db: Db, caller: Caller, webhookId: string, deliveryId: string) =>
  db.first<DeliveryRow>(sql`SELECT d.* ${readableDeliveries(caller, webhookId)} AND d.delivery_id = ${deliveryId}`);

/** The hook's deliveries the caller may see before list position `beforeSeq`, newest first. */
export const readableDeliveriesBefore = (db: Db, caller: Caller, webhookId: string, beforeSeq: number, limit: number) =>
  db.all<DeliveryRow>(
    sql`SELECT d.* ${readableDeliveries(caller, webhookId)} AND d.seq < ${beforeSeq} ORDER BY d.seq DESC LIMIT ${limit}`,
  );

/** Deliveries still to be sent (pending or sending) of hooks the caller manages and events it may read. */
export const pendingDeliveriesFor = (db: Db, caller: Caller) =>
  db.first<{ n: number }>(sql`SELECT count(*) AS n FROM deliveries d JOIN events e ON e.event_id = d.event_id
    WHERE d.status IN ('pending', 'sending') AND ${fromClause(readableEventsWhere(caller, "e"))}
      AND d.webhook_id IN (SELECT webhook_id FROM webhooks WHERE ${managedBy(caller)})`)!.n;
