// Webhook delivery: exactly once per (webhook, event). A drain claims its delivery rows in one
// transaction before sending anything, so a concurrent or replayed drain finds the rows and never
// resends. One attempt per delivery: success -> delivered; failure -> pending with next_retry_at from
// the backoff table (recorded, never re-attempted, per SPEC) and one more consecutive failure on the
// hook; ten in a row disable it. No response body is ever read or stored.
import { hmac } from "@noble/hashes/hmac.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { clock, isoAt } from "../../http/clock";
import { ID_PREFIX, newId } from "../../http/ids";
import type { Db } from "../../org/db";
import { deleteMeta, getMeta, setMeta } from "../../org/meta";

export const BACKOFF_MS = [60_000, 300_000, 1_800_000, 7_200_000, 43_200_000] as const;
export const MAX_ATTEMPTS = BACKOFF_MS.length;
export const DISABLE_AFTER_FAILURES = 10;
export const SEND_TIMEOUT_MS = 10_000;
export const BACKGROUND_BATCH = 50;

export interface WebhookRow {
  webhook_id: string;
  url: string;
  secret: string;
  events: string;
  status: "active" | "paused" | "disabled";
  failure_count: number;
  created_by: string;
  created_at: string;
  updated_at: string;
}

interface EventRow {
  seq: number;
  event_id: string;
  kind: string;
  actor_id: string;
  payload: string;
  visibility: string;
}

/** The outbound call, injected so tests and benchmarks can observe it. Resolves with the HTTP status. */
export type Sender = (url: string, init: { method: "POST"; headers: Record<string, string>; body: string }) => Promise<number>;

export const fetchSender: Sender = async (url, init) => {
  // A redirect is a failure (manual); a hung receiver is cut off by the timeout.
  const res = await fetch(url, { ...init, redirect: "manual", signal: AbortSignal.timeout(SEND_TIMEOUT_MS) });
  await res.body?.cancel();
  return res.status;
};

export const signature = (secret: string, body: string) => "sha256=" + bytesToHex(hmac(sha256, utf8ToBytes(secret), utf8ToBytes(body)));

const subscribed = (hook: WebhookRow, e: EventRow) => {
  const kinds = JSON.parse(hook.events) as string[];
  // A hook sees what its creator could read through GET /v1/events.
  return (kinds.includes("*") || kinds.includes(e.kind)) && (e.visibility === "team" || e.actor_id === hook.created_by);
};

interface Job {
  deliveryId: string;
  hook: WebhookRow;
  event: EventRow;
}

/** Claim delivery rows for the events after `afterSeq`; returns the jobs and the last seq scanned. */
function claim(db: Db, storage: DurableObjectStorage, afterSeq: number, limit: number) {
  return storage.transactionSync(() => {
    const events = db.all<EventRow>(
      "SELECT seq, event_id, kind, actor_id, payload, visibility FROM events WHERE seq > ? ORDER BY seq LIMIT ?", afterSeq, limit);
    const hooks = db.all<WebhookRow>("SELECT * FROM webhooks WHERE status = 'active' ORDER BY created_at, webhook_id");
    const jobs: Job[] = [];
    const at = clock.nowIso();
    for (const event of events)
      for (const hook of hooks) {
        if (!subscribed(hook, event)) continue;
        const deliveryId = newId(ID_PREFIX.delivery);
        const claimed = db.all(
          `INSERT INTO deliveries (delivery_id, webhook_id, event_id, status, attempts, created_at)
           VALUES (?, ?, ?, 'sending', 0, ?) ON CONFLICT (webhook_id, event_id) DO NOTHING RETURNING 1`,
          deliveryId, hook.webhook_id, event.event_id, at).length;
        if (claimed) jobs.push({ deliveryId, hook, event });
      }
    return { jobs, events, lastSeq: events.length ? events[events.length - 1].seq : afterSeq };
  });
}

async function attempt(db: Db, storage: DurableObjectStorage, job: Job, send: Sender): Promise<void> {
  const hook = db.first<WebhookRow>("SELECT * FROM webhooks WHERE webhook_id = ?", job.hook.webhook_id);
  if (!hook || hook.status !== "active") {
    // Paused, disabled or deleted since the claim: release the claim so nothing is lost or sent.
    db.run("DELETE FROM deliveries WHERE delivery_id = ?", job.deliveryId);
    return;
  }
  const body = job.event.payload; // exactly as stored
  let status: number | null = null;
  try {
    status = await send(hook.url, {
      method: "POST", body,
      headers: {
        "content-type": "application/json", "x-svc-signature": signature(hook.secret, body),
        "x-svc-event": job.event.kind, "x-svc-delivery": job.deliveryId,
      },
    });
  } catch {
    status = null; // network error or timeout
  }
  const ok = status != null && status >= 200 && status < 300;
  const at = clock.nowMs();
  storage.transactionSync(() => {
    db.run(
      `UPDATE deliveries SET status = ?, attempts = attempts + 1, last_attempt_at = ?, next_retry_at = ?, response_status = ?
        WHERE delivery_id = ?`,
      ok ? "delivered" : "pending", isoAt(at), ok ? null : isoAt(at + BACKOFF_MS[0]), status, job.deliveryId);
    if (ok) db.run("UPDATE webhooks SET failure_count = 0 WHERE webhook_id = ?", hook.webhook_id);
    else
      db.run(
        `UPDATE webhooks SET failure_count = failure_count + 1,
           status = CASE WHEN failure_count + 1 >= ? AND status = 'active' THEN 'disabled' ELSE status END, updated_at = ?
         WHERE webhook_id = ?`, DISABLE_AFTER_FAILURES, isoAt(at), hook.webhook_id);
  });
}

export const pendingDeliveries = (db: Db) =>
  db.first<{ n: number }>("SELECT count(*) AS n FROM deliveries WHERE status IN ('pending', 'sending')")!.n;

/** One drain pass over up to `limit` events after `afterSeq`. Sends sequentially (bounded work per call). */
export async function drainEvents(db: Db, storage: DurableObjectStorage, afterSeq: number, limit: number, send: Sender) {
  const { jobs, events, lastSeq } = claim(db, storage, afterSeq, limit);
  for (const job of jobs) await attempt(db, storage, job, send);
  return { eventsDrained: events.length, lastEventId: events.length ? events[events.length - 1].event_id : null, lastSeq };
}

export const hasActiveHooks = (db: Db) => !!db.first("SELECT 1 FROM webhooks WHERE status = 'active' LIMIT 1");

/**
 * The alarm's share: continue from the background cursor (org_meta 'webhook_cursor'). Returns true
 * when more events are waiting.
 */
export async function backgroundDrain(db: Db, storage: DurableObjectStorage, send: Sender): Promise<boolean> {
  if (!hasActiveHooks(db)) return false;
  const cursor = Number(getMeta(db, "webhook_cursor") ?? 0);
  const { lastSeq, eventsDrained } = await drainEvents(db, storage, cursor, BACKGROUND_BATCH, send);
  setMeta(db, "webhook_cursor", String(lastSeq));
  return eventsDrained === BACKGROUND_BATCH;
}

/**
 * New events make background delivery due within one interval. Called inside the write's transaction,
 * so the due time is stored with the events; returns when the alarm should wake (null: nothing due).
 */
export function markDeliveryDue(db: Db, intervalMs: number): number | null {
  if (intervalMs <= 0 || !hasActiveHooks(db)) return null;
  const due = clock.nowMs() + intervalMs;
  const current = Number(getMeta(db, "webhook_due_at") ?? Infinity);
  if (due < current) setMeta(db, "webhook_due_at", String(due));
  return Math.min(due, current);
}

/**
 * The alarm's delivery step: runs only once delivery is due (an alarm woken early for other work
 * delivers nothing ahead of time). Returns when to wake next for delivery, or null.
 */
export async function runDueDelivery(db: Db, storage: DurableObjectStorage, intervalMs: number, send: Sender): Promise<number | null> {
  const dueAt = getMeta(db, "webhook_due_at");
  if (intervalMs <= 0 || dueAt === undefined) return null;
  if (Number(dueAt) > clock.nowMs()) return Number(dueAt);
  let next: number | null = null;
  try {
    if (await backgroundDrain(db, storage, send)) next = clock.nowMs();
  } catch (err) {
    console.error("background webhook delivery failed; retrying", err);
    next = clock.nowMs() + intervalMs;
  }
  if (next == null) deleteMeta(db, "webhook_due_at");
  else setMeta(db, "webhook_due_at", String(next));
  return next;
}

/** The maintenance interval in ms (0: no background timer). */
export const maintenanceIntervalMs = (env: { MAINTENANCE_INTERVAL_SECONDS?: string }) =>
  Math.max(0, Number(env.MAINTENANCE_INTERVAL_SECONDS ?? 0) || 0) * 1000;
