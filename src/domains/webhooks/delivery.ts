// Webhook delivery: exactly once per (webhook, event), retried by the service until it succeeds or
// runs out of attempts (DESIGN part 3, "Webhook delivery: retried by the service").
//   claim    a delivery row (unique per webhook and event) is inserted as 'sending' in one
//            transaction before anything is sent, so a concurrent or replayed pass finds it and skips;
//   attempt  success -> 'delivered'; a failure (network error, timeout, non-2xx) -> 'pending' with
//            next_retry_at from the retry schedule, or 'failed' after MAX_ATTEMPTS; each delivery that
//            fails for good counts one consecutive failure on the hook (a success resets the count),
//            and DISABLE_AFTER_FAILURES in a row disable it;
//   retry    the org alarm claims due 'pending' rows back to 'sending' and sends them again under the
//            same delivery id (receivers deduplicate on it);
//   reclaim  a 'sending' row that no pass of this object holds, left since before RECLAIM_AFTER_MS,
//            lost its sender (the object died mid-send): it is sent again under the same delivery id.
// Each hook keeps its own position in the event log (scanned_seq): the background claims the events
// after it, so a paused hook accrues and resumes where it stopped. No response body is read or stored.
import { hmac } from "@noble/hashes/hmac.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { clock, isoAt } from "../../http/clock";
import { ID_PREFIX, newId } from "../../http/ids";
import type { Db } from "../../org/db";
import { type EventRow, readableEventsAfter, readableEventsWhere } from "../../org/events";
import type { BackgroundJob } from "../../org/jobs";
import { principalCaller } from "../identity/store";

/** SPEC's backoff constants: attempt n+1 is due SPEC_RETRY_SCHEDULE_MS[n-1] after attempt n. */
export const SPEC_RETRY_SCHEDULE_MS: readonly number[] = [60_000, 300_000, 1_800_000, 7_200_000, 43_200_000];
export const MAX_ATTEMPTS = 5;
export const DISABLE_AFTER_FAILURES = 10;
export const SEND_TIMEOUT_MS = 10_000;
/** Delivery rows one background pass claims at most (new events scanned, due retries, reclaims). */
export const BACKGROUND_BATCH = 50;
/** Sends in flight at once per pass: a Worker invocation keeps at most six connections open. */
export const SEND_CONCURRENCY = 6;
/** A 'sending' row no pass holds, older than this, lost its sender (an instance that died mid-send). */
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
  /** How far the background has claimed this hook's events (it stays put while the hook is paused). */
  scanned_seq: number;
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

const DURATION = /^(\d+)(ms|s|m|h|d)$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `WEBHOOK_RETRY_SCHEDULE`, a comma list of positive durations such as `2s,1m,12h`, in ms; null when malformed. */
export function parseRetrySchedule(text: string): number[] | null {
  const parts = text.split(",").map((p) => p.trim());
  const ms = parts.map((p) => {
    const m = DURATION.exec(p);
    return m ? Number(m[1]) * UNIT_MS[m[2]] : NaN;
  });
  return ms.length && ms.every((v) => Number.isSafeInteger(v) && v > 0) ? ms : null;
}

/** The retry schedule the environment asks for; SPEC's when unset, and (said once in the log) when malformed. */
export function retryScheduleOf(env: { WEBHOOK_RETRY_SCHEDULE?: string }): readonly number[] {
  const text = env.WEBHOOK_RETRY_SCHEDULE?.trim();
  if (!text) return SPEC_RETRY_SCHEDULE_MS;
  const parsed = parseRetrySchedule(text);
  if (!parsed) console.error(`WEBHOOK_RETRY_SCHEDULE="${text}" is not a comma list of durations like 2s,1m; using SPEC's schedule`);
  return parsed ?? SPEC_RETRY_SCHEDULE_MS;
}

/** The wait after failed attempt `attempts` (1-based); a schedule shorter than the attempts repeats its last step. */
export const retryDelayMs = (schedule: readonly number[], attempts: number) => schedule[Math.min(attempts, schedule.length) - 1];

/**
 * What this object is delivering now. A claimed delivery is held from its claim until it settles: a
 * 'sending' row held here has a live sender (never reclaimed), and a drain waits for those of the
 * events it scanned. Sends to one hook are gated across every pass (alarm and drains alike): a hook
 * whose last attempt succeeded takes up to SEND_CONCURRENCY at once, one whose last attempt failed a
 * single send until one succeeds, so a receiver that is down or overloaded is probed rather than
 * flooded, and a hook is disabled at its tenth consecutive failure, not after a burst beyond it.
 */
export class DeliveriesInFlight {
  private readonly held = new Map<string, { eventId: string; done: Promise<void> }>();
  private readonly sending = new Map<string, number>();
  private readonly waiting = new Map<string, (() => void)[]>();
  /** Hooks whose last attempt failed (in memory: after a restart every hook starts healthy). */
  private readonly failing = new Set<string>();

  /** How many sends the hook may have in flight now. */
  allowedSends(webhookId: string): number {
    return this.failing.has(webhookId) ? 1 : SEND_CONCURRENCY;
  }

  attempted(webhookId: string, ok: boolean): void {
    if (ok) this.failing.delete(webhookId);
    else this.failing.add(webhookId);
  }

  /** Hold a claimed delivery; the returned function settles it. */
  hold(deliveryId: string, eventId: string): () => void {
    let settle!: () => void;
    const entry = { eventId, done: new Promise<void>((resolve) => (settle = resolve)) };
    this.held.set(deliveryId, entry);
    return () => {
      if (this.held.get(deliveryId) === entry) this.held.delete(deliveryId);
      settle();
    };
  }

  ids(): string[] {
    return [...this.held.keys()];
  }

  /** Resolves once every held delivery of these events has settled. */
  async settled(eventIds: ReadonlySet<string>): Promise<void> {
    await Promise.all([...this.held.values()].filter((h) => eventIds.has(h.eventId)).map((h) => h.done));
  }

  /** Wait for a send slot of the hook (`allowed()`: how many at once, asked again on each wake); returns its release. */
  async sendSlot(webhookId: string, allowed: () => number): Promise<() => void> {
    while ((this.sending.get(webhookId) ?? 0) >= allowed())
      await new Promise<void>((resolve) => this.waiting.set(webhookId, [...(this.waiting.get(webhookId) ?? []), resolve]));
    this.sending.set(webhookId, (this.sending.get(webhookId) ?? 0) + 1);
    return () => {
      const left = this.sending.get(webhookId)! - 1;
      if (left) this.sending.set(webhookId, left);
      else this.sending.delete(webhookId);
      const woken = this.waiting.get(webhookId) ?? [];
      this.waiting.delete(webhookId);
      for (const wake of woken) wake();
    };
  }
}

/** What delivery takes from the org Durable Object's dependencies (OrgDeps). */
export interface DeliveryDeps {
  sendWebhook: Sender;
  webhookRetrySchedule: readonly number[];
  webhookDeliveries: DeliveriesInFlight;
}

export const signature = (secret: string, body: string) => "sha256=" + bytesToHex(hmac(sha256, utf8ToBytes(secret), utf8ToBytes(body)));

const base64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));

/**
 * Standard Webhooks 1.0: `v1,` + base64 HMAC-SHA256 over "id.timestamp.body", keyed with the UTF-8
 * bytes of the hook's secret (a standardwebhooks library verifies with that secret base64-encoded).
 */
export const standardSignature = (secret: string, deliveryId: string, timestampSeconds: number, body: string) =>
  "v1," + base64(hmac(sha256, utf8ToBytes(secret), utf8ToBytes(`${deliveryId}.${timestampSeconds}.${body}`)));

const subscribed = (hook: WebhookRow, e: EventRow) => {
  const kinds = JSON.parse(hook.events) as string[];
  return kinds.includes("*") || kinds.includes(e.kind);
};

/**
 * SPEC's three headers, plus what a receiver needs to act without parsing the body first: the event id
 * (stable across retries and across webhooks), the resource it is about as `type/id`, and when the
 * event happened (ISO 8601; the same on every retry, so receivers can order and drop stale events).
 * X-Svc-Signature covers exactly the body, which is the stored payload. Beside them, the Standard
 * Webhooks headers: the delivery id, the send time (Unix seconds) and the signature over both and the body.
 */
export const deliveryHeaders = (secret: string, event: EventRow, deliveryId: string, sentAtMs: number): Record<string, string> => {
  const timestamp = Math.floor(sentAtMs / 1000);
  return {
    "content-type": "application/json",
    "x-svc-signature": signature(secret, event.payload),
    "x-svc-event": event.kind,
    "x-svc-delivery": deliveryId,
    "x-svc-event-id": event.event_id,
    "x-svc-resource": `${event.resource_type}/${event.resource_id}`,
    "x-svc-timestamp": event.created_at,
    "webhook-id": deliveryId,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": standardSignature(secret, deliveryId, timestamp, event.payload),
  };
};

/**
 * Which of these events the hook's creator may read now, decided like GET /v1/events (the one rule,
 * readableEventsWhere, with the creator's current role and grants); none once the creator is removed,
 * and none from before the hook was registered.
 */
function readableByCreator(db: Db, hook: WebhookRow, events: readonly EventRow[]): Set<string> {
  const creator = principalCaller(db, hook.created_by);
  const later = events.filter((e) => e.seq > hook.from_seq);
  if (!creator || !later.length) return new Set();
  const [visible, ...who] = readableEventsWhere(creator, "e");
  return new Set(db.all<{ event_id: string }>(
    `SELECT e.event_id FROM events e WHERE e.event_id IN (SELECT value FROM json_each(?)) AND ${visible}`,
    JSON.stringify(later.map((e) => e.event_id)), ...who).map((r) => r.event_id));
}

export interface Claimed {
  deliveryId: string;
  hook: WebhookRow;
  event: EventRow;
}

const hookRow = (db: Db, webhookId: string) => db.first<WebhookRow>("SELECT * FROM webhooks WHERE webhook_id = ?", webhookId);

/** Insert a 'sending' row for (hook, event) unless one exists: the claim that makes a delivery exactly once. */
function claimOne(db: Db, hook: WebhookRow, event: EventRow, at: string): Claimed | null {
  const deliveryId = newId(ID_PREFIX.delivery);
  const claimed = db.all(
    `INSERT INTO deliveries (delivery_id, webhook_id, event_id, status, attempts, created_at)
     VALUES (?, ?, ?, 'sending', 0, ?) ON CONFLICT (webhook_id, event_id) DO NOTHING RETURNING 1`,
    deliveryId, hook.webhook_id, event.event_id, at).length;
  return claimed ? { deliveryId, hook, event } : null;
}

/** Claim a delivery for each of these events and each active hook subscribed to it whose creator may read it. */
export function claimDeliveries(db: Db, storage: DurableObjectStorage, events: readonly EventRow[]): Claimed[] {
  return storage.transactionSync(() => {
    const hooks = db.all<WebhookRow>("SELECT * FROM webhooks WHERE status = 'active' ORDER BY created_at, webhook_id");
    const jobs: Claimed[] = [];
    const at = clock.nowIso();
    const readable = new Map(hooks.map((h) => [h.webhook_id, readableByCreator(db, h, events)]));
    for (const event of events)
      for (const hook of hooks) {
        if (!subscribed(hook, event) || !readable.get(hook.webhook_id)!.has(event.event_id)) continue;
        const job = claimOne(db, hook, event, at);
        if (job) jobs.push(job);
      }
    return jobs;
  });
}

/**
 * The background's share of new events: for each active hook, the events after its own position that
 * its creator may read (and it subscribes to) are claimed, and the position moves past what was
 * scanned. Hooks furthest behind go first; at most `budget` events are scanned in all.
 */
export function claimNewEvents(db: Db, storage: DurableObjectStorage, budget: number): { jobs: Claimed[]; more: boolean } {
  return storage.transactionSync(() => {
    const lastSeq = db.first<{ seq: number }>("SELECT coalesce(max(seq), 0) AS seq FROM events")!.seq;
    const hooks = db.all<WebhookRow>(
      "SELECT * FROM webhooks WHERE status = 'active' AND max(scanned_seq, from_seq) < ? ORDER BY max(scanned_seq, from_seq), created_at", lastSeq);
    const jobs: Claimed[] = [];
    const at = clock.nowIso();
    let left = budget;
    for (const hook of hooks) {
      if (left === 0) return { jobs, more: true };
      const creator = principalCaller(db, hook.created_by);
      const events = creator ? readableEventsAfter(db, creator, Math.max(hook.scanned_seq, hook.from_seq), { upToSeq: lastSeq, limit: left }) : [];
      for (const event of events) {
        const job = subscribed(hook, event) ? claimOne(db, hook, event, at) : null;
        if (job) jobs.push(job);
      }
      // A full page may have stopped short of the end: continue after its last event next time.
      const full = events.length === left;
      left -= events.length;
      db.run("UPDATE webhooks SET scanned_seq = ? WHERE webhook_id = ?", full ? events[events.length - 1].seq : lastSeq, hook.webhook_id);
      if (full) return { jobs, more: true };
    }
    return { jobs, more: false };
  });
}

/** Claim up to `limit` deliveries (of active hooks) whose retry is due, back to 'sending'. */
export function claimDueRetries(db: Db, storage: DurableObjectStorage, limit: number): Claimed[] {
  if (limit <= 0) return [];
  return storage.transactionSync(() => {
    const due = db.all<{ delivery_id: string; webhook_id: string; event_id: string }>(
      `UPDATE deliveries SET status = 'sending' WHERE delivery_id IN
         (SELECT d.delivery_id FROM deliveries d JOIN webhooks w ON w.webhook_id = d.webhook_id AND w.status = 'active'
           WHERE d.status = 'pending' AND d.next_retry_at <= ? ORDER BY d.next_retry_at LIMIT ?)
       RETURNING delivery_id, webhook_id, event_id`, clock.nowIso(), limit);
    return jobsOf(db, due);
  });
}

/**
 * Re-claim deliveries whose sender died between claim and settle: rows 'sending' that no pass of this
 * object holds, left since before RECLAIM_AFTER_MS ago (stamped at claim, and again when a send starts).
 */
export function reclaimStale(db: Db, storage: DurableObjectStorage, limit: number, inFlight: DeliveriesInFlight): Claimed[] {
  if (limit <= 0) return [];
  return storage.transactionSync(() => {
    const now = clock.nowMs();
    const stale = db.all<{ delivery_id: string; webhook_id: string; event_id: string }>(
      `UPDATE deliveries SET last_attempt_at = ? WHERE delivery_id IN
         (SELECT delivery_id FROM deliveries WHERE status = 'sending' AND coalesce(last_attempt_at, created_at) <= ?
            AND delivery_id NOT IN (SELECT value FROM json_each(?)) ORDER BY seq LIMIT ?)
       RETURNING delivery_id, webhook_id, event_id`, isoAt(now), isoAt(now - RECLAIM_AFTER_MS), JSON.stringify(inFlight.ids()), limit);
    return jobsOf(db, stale);
  });
}

function jobsOf(db: Db, rows: { delivery_id: string; webhook_id: string; event_id: string }[]): Claimed[] {
  return rows.flatMap((d) => {
    const hook = hookRow(db, d.webhook_id);
    const event = db.first<EventRow>("SELECT * FROM events WHERE event_id = ?", d.event_id);
    return hook && event ? [{ deliveryId: d.delivery_id, hook, event }] : [];
  });
}

/** One attempt of a claimed delivery, settled in one transaction: whether it succeeded, or null when nothing was sent. */
async function attempt(db: Db, storage: DurableObjectStorage, job: Claimed, deps: DeliveryDeps): Promise<boolean | null> {
  const hook = hookRow(db, job.hook.webhook_id);
  if (!hook) return null; // deleted since the claim: its rows went with it
  // Re-checked at the send. Paused since the claim: back to waiting, due at once, sent after a resume.
  if (hook.status === "paused") {
    db.run("UPDATE deliveries SET status = 'pending', next_retry_at = ? WHERE delivery_id = ?", clock.nowIso(), job.deliveryId);
    return null;
  }
  // Disabled, or the creator may no longer read the event (a grant revoked, the creator removed):
  // nothing is sent; a claim never attempted is released, one attempted before ends failed.
  if (hook.status === "disabled" || !readableByCreator(db, hook, [job.event]).has(job.event.event_id)) {
    const attempted = (db.first<{ attempts: number }>("SELECT attempts FROM deliveries WHERE delivery_id = ?", job.deliveryId)?.attempts ?? 0) > 0;
    if (hook.status === "disabled" && attempted) db.run("UPDATE deliveries SET status = 'failed', next_retry_at = NULL WHERE delivery_id = ?", job.deliveryId);
    else db.run("DELETE FROM deliveries WHERE delivery_id = ?", job.deliveryId);
    return null;
  }
  const body = job.event.payload; // exactly as stored
  const startedAt = clock.nowMs();
  // The send starts now: a row still 'sending' long after this lost its sender (see reclaimStale).
  db.run("UPDATE deliveries SET last_attempt_at = ? WHERE delivery_id = ?", isoAt(startedAt), job.deliveryId);
  let status: number | null = null;
  try {
    status = await deps.sendWebhook(hook.url, { method: "POST", body, headers: deliveryHeaders(hook.secret, job.event, job.deliveryId, startedAt) });
  } catch {
    status = null; // network error or timeout
  }
  return settle(db, storage, job, status, deps.webhookRetrySchedule);
}

function settle(db: Db, storage: DurableObjectStorage, job: Claimed, status: number | null, schedule: readonly number[]): boolean {
  const ok = status != null && status >= 200 && status < 300;
  const at = clock.nowMs();
  storage.transactionSync(() => {
    if (ok) {
      db.run(`UPDATE deliveries SET status = 'delivered', attempts = attempts + 1, last_attempt_at = ?, next_retry_at = NULL, response_status = ?
               WHERE delivery_id = ?`, isoAt(at), status, job.deliveryId);
      db.run("UPDATE webhooks SET failure_count = 0 WHERE webhook_id = ?", job.hook.webhook_id);
      return;
    }
    const attempts = (db.first<{ attempts: number }>("SELECT attempts FROM deliveries WHERE delivery_id = ?", job.deliveryId)?.attempts ?? 0) + 1;
    const hookStatus = db.first<{ status: string }>("SELECT status FROM webhooks WHERE webhook_id = ?", job.hook.webhook_id)?.status;
    const final = attempts >= MAX_ATTEMPTS || hookStatus === "disabled";
    db.run(`UPDATE deliveries SET status = ?, attempts = ?, last_attempt_at = ?, next_retry_at = ?, response_status = ? WHERE delivery_id = ?`,
      final ? "failed" : "pending", attempts, isoAt(at), final ? null : isoAt(at + retryDelayMs(schedule, attempts)), status, job.deliveryId);
    if (!final || hookStatus === "disabled") return;
    // A delivery failed for good: one more consecutive failure of the hook (a failed attempt that will
    // be retried is none, so a receiver down for a while does not cost the hook). The tenth disables it,
    // and whatever of it still waited for a retry will never be sent.
    const hook = db.first<{ status: string }>(
      `UPDATE webhooks SET failure_count = failure_count + 1,
         status = CASE WHEN failure_count + 1 >= ? AND status = 'active' THEN 'disabled' ELSE status END, updated_at = ?
       WHERE webhook_id = ? RETURNING status`, DISABLE_AFTER_FAILURES, isoAt(at), job.hook.webhook_id);
    if (hook?.status === "disabled")
      db.run("UPDATE deliveries SET status = 'failed', next_retry_at = NULL WHERE webhook_id = ? AND status = 'pending'", job.hook.webhook_id);
  });
  return ok;
}

/** At most `n` calls of `work` running at once. */
function limiter(n: number) {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (work: () => Promise<void>): Promise<void> => {
    if (running >= n) await new Promise<void>((resolve) => waiting.push(resolve));
    running++;
    try {
      await work();
    } finally {
      running--;
      waiting.shift()?.();
    }
  };
}

/**
 * Send claimed deliveries, at most SEND_CONCURRENCY of this pass at once, each hook within its slots
 * (DeliveriesInFlight.sendSlot). Each is held from now until it settles. No order among deliveries.
 */
async function sendClaimed(db: Db, storage: DurableObjectStorage, jobs: Claimed[], deps: DeliveryDeps): Promise<void> {
  const inFlight = deps.webhookDeliveries;
  const release = jobs.map((j) => inFlight.hold(j.deliveryId, j.event.event_id));
  const passSlot = limiter(SEND_CONCURRENCY);
  const results = await Promise.allSettled(jobs.map(async (job, i) => {
    const webhookId = job.hook.webhook_id;
    try {
      const leave = await inFlight.sendSlot(webhookId, () => inFlight.allowedSends(webhookId));
      try {
        await passSlot(async () => {
          const ok = await attempt(db, storage, job, deps);
          if (ok !== null) inFlight.attempted(webhookId, ok);
        });
      } finally {
        leave();
      }
    } finally {
      release[i]();
    }
  }));
  const failed = results.find((r) => r.status === "rejected");
  if (failed) throw failed.reason;
}

/**
 * POST /v1/webhooks/deliver's pass: claims abandoned by a dead sender and due retries (up to `limit`
 * each), then the given events; it returns once every delivery of those events that any pass of this
 * object holds has settled, so a drain that finds a delivery already in flight still answers after it.
 */
export async function deliverEvents(db: Db, storage: DurableObjectStorage, events: readonly EventRow[], deps: DeliveryDeps, limit: number): Promise<void> {
  const jobs = [...reclaimStale(db, storage, limit, deps.webhookDeliveries), ...claimDueRetries(db, storage, limit), ...claimDeliveries(db, storage, events)];
  await sendClaimed(db, storage, jobs, deps);
  await deps.webhookDeliveries.settled(new Set(events.map((e) => e.event_id)));
}

/** The background's pass: reclaims, due retries, then new events, `limit` in all. True when work was left over. */
export async function deliverDue(db: Db, storage: DurableObjectStorage, deps: DeliveryDeps, limit: number): Promise<boolean> {
  const stale = reclaimStale(db, storage, limit, deps.webhookDeliveries);
  const retries = claimDueRetries(db, storage, limit - stale.length);
  const fresh = claimNewEvents(db, storage, limit - stale.length - retries.length);
  await sendClaimed(db, storage, [...stale, ...retries, ...fresh.jobs], deps);
  return stale.length + retries.length >= limit || fresh.more;
}

/** When delivery has work next: the earliest due retry of an active hook, or the earliest reclaimable claim; null: none. */
function nextDeliveryWorkAt(db: Db, inFlight: DeliveriesInFlight): number | null {
  const row = db.first<{ retry: string | null; reclaim: string | null }>(
    `SELECT (SELECT min(d.next_retry_at) FROM deliveries d JOIN webhooks w ON w.webhook_id = d.webhook_id AND w.status = 'active'
              WHERE d.status = 'pending') AS retry,
            (SELECT min(coalesce(last_attempt_at, created_at)) FROM deliveries
              WHERE status = 'sending' AND delivery_id NOT IN (SELECT value FROM json_each(?))) AS reclaim`,
    JSON.stringify(inFlight.ids()));
  const times = [row?.retry ? Date.parse(row.retry) : null, row?.reclaim ? Date.parse(row.reclaim) + RECLAIM_AFTER_MS : null]
    .filter((t): t is number => t != null);
  return times.length ? Math.min(...times) : null;
}

export const hasActiveHooks = (db: Db) => !!db.first("SELECT 1 FROM webhooks WHERE status = 'active' LIMIT 1");

/**
 * Background delivery, a named job (src/jobs.ts): a commit with events makes it due at once (stored
 * with the write), as do a resume and a redelivery; it then wakes for the next due retry or
 * reclaimable claim. With the maintenance interval at 0 there is no background delivery at all (the
 * manual drain still sends, retries included).
 */
export const webhookDeliveryJob: BackgroundJob = {
  name: "webhook_delivery",
  dueAfterEvents: (db, intervalMs) => (intervalMs > 0 && hasActiveHooks(db) ? clock.nowMs() : null),
  async run({ db, storage, maintenanceIntervalMs, deps }) {
    if (maintenanceIntervalMs <= 0) return null;
    if (await deliverDue(db, storage, deps, BACKGROUND_BATCH)) return clock.nowMs();
    return nextDeliveryWorkAt(db, deps.webhookDeliveries);
  },
  retryMs: ({ maintenanceIntervalMs }) => maintenanceIntervalMs,
};
