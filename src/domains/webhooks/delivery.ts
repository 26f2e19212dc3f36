// Webhook delivery: exactly once per (webhook, event), retried by the service until it succeeds or
// runs out of attempts (DESIGN part 3, "Webhook delivery: retried by the service").
//   claim    a delivery row (unique per webhook and event) is inserted as 'sending' in one
//            transaction before anything is sent, so a concurrent or replayed pass finds it and skips;
//   attempt  success -> 'delivered'; a failure (network error, timeout, non-2xx) -> 'pending' with
//            next_retry_at from the retry schedule, or 'failed' after MAX_ATTEMPTS; each delivery that
//            fails for good counts one consecutive failure on the hook (a success resets the count),
//            and DISABLE_AFTER_FAILURES in a row disable it. A claim whose event its hook's creator may
//            no longer read, or whose hook was disabled, ends 'failed' unsent: delivery never deletes a
//            row, so no (webhook, event) is ever claimed twice;
//   retry    the org alarm claims due 'pending' rows back to 'sending' and sends them again under the
//            same delivery id (receivers deduplicate on it);
//   reclaim  a 'sending' row that no pass of this object holds, left since before RECLAIM_AFTER_MS,
//            lost its sender (the object died mid-send): it is sent again under the same delivery id.
// Each hook keeps its own position in the event log (scanned_seq): the background claims the events
// after it, so a paused hook accrues and resumes where it stopped. No response body is read or stored.
// No hook holds up the others: an alarm pass claims for each hook only what it may send at once now,
// and an alarm pass or a drain waits for sends a bounded time (PASS_BUDGET_MS, DRAIN_WAIT_MS); a send
// still in flight then finishes in the background, held (never reclaimed) until it settles.
import { hmac } from "@noble/hashes/hmac.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { clock, isoAt } from "../../http/clock";
import { ID_PREFIX, newId } from "../../http/ids";
import type { Db } from "../../sql/db";
import { type EventRow, eventById, lastEventSeq, readableAmong, readableEventsAfter } from "../../org/events";
import type { BackgroundJob } from "../../org/jobs";
import { principalCaller } from "../identity/store";
import {
  abandonedClaims,
  backToPending,
  countHookFailure,
  dueRetries,
  type FailureReason,
  failDelivery,
  failWaitingDeliveries,
  getDelivery,
  getHook,
  hasActiveHooks,
  hooksInOrder,
  hookWorkTimes,
  insertClaim,
  markDelivered,
  markSending,
  moveHookPosition,
  recordFailedAttempt,
  resetHookFailures,
  stampAttempt,
  type WebhookRow,
} from "./store";

/** SPEC's backoff constants: attempt n+1 is due SPEC_RETRY_SCHEDULE_MS[n-1] after attempt n. */
export const SPEC_RETRY_SCHEDULE_MS: readonly number[] = [60_000, 300_000, 1_800_000, 7_200_000, 43_200_000];
export const MAX_ATTEMPTS = 5;
export const DISABLE_AFTER_FAILURES = 10;
export const SEND_TIMEOUT_MS = 10_000;
/** Deliveries one alarm pass claims at most (due retries, reclaims, new events). */
export const BACKGROUND_BATCH = 50;
/** Sends in flight at once per hook, and per alarm pass: a Worker invocation keeps at most six connections open. */
export const SEND_CONCURRENCY = 6;
/** A 'sending' row no pass holds, older than this, lost its sender (an instance that died mid-send). */
export const RECLAIM_AFTER_MS = 6 * SEND_TIMEOUT_MS;
/**
 * How long an alarm pass claims and waits for its sends. After it the pass claims nothing more and
 * returns, so the jobs after it run; its sends still in flight finish in the background.
 */
export const PASS_BUDGET_MS = 3_000;
/** How long POST /v1/webhooks/deliver waits for the sends of its events before it answers. */
export const DRAIN_WAIT_MS = 5_000;
/** Events after a hook's position (those its creator may read) the background looks at per claim. */
const SCAN_PAGE = 50;

/**
 * The outbound call, a dependency of the org Durable Object (OrgDeps.sendWebhook) so tests and
 * benchmarks can observe it. Resolves with the HTTP status.
 */
export type Sender = (
  url: string,
  init: { method: "POST"; headers: Record<string, string>; body: string },
) => Promise<number>;

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
  if (!parsed)
    console.error(
      `WEBHOOK_RETRY_SCHEDULE="${text}" is not a comma list of durations like 2s,1m; using SPEC's schedule`,
    );
  return parsed ?? SPEC_RETRY_SCHEDULE_MS;
}

/** The wait after failed attempt `attempts` (1-based); a schedule shorter than the attempts repeats its last step. */
export const retryDelayMs = (schedule: readonly number[], attempts: number) =>
  schedule[Math.min(attempts, schedule.length) - 1];

/** How long passes wait, and what they wait with (tests pass a wait they control instead of sleeping). */
export interface DeliveryPacing {
  passBudgetMs: number;
  drainWaitMs: number;
  wait: (ms: number) => Promise<void>;
}

export interface Held {
  eventId: string;
  webhookId: string;
  done: Promise<void>;
}

/**
 * What this object is delivering now. A claimed delivery is held from its claim until it settles: a
 * 'sending' row held here has a live sender (never reclaimed), and a drain waits for those of its
 * events. Sends to one hook are gated across every pass (alarm and drains alike): a hook whose last
 * attempt succeeded takes up to SEND_CONCURRENCY at once, one whose last attempt failed a single send
 * until one succeeds, so a receiver that is down or overloaded is probed rather than flooded, and a
 * hook is disabled at its tenth consecutive failure, not after a burst beyond it. A pass claims for a
 * hook at most what it may send now (claimsAllowed), so nothing of it waits claimed behind a slow receiver.
 */
export class DeliveriesInFlight {
  readonly pacing: DeliveryPacing;
  private readonly held = new Map<string, Held>();
  private readonly sending = new Map<string, number>();
  private readonly waiting = new Map<string, (() => void)[]>();
  /** Hooks whose last attempt failed (in memory: after a restart every hook starts healthy). */
  private readonly failing = new Set<string>();

  constructor(pacing: Partial<DeliveryPacing> = {}) {
    this.pacing = {
      passBudgetMs: PASS_BUDGET_MS,
      drainWaitMs: DRAIN_WAIT_MS,
      wait: (ms) => scheduler.wait(ms),
      ...pacing,
    };
  }

  /** How many sends the hook may have in flight now. */
  allowedSends(webhookId: string): number {
    return this.failing.has(webhookId) ? 1 : SEND_CONCURRENCY;
  }

  /** How many more deliveries of the hook a pass may claim now: what it may send at once, less those held. */
  claimsAllowed(webhookId: string): number {
    let held = 0;
    for (const h of this.held.values()) if (h.webhookId === webhookId) held++;
    return Math.max(0, this.allowedSends(webhookId) - held);
  }

  attempted(webhookId: string, ok: boolean): void {
    if (ok) this.failing.delete(webhookId);
    else this.failing.add(webhookId);
  }

  /** Hold a claimed delivery; the returned function settles it. */
  hold(job: Claimed): () => void {
    let settle!: () => void;
    const entry: Held = {
      eventId: job.event.event_id,
      webhookId: job.hook.webhook_id,
      done: new Promise<void>((resolve) => (settle = resolve)),
    };
    this.held.set(job.deliveryId, entry);
    return () => {
      if (this.held.get(job.deliveryId) === entry) this.held.delete(job.deliveryId);
      settle();
    };
  }

  ids(): string[] {
    return [...this.held.keys()];
  }

  /** Resolves once every delivery held now that `which` picks has settled. */
  async settled(which: (deliveryId: string, held: Held) => boolean): Promise<void> {
    await Promise.all([...this.held].filter(([id, h]) => which(id, h)).map(([, h]) => h.done));
  }

  /** Wait for a send slot of the hook (`allowed()`: how many at once, asked again on each wake); returns its release. */
  async sendSlot(webhookId: string, allowed: () => number): Promise<() => void> {
    while ((this.sending.get(webhookId) ?? 0) >= allowed())
      await new Promise<void>((resolve) =>
        this.waiting.set(webhookId, [...(this.waiting.get(webhookId) ?? []), resolve]),
      );
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

export const signature = (secret: string, body: string) =>
  "sha256=" + bytesToHex(hmac(sha256, utf8ToBytes(secret), utf8ToBytes(body)));

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
export const deliveryHeaders = (
  secret: string,
  event: EventRow,
  deliveryId: string,
  sentAtMs: number,
): Record<string, string> => {
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
  return readableAmong(
    db,
    creator,
    later.map((e) => e.event_id),
  );
}

export interface Claimed {
  deliveryId: string;
  hook: WebhookRow;
  event: EventRow;
}

/** Insert a 'sending' row for (hook, event) unless one exists: the claim that makes a delivery exactly once. */
function claimOne(db: Db, hook: WebhookRow, event: EventRow, at: string): Claimed | null {
  const deliveryId = newId(ID_PREFIX.delivery);
  const claimed = insertClaim(db, deliveryId, hook.webhook_id, event.event_id, at);
  return claimed ? { deliveryId, hook, event } : null;
}

/** Claim a delivery for each of these events and each active hook subscribed to it whose creator may read it. */
export function claimDeliveries(db: Db, storage: DurableObjectStorage, events: readonly EventRow[]): Claimed[] {
  return storage.transactionSync(() => {
    const hooks = hooksInOrder(db, "active");
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
 * One hook's claimable work, claimed one delivery at a time as it is asked for, at most `max`: first
 * 'sending' rows no pass of this object holds, left since before RECLAIM_AFTER_MS (stamped at claim and
 * when a send starts), whose sender died between claim and settle; then, of an active hook, 'pending'
 * rows whose retry is due, earliest first; then (withNewEvents) the events after the hook's position
 * that its creator may read, one page of them, its position moving past what was looked at.
 */
function* hookWork(
  db: Db,
  hook: WebhookRow,
  heldIds: readonly string[],
  max: number,
  withNewEvents: boolean,
): Generator<Claimed> {
  const now = clock.nowMs();
  const jobOf = (d: { delivery_id: string; event_id: string }): Claimed | null => {
    const event = eventById(db, d.event_id);
    return event ? { deliveryId: d.delivery_id, hook, event } : null;
  };
  const stale = abandonedClaims(db, hook.webhook_id, isoAt(now - RECLAIM_AFTER_MS), heldIds, max);
  for (const d of stale) {
    stampAttempt(db, d.delivery_id, isoAt(now));
    const job = jobOf(d);
    if (job) yield job;
  }
  if (hook.status !== "active") return;
  const due = dueRetries(db, hook.webhook_id, isoAt(now), max);
  for (const d of due) {
    markSending(db, d.delivery_id);
    const job = jobOf(d);
    if (job) yield job;
  }
  if (!withNewEvents) return;
  const lastSeq = lastEventSeq(db);
  const position = Math.max(hook.scanned_seq, hook.from_seq);
  const creator = position < lastSeq ? principalCaller(db, hook.created_by) : null;
  const page = creator ? readableEventsAfter(db, creator, position, { upToSeq: lastSeq, limit: SCAN_PAGE }) : [];
  const at = isoAt(now);
  const moveTo = (seq: number) => moveHookPosition(db, hook.webhook_id, seq);
  for (const event of page) {
    const job = subscribed(hook, event) ? claimOne(db, hook, event, at) : null;
    if (!job) continue;
    moveTo(event.seq); // left here when no more is asked for: the next pass continues after it
    yield job;
  }
  // A full page may have stopped short of the end: continue after its last event next time.
  if (position < lastSeq) moveTo(page.length === SCAN_PAGE ? page[page.length - 1].seq : lastSeq);
}

/**
 * Claim up to `limit` deliveries, each hook at most what it may send now (claimsAllowed), the hooks
 * taking turns (each one's first before any one's second), those with the most room first. Every claim
 * is made in this one transaction.
 */
function claimInTurns(
  db: Db,
  storage: DurableObjectStorage,
  inFlight: DeliveriesInFlight,
  limit: number,
  withNewEvents: boolean,
): Claimed[] {
  if (limit <= 0) return [];
  return storage.transactionSync(() => {
    const heldIds = inFlight.ids();
    let turn = hooksInOrder(db)
      .map((hook) => ({ hook, room: inFlight.claimsAllowed(hook.webhook_id) }))
      .filter((h) => h.room > 0)
      .sort((a, b) => b.room - a.room)
      .map((h) => ({ ...h, work: hookWork(db, h.hook, heldIds, h.room, withNewEvents) }));
    const jobs: Claimed[] = [];
    while (turn.length && jobs.length < limit)
      turn = turn.filter((h) => {
        if (jobs.length === limit) return false;
        const next = h.work.next();
        if (next.done) return false;
        jobs.push(next.value);
        return --h.room > 0;
      });
    return jobs;
  });
}

/** One attempt of a claimed delivery, settled in one transaction: whether it succeeded, or null when nothing was sent. */
async function attempt(
  db: Db,
  storage: DurableObjectStorage,
  job: Claimed,
  deps: DeliveryDeps,
): Promise<boolean | null> {
  const hook = getHook(db, job.hook.webhook_id);
  if (!hook) return null; // deleted since the claim: its rows went with it
  // Re-checked at the send. Paused since the claim: back to waiting, due at once, sent after a resume.
  if (hook.status === "paused") {
    backToPending(db, job.deliveryId, clock.nowIso());
    return null;
  }
  // Disabled, or the creator may no longer read the event (a grant or workspace membership removed):
  // nothing is sent, and the delivery ends failed with its reason, never tried again automatically.
  // The row stays (a reclaimed claim may have been sent before its sender died): it keeps the
  // (webhook, event) claimed, so no later pass sends the event under another delivery id. It costs the
  // hook nothing (failure_count counts what its receiver failed).
  const unsendable: FailureReason | null =
    hook.status === "disabled"
      ? "hook_disabled"
      : !readableByCreator(db, hook, [job.event]).has(job.event.event_id)
        ? "event_unreadable"
        : null;
  if (unsendable) {
    failDelivery(db, job.deliveryId, unsendable);
    return null;
  }
  const body = job.event.payload; // exactly as stored
  const startedAt = clock.nowMs();
  // The send starts now: a row still 'sending' long after this lost its sender (see hookWork).
  stampAttempt(db, job.deliveryId, isoAt(startedAt));
  let status: number | null = null;
  try {
    status = await deps.sendWebhook(hook.url, {
      method: "POST",
      body,
      headers: deliveryHeaders(hook.secret, job.event, job.deliveryId, startedAt),
    });
  } catch {
    status = null; // network error or timeout
  }
  return settle(db, storage, job, status, deps.webhookRetrySchedule);
}

function settle(
  db: Db,
  storage: DurableObjectStorage,
  job: Claimed,
  status: number | null,
  schedule: readonly number[],
): boolean {
  const ok = status != null && status >= 200 && status < 300;
  const at = clock.nowMs();
  storage.transactionSync(() => {
    if (ok) {
      markDelivered(db, job.deliveryId, isoAt(at), status);
      resetHookFailures(db, job.hook.webhook_id);
      return;
    }
    const attempts = (getDelivery(db, job.deliveryId)?.attempts ?? 0) + 1;
    const reason: FailureReason | null =
      getHook(db, job.hook.webhook_id)?.status === "disabled"
        ? "hook_disabled"
        : attempts >= MAX_ATTEMPTS
          ? "attempts_exhausted"
          : null;
    recordFailedAttempt(db, job.deliveryId, {
      attempts,
      at: isoAt(at),
      nextRetryAt: reason ? null : isoAt(at + retryDelayMs(schedule, attempts)),
      responseStatus: status,
      reason,
    });
    if (reason !== "attempts_exhausted") return;
    // A delivery failed for good: one more consecutive failure of the hook (a failed attempt that will
    // be retried is none, so a receiver down for a while does not cost the hook). The tenth disables it,
    // and whatever of it still waited for a retry will never be sent.
    if (countHookFailure(db, job.hook.webhook_id, DISABLE_AFTER_FAILURES, isoAt(at)) === "disabled")
      failWaitingDeliveries(db, [job.hook.webhook_id]);
  });
  return ok;
}

/**
 * Send one claimed delivery within its hook's send slots, then settle its hold (`release`). It never
 * rejects: a failure to record the outcome is logged, and the row, still 'sending', is reclaimed later.
 */
async function send(
  db: Db,
  storage: DurableObjectStorage,
  job: Claimed,
  deps: DeliveryDeps,
  release: () => void,
): Promise<void> {
  const inFlight = deps.webhookDeliveries;
  const webhookId = job.hook.webhook_id;
  try {
    const leave = await inFlight.sendSlot(webhookId, () => inFlight.allowedSends(webhookId));
    try {
      const ok = await attempt(db, storage, job, deps);
      if (ok !== null) inFlight.attempted(webhookId, ok);
    } finally {
      leave();
    }
  } catch (err) {
    console.error(`webhook delivery ${job.deliveryId} could not be recorded; it is reclaimed later`, err);
  } finally {
    release();
  }
}

/**
 * POST /v1/webhooks/deliver's pass: claims abandoned by a dead sender and due retries (up to `limit`,
 * each hook at most what it may send now), then the given events for every subscribed hook (all of
 * them: the drain's cursor moves past them), and sends them. It waits until the deliveries to the
 * hooks the caller manages (`managed`) of those events (whichever pass holds them) and of its own
 * claims have settled, at most the drain wait; a send still in flight then finishes in the background.
 */
export async function deliverEvents(
  db: Db,
  storage: DurableObjectStorage,
  events: readonly EventRow[],
  deps: DeliveryDeps,
  limit: number,
  managed: ReadonlySet<string>,
): Promise<void> {
  const inFlight = deps.webhookDeliveries;
  const jobs = [...claimInTurns(db, storage, inFlight, limit, false), ...claimDeliveries(db, storage, events)];
  for (const job of jobs) void send(db, storage, job, deps, inFlight.hold(job));
  const eventIds = new Set(events.map((e) => e.event_id));
  const own = new Set(jobs.map((j) => j.deliveryId));
  const settled = inFlight.settled((id, h) => managed.has(h.webhookId) && (own.has(id) || eventIds.has(h.eventId)));
  await Promise.race([settled, inFlight.pacing.wait(inFlight.pacing.drainWaitMs)]);
}

/**
 * The background's pass: it claims what its hooks may send now (reclaims, due retries, then new
 * events), at most SEND_CONCURRENCY in flight and `limit` in all, and claims again as sends settle,
 * until nothing is left or the pass budget is spent. Then it returns without waiting for the sends
 * still in flight: they finish in the background, held, so no pass reclaims them or claims beyond
 * them for their hooks meanwhile.
 */
export async function deliverDue(
  db: Db,
  storage: DurableObjectStorage,
  deps: DeliveryDeps,
  limit: number,
): Promise<void> {
  const inFlight = deps.webhookDeliveries;
  let spent = false;
  const budget = inFlight.pacing.wait(inFlight.pacing.passBudgetMs).then(() => {
    spent = true;
  });
  const sending = new Set<Promise<void>>();
  for (let claimed = 0; !spent;) {
    const jobs = claimInTurns(db, storage, inFlight, Math.min(SEND_CONCURRENCY - sending.size, limit - claimed), true);
    claimed += jobs.length;
    for (const job of jobs) {
      const sent: Promise<void> = send(db, storage, job, deps, inFlight.hold(job)).then(() => {
        sending.delete(sent);
      });
      sending.add(sent);
    }
    if (!sending.size) return; // nothing in flight, nothing left to claim
    await Promise.race([budget, ...sending]);
  }
}

/**
 * When delivery has work next: now for an active hook behind the end of the log, the earliest due
 * retry of an active hook, or the earliest reclaimable claim; null: none. A hook with no room to claim
 * (its sends in flight take all it may have) is looked at again a pass budget later at the soonest,
 * and so is the whole while this object has sends in flight (one that fails leaves a retry due).
 */
export function nextDeliveryWorkAt(db: Db, inFlight: DeliveriesInFlight): number | null {
  const now = clock.nowMs();
  const recheck = now + inFlight.pacing.passBudgetMs;
  const rows = hookWorkTimes(db, inFlight.ids());
  const times = rows.flatMap((r) => {
    const at = [
      r.behind ? now : null,
      r.retry ? Date.parse(r.retry) : null,
      r.reclaim ? Date.parse(r.reclaim) + RECLAIM_AFTER_MS : null,
    ].filter((t): t is number => t != null);
    if (!at.length) return [];
    return [inFlight.claimsAllowed(r.webhook_id) > 0 ? Math.min(...at) : Math.max(Math.min(...at), recheck)];
  });
  if (inFlight.ids().length) times.push(recheck);
  return times.length ? Math.min(...times) : null;
}

/**
 * Background delivery, a named job (src/jobs.ts): a commit with events makes it due at once (stored
 * with the write), as do a resume and a redelivery, and a drain for its next work; it then wakes for
 * the next due retry or reclaimable claim. With the maintenance interval at 0 there is no background
 * delivery at all (the manual drain still sends, retries included).
 */
export const webhookDeliveryJob: BackgroundJob = {
  name: "webhook_delivery",
  dueAfterEvents: (db, intervalMs) => (intervalMs > 0 && hasActiveHooks(db) ? clock.nowMs() : null),
  async run({ db, storage, maintenanceIntervalMs, deps }) {
    if (maintenanceIntervalMs <= 0) return null;
    await deliverDue(db, storage, deps, BACKGROUND_BATCH);
    return nextDeliveryWorkAt(db, deps.webhookDeliveries);
  },
  retryMs: ({ maintenanceIntervalMs }) => maintenanceIntervalMs,
};
