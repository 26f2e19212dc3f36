// Webhook delivery: exactly once per (webhook, event). A drain claims its delivery rows in one
// transaction before sending anything, so a concurrent or replayed drain finds the rows and never
// resends. One attempt per delivery: success -> delivered; failure -> pending with next_retry_at from
// the backoff table (recorded, never re-attempted, per SPEC) and one more consecutive failure on the
// hook; ten in a row disable it. No response body is ever read or stored. A claim whose sender died
// (the row left 'sending' past RECLAIM_AFTER_MS) is sent again under the same delivery id: the unique
// (webhook, event) row keeps it one delivery, and receivers deduplicate on X-Svc-Delivery.
import { hmac } from "@noble/hashes/hmac.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { clock, isoAt } from "../../http/clock";
import { ID_PREFIX, newId } from "../../http/ids";
import type { Db } from "../../sql/db";
import { type EventRow, readableEventsAfter } from "../../org/events";
import type { BackgroundJob } from "../../org/jobs";
import { getMeta, setMeta } from "../../org/meta";
import { principalCaller } from "../identity/store";

export const BACKOFF_MS = [60_000, 300_000, 1_800_000, 7_200_000, 43_200_000] as const;
export const MAX_ATTEMPTS = BACKOFF_MS.length;
export const DISABLE_AFTER_FAILURES = 10;
export const SEND_TIMEOUT_MS = 10_000;
export const BACKGROUND_BATCH = 50;
/** A 'sending' row older than this lost its sender (an instance that died mid-send): send it again. */
export const RECLAIM_AFTER_MS = 6 * SEND_TIMEOUT_MS;

export interface WebhookRow {
  webhook_id: string;
  url: string;
  secret: string;
  events: string;
  status: "active" | "paused" | "disabled";
  failure_count: number;
  created_by: string;
  /** The event log position at registration: the hook receives only later events. */
  from_seq: number;
  created_at: string;
  updated_at: string;
}

/**
 * The outbound call, a dependency of the org Durable Object (OrgDeps.sendWebhook) so tests and
 * benchmarks can observe it. Resolves with the HTTP status.
 */
export type Sender = (url: string, init: { method: "POST"; headers: Record<string, string>; body: string }) => Promise<number>;

export const fetchSender: Sender = async (url, init) => {
  // A redirect is a failure (manual); a hung receiver is cut off by the timeout.
  const res = await fetch(url, { ...init, redirect: "manual", signal: AbortSignal.timeout(SEND_TIMEOUT_MS) });
  await res.body?.cancel();
  return res.status;
};

/** Never opens a connection: every send fails (WEBHOOK_SENDER=offline; the test environment). */
export const offlineSender: Sender = async (url) => {
  throw new Error(`webhook sending is offline; not sending to ${url}`);
};

export const signature = (secret: string, body: string) => "sha256=" + bytesToHex(hmac(sha256, utf8ToBytes(secret), utf8ToBytes(body)));

const subscribed = (hook: WebhookRow, e: EventRow) => {
  const kinds = JSON.parse(hook.events) as string[];
  return kinds.includes("*") || kinds.includes(e.kind);
};

/**
 * SPEC's three headers, plus what a receiver needs to act without parsing the body first: the event id
 * (stable across retries and across webhooks), the resource it is about as `type/id`, and when the
 * event happened (ISO 8601; the same on every retry, so receivers can order and drop stale events).
 * The signature still covers exactly the body, which is the stored payload.
 */
export const deliveryHeaders = (secret: string, event: EventRow, deliveryId: string): Record<string, string> => ({
  "content-type": "application/json",
  "x-svc-signature": signature(secret, event.payload),
  "x-svc-event": event.kind,
  "x-svc-delivery": deliveryId,
  "x-svc-event-id": event.event_id,
  "x-svc-resource": `${event.resource_type}/${event.resource_id}`,
  "x-svc-timestamp": event.created_at,
});

/**
 * The ids of the events in (afterSeq, upToSeq] that the hook's creator may read now, decided like
 * GET /v1/events (readableWhere with the creator's current role and grants); none once the creator is
 * removed, and none from before the hook was registered.
 */
function readableByCreator(db: Db, hook: WebhookRow, afterSeq: number, upToSeq: number): Set<string> {
  const creator = principalCaller(db, hook.created_by);
  if (!creator) return new Set();
  const from = Math.max(afterSeq, hook.from_seq);
  return new Set(readableEventsAfter(db, creator, from, { upToSeq, limit: Math.max(0, upToSeq - from) })
    .map((e) => e.event_id));
}

interface Claimed {
  deliveryId: string;
  hook: WebhookRow;
  event: EventRow;
}

/** Claim delivery rows for the events after `afterSeq`; returns the jobs and the last seq scanned. */
export function claimDeliveries(db: Db, storage: DurableObjectStorage, afterSeq: number, limit: number) {
  return storage.transactionSync(() => {
    const events = db.all<EventRow>("SELECT * FROM events WHERE seq > ? ORDER BY seq LIMIT ?", afterSeq, limit);
    const hooks = db.all<WebhookRow>("SELECT * FROM webhooks WHERE status = 'active' ORDER BY created_at, webhook_id");
    const jobs: Claimed[] = [];
    const at = clock.nowIso();
    const lastSeq = events.length ? events[events.length - 1].seq : afterSeq;
    const readable = new Map(hooks.map((h) => [h.webhook_id, events.length ? readableByCreator(db, h, afterSeq, lastSeq) : new Set<string>()]));
    for (const event of events)
      for (const hook of hooks) {
        if (!subscribed(hook, event) || !readable.get(hook.webhook_id)!.has(event.event_id)) continue;
        const deliveryId = newId(ID_PREFIX.delivery);
        const claimed = db.all(
          `INSERT INTO deliveries (delivery_id, webhook_id, event_id, status, attempts, created_at)
           VALUES (?, ?, ?, 'sending', 0, ?) ON CONFLICT (webhook_id, event_id) DO NOTHING RETURNING 1`,
          deliveryId, hook.webhook_id, event.event_id, at).length;
        if (claimed) jobs.push({ deliveryId, hook, event });
      }
    return { jobs, events, lastSeq };
  });
}

async function attempt(db: Db, storage: DurableObjectStorage, job: Claimed, send: Sender): Promise<void> {
  const hook = db.first<WebhookRow>("SELECT * FROM webhooks WHERE webhook_id = ?", job.hook.webhook_id);
  // Re-checked at the send: paused, disabled or deleted since the claim, or the creator may no longer
  // read the event (a grant revoked, the creator removed): release the claim so nothing is sent.
  if (!hook || hook.status !== "active" || !readableByCreator(db, hook, job.event.seq - 1, job.event.seq).has(job.event.event_id)) {
    db.run("DELETE FROM deliveries WHERE delivery_id = ?", job.deliveryId);
    return;
  }
  const body = job.event.payload; // exactly as stored
  // The send starts now: a row still 'sending' long after this lost its sender (see reclaimStale).
  db.run("UPDATE deliveries SET last_attempt_at = ? WHERE delivery_id = ?", clock.nowIso(), job.deliveryId);
  let status: number | null = null;
  try {
    status = await send(hook.url, {
      method: "POST", body,
      headers: deliveryHeaders(hook.secret, job.event, job.deliveryId),
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

/**
 * Re-claim deliveries whose sender died between claim and settle: rows left 'sending' since before
 * RECLAIM_AFTER_MS ago (stamped at claim, and again when the send starts). Returns them to send again.
 */
export function reclaimStale(db: Db, storage: DurableObjectStorage, limit: number): Claimed[] {
  return storage.transactionSync(() => {
    const now = clock.nowMs();
    const stale = db.all<{ delivery_id: string; webhook_id: string; event_id: string }>(
      `UPDATE deliveries SET last_attempt_at = ? WHERE delivery_id IN
         (SELECT delivery_id FROM deliveries WHERE status = 'sending' AND coalesce(last_attempt_at, created_at) <= ? ORDER BY seq LIMIT ?)
       RETURNING delivery_id, webhook_id, event_id`, isoAt(now), isoAt(now - RECLAIM_AFTER_MS), limit);
    const out: Claimed[] = [];
    for (const d of stale) {
      const hook = db.first<WebhookRow>("SELECT * FROM webhooks WHERE webhook_id = ?", d.webhook_id);
      const event = db.first<EventRow>("SELECT * FROM events WHERE event_id = ?", d.event_id);
      if (hook && event) out.push({ deliveryId: d.delivery_id, hook, event });
    }
    return out;
  });
}

/** When the oldest live 'sending' row becomes reclaimable, or null when none is in flight. */
function nextReclaimAt(db: Db): number | null {
  const oldest = db.first<{ at: string | null }>(
    "SELECT min(coalesce(last_attempt_at, created_at)) AS at FROM deliveries WHERE status = 'sending'")?.at;
  return oldest ? Date.parse(oldest) + RECLAIM_AFTER_MS : null;
}

/**
 * One drain pass: first re-send claims abandoned by a dead sender, then up to `limit` events after
 * `afterSeq`. Sends sequentially (bounded work per call).
 */
export async function drainEvents(db: Db, storage: DurableObjectStorage, afterSeq: number, limit: number, send: Sender) {
  for (const job of reclaimStale(db, storage, limit)) await attempt(db, storage, job, send);
  const { jobs, events, lastSeq } = claimDeliveries(db, storage, afterSeq, limit);
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
 * Background delivery, a named job (src/jobs.ts): new events make it due one maintenance interval
 * later (stored with the write); it then continues from its own cursor. With the interval at 0 there
 * is no background delivery at all (the manual drain still works).
 */
export const webhookDeliveryJob: BackgroundJob = {
  name: "webhook_delivery",
  dueAfterEvents: (db, intervalMs) => (intervalMs > 0 && hasActiveHooks(db) ? clock.nowMs() + intervalMs : null),
  async run({ db, storage, maintenanceIntervalMs, deps }) {
    if (maintenanceIntervalMs <= 0) return null;
    if (await backgroundDrain(db, storage, deps.sendWebhook)) return clock.nowMs();
    return nextReclaimAt(db);
  },
  retryMs: ({ maintenanceIntervalMs }) => maintenanceIntervalMs,
};
