// Webhook registration, pause/resume, deletion, the delivery list and the manual drain.
// Webhook administration emits no domain events (SPEC) but every change is audited.
import { hasScope, missingScopeMessage } from "../../auth/scopes";
import { clock } from "../../http/clock";
import { decodeCursor, encodeCursor, pageOf, positionAfter } from "../../http/cursor";
import { conflict, forbidden, notFound } from "../../http/errors";
import { ID_PREFIX, newId } from "../../http/ids";
import { orgRoute } from "../../org/route";
import type { Db } from "../../sql/db";
import type { Caller, RequestCtx } from "../../org/request";
import { ok } from "../../org/request";
import { readableEventsWhere } from "../../org/events";
import { commitWrite } from "../../org/write";
import { readableEventSeq } from "../events/routes";
import { drainEvents, pendingDeliveries, type WebhookRow } from "./delivery";
import { createWebhookBody, deliverBody, deliveriesQuery, deliverResponse, deliveryListResponse, MAX_WEBHOOKS_PER_ORG, webhookDeletedResponse, webhookListResponse, webhookResponse } from "./schema";

export const SIGNING = {
  header: "X-Svc-Signature",
  algorithm: "HMAC-SHA256",
  format: "sha256=<64 lowercase hex>",
  note: "HMAC-SHA256 of the raw request body with the webhook secret. Verify against the exact bytes received; deduplicate on X-Svc-Delivery.",
} as const;

const view = (w: WebhookRow) => ({
  webhook_id: w.webhook_id, url: w.url, events: JSON.parse(w.events) as string[], status: w.status,
  failure_count: w.failure_count, created_at: w.created_at, updated_at: w.updated_at, signing: SIGNING,
});

function requireHook(db: Db, id: string): WebhookRow {
  const hook = db.first<WebhookRow>("SELECT * FROM webhooks WHERE webhook_id = ?", id);
  if (!hook) throw notFound("Webhook");
  return hook;
}

function setStatus(rc: RequestCtx, hook: WebhookRow, status: "active" | "paused", action: string) {
  return commitWrite(rc, (db) => {
    db.run(`UPDATE webhooks SET status = ?, ${status === "active" ? "failure_count = 0," : ""} updated_at = ? WHERE webhook_id = ?`,
      status, clock.nowIso(), hook.webhook_id);
    return { status: 200, data: view(requireHook(db, hook.webhook_id)),
      audit: { action, resourceType: "webhook", resourceId: hook.webhook_id } };
  });
}

/**
 * The drain's cursor is opaque: a position in the organization's event log, never an event id (the
 * last event scanned may be one the caller cannot read). `after` takes such a cursor or, as before,
 * an event id the caller may read (an unreadable one is as unknown as a random id).
 */
const isDrainCursor = (v: unknown): v is ["drain", number] =>
  Array.isArray(v) && v.length === 2 && v[0] === "drain" && Number.isInteger(v[1]) && v[1] >= 0;
const drainCursor = (seq: number) => encodeCursor(["drain", seq]);
const drainPosition = (db: Db, caller: Caller, after: string) =>
  after.startsWith(ID_PREFIX.event) ? readableEventSeq(db, caller, after) : decodeCursor(after, isDrainCursor)[1];

export const webhookRoutes = [
  orgRoute({
    method: "POST", path: "/v1/webhooks", scope: "webhooks:write", body: createWebhookBody,
    response: { 201: webhookResponse },
    summary: "Register a webhook (https, or http to localhost/127.0.0.1); the secret is never returned.",
    handler: (rc) => commitWrite(rc, (db) => {
      // A hook reads events on its creator's behalf: registering one needs the right to read them.
      if (!hasScope(rc.caller.scopes, "events:read")) throw forbidden(missingScopeMessage("events:read"));
      if (db.first<{ n: number }>("SELECT count(*) AS n FROM webhooks")!.n >= MAX_WEBHOOKS_PER_ORG)
        throw conflict(`An organization may register at most ${MAX_WEBHOOKS_PER_ORG} webhooks.`);
      const now = clock.nowIso();
      const events = rc.body.events.includes("*") ? ["*"] : [...new Set(rc.body.events)];
      // It receives the events committed after this one, not the organization's history.
      const fromSeq = db.first<{ seq: number }>("SELECT coalesce(max(seq), 0) AS seq FROM events")!.seq;
      const row: WebhookRow = { webhook_id: newId(ID_PREFIX.webhook), url: rc.body.url, secret: rc.body.secret,
        events: JSON.stringify(events), status: "active", failure_count: 0, created_by: rc.caller.principalId, from_seq: fromSeq,
        created_at: now, updated_at: now };
      db.run(
        `INSERT INTO webhooks (webhook_id, url, secret, events, status, failure_count, created_by, from_seq, created_at, updated_at)
         VALUES (?, ?, ?, ?, 'active', 0, ?, ?, ?, ?)`,
        row.webhook_id, row.url, row.secret, row.events, row.created_by, fromSeq, now, now);
      return { status: 201, data: view(row),
        audit: { action: "webhook.created", resourceType: "webhook", resourceId: row.webhook_id, detail: { events } } };
    }),
  }),

  orgRoute({
    method: "GET", path: "/v1/webhooks", scope: "webhooks:read",
    response: { 200: webhookListResponse },
    summary: "The organization's webhooks with status, event filter and failure count.",
    handler: ({ db }) => ok({ webhooks: db.all<WebhookRow>("SELECT * FROM webhooks ORDER BY created_at, webhook_id").map(view) }),
  }),

  orgRoute({
    method: "DELETE", path: "/v1/webhooks/:id", scope: "webhooks:write",
    response: { 200: webhookDeletedResponse },
    summary: "Remove a webhook and its delivery rows.",
    handler: (rc) => {
      const hook = requireHook(rc.db, rc.params.id);
      return commitWrite(rc, (db) => {
        const removed = db.all("DELETE FROM deliveries WHERE webhook_id = ? RETURNING 1", hook.webhook_id).length;
        db.run("DELETE FROM webhooks WHERE webhook_id = ?", hook.webhook_id);
        return { status: 200, data: { webhook_id: hook.webhook_id, deleted: true, deliveries_removed: removed },
          audit: { action: "webhook.deleted", resourceType: "webhook", resourceId: hook.webhook_id } };
      });
    },
  }),

  orgRoute({
    method: "POST", path: "/v1/webhooks/:id/pause", scope: "webhooks:write",
    response: { 200: webhookResponse },
    summary: "Pause delivery; events keep accruing.",
    handler: (rc) => {
      const hook = requireHook(rc.db, rc.params.id);
      if (hook.status === "disabled") throw forbidden("Cannot pause a disabled webhook.");
      return setStatus(rc, hook, "paused", "webhook.paused");
    },
  }),

  orgRoute({
    method: "POST", path: "/v1/webhooks/:id/resume", scope: "webhooks:write",
    response: { 200: webhookResponse },
    summary: "Resume delivery and reset failure_count to 0.",
    handler: (rc) => {
      const hook = requireHook(rc.db, rc.params.id);
      if (hook.status === "disabled") throw forbidden("Cannot resume a disabled webhook. Re-register it.");
      return setStatus(rc, hook, "active", "webhook.resumed");
    },
  }),

  orgRoute({
    method: "GET", path: "/v1/webhooks/:id/deliveries", scope: "webhooks:read", query: deliveriesQuery,
    response: { 200: deliveryListResponse },
    summary: "Deliveries of one webhook of events you may read, newest first; never a response body.",
    handler: ({ db, caller, params, query }) => {
      const hook = requireHook(db, params.id);
      // Only deliveries of events the caller may read (GET /v1/events/:id answers them), filtered
      // before the LIMIT. The cursor names the page's last delivery; one the caller cannot see is missing.
      const [visible, ...who] = readableEventsWhere(caller, "e");
      const readable = `FROM deliveries d JOIN events e ON e.event_id = d.event_id WHERE d.webhook_id = ? AND ${visible}`;
      const before = query.after ? positionAfter(query.after, ID_PREFIX.delivery,
        (id) => db.first<{ seq: number }>(`SELECT d.seq ${readable} AND d.delivery_id = ?`, hook.webhook_id, ...who, id)?.seq,
        () => { throw notFound("Delivery"); }) : Number.MAX_SAFE_INTEGER;
      const rows = db.all<{ seq: number; delivery_id: string; event_id: string; status: string; attempts: number;
        last_attempt_at: string | null; next_retry_at: string | null; response_status: number | null; created_at: string }>(
        `SELECT d.* ${readable} AND d.seq < ? ORDER BY d.seq DESC LIMIT ?`, hook.webhook_id, ...who, before, query.limit + 1);
      const { page, ...more } = pageOf(rows, query.limit, (d) => [d.delivery_id]);
      return ok({
        deliveries: page.map((d) => ({ id: d.delivery_id, event_id: d.event_id, status: d.status, attempts: d.attempts,
          last_attempt_at: d.last_attempt_at, next_retry_at: d.next_retry_at, response_status: d.response_status, created_at: d.created_at })),
        ...more,
      });
    },
  }),

  orgRoute({
    method: "POST", path: "/v1/webhooks/deliver", scope: "webhooks:write", body: deliverBody, bodyOptional: true,
    response: { 200: deliverResponse },
    summary: "Drain the outbox: deliver events after `after` (from the start without it) to subscribed hooks.",
    handler: async (rc) => {
      const { db, storage, body } = rc;
      const afterSeq = body.after ? drainPosition(db, rc.caller, body.after) : 0;
      // Delivery rows are claimed and settled by drainEvents itself (sending happens between); the
      // drain as an administrative act is audited afterwards.
      const out = await drainEvents(db, storage, afterSeq, body.limit, rc.deps.sendWebhook);
      const data = { events_drained: out.eventsDrained, cursor: drainCursor(out.lastSeq), pending_deliveries: pendingDeliveries(db) };
      return commitWrite(rc, () => ({ status: 200, data,
        audit: { action: "webhook.drained", resourceType: "webhook", detail: { after: body.after ?? null, limit: body.limit, ...data } } }));
    },
  }),
];
