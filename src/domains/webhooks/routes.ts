// Webhook registration, pause/resume, deletion, the delivery list, redelivery and the manual drain.
// Webhook administration emits no domain events (SPEC) but every change is audited.
import { managesShared } from "../../access/policy";
import { hasScope, missingScopeMessage } from "../../auth/scopes";
import { clock, isoAt } from "../../http/clock";
import { encodeCursor, pageOf, positionAfter } from "../../http/cursor";
import { ApiError, conflict, forbidden, notFound } from "../../http/errors";
import { ID_PREFIX, newId } from "../../http/ids";
import { orgRoute } from "../../org/route";
import type { Db } from "../../sql/db";
import type { Caller, RequestCtx } from "../../org/request";
import { ok } from "../../org/request";
import { lastEventSeq, readableEvent, readableEventsAfter } from "../../org/events";
import { commitWrite } from "../../org/write";
import { readableEventSeq } from "../events/routes";
import { deliverEvents, nextDeliveryWorkAt, webhookDeliveryJob } from "./delivery";
import {
  createWebhookBody,
  deliverBody,
  deliveriesQuery,
  deliverResponse,
  deliveryListResponse,
  deliveryResponse,
  MAX_WEBHOOKS_PER_ORG,
  webhookDeletedResponse,
  webhookListResponse,
  webhookResponse,
} from "./schema";
import {
  countHooks,
  type DeliveryRow,
  deleteHook,
  getDelivery,
  getHook,
  insertHook,
  managedHookIds,
  managedHooks,
  pendingDeliveriesFor,
  readableDeliveriesBefore,
  readableDelivery,
  reopenFailedDelivery,
  setHookStatus,
  type WebhookRow,
} from "./store";

export const SIGNING = {
  header: "X-Svc-Signature",
  algorithm: "HMAC-SHA256",
  format: "sha256=<64 lowercase hex>",
  note: "HMAC-SHA256 of the raw request body with the webhook secret. Verify against the exact bytes received; deduplicate on X-Svc-Delivery. Standard Webhooks 1.0 headers (webhook-id, webhook-timestamp, webhook-signature) are sent as well.",
} as const;

const view = (w: WebhookRow) => ({
  webhook_id: w.webhook_id,
  url: w.url,
  events: JSON.parse(w.events) as string[],
  status: w.status,
  failure_count: w.failure_count,
  created_at: w.created_at,
  updated_at: w.updated_at,
  signing: SIGNING,
});

/**
 * A hook the caller manages (its creator, or an owner/admin: managesShared); any other hook answers
 * exactly like a missing one.
 */
function requireHook(db: Db, caller: Caller, id: string): WebhookRow {
  const hook = getHook(db, id);
  if (!hook || !managesShared(caller, hook.created_by)) throw notFound("Webhook");
  return hook;
}

const deliveryView = (d: DeliveryRow) => ({
  id: d.delivery_id,
  event_id: d.event_id,
  status: d.status,
  attempts: d.attempts,
  last_attempt_at: d.last_attempt_at,
  next_retry_at: d.next_retry_at,
  response_status: d.response_status,
  failure_reason: d.failure_reason,
  created_at: d.created_at,
});

function setStatus(rc: RequestCtx, hook: WebhookRow, status: "active" | "paused", action: string) {
  return commitWrite(rc, (db) => {
    setHookStatus(db, hook.webhook_id, status, clock.nowIso());
    // Resumed: what accrued while it was paused (new events, due retries) goes out at once.
    if (status === "active") rc.jobDue(webhookDeliveryJob.name, clock.nowMs());
    return {
      status: 200,
      data: view(getHook(db, hook.webhook_id)!),
      audit: { action, resourceType: "webhook", resourceId: hook.webhook_id },
    };
  });
}

/**
 * The drain's cursor names the last event it drained, as an id cursor (positionAfter): the drain scans
 * only events the caller may read, so neither its counts nor its cursor tell anything about the rest of
 * the organization's log. `after` takes such a cursor or an event id (as GET /v1/events does); one the
 * caller cannot read answers the same 404 as a random id.
 */
const drainPosition = (db: Db, caller: Caller, after: string) =>
  after.startsWith(ID_PREFIX.event)
    ? readableEventSeq(db, caller, after)
    : positionAfter(
        after,
        ID_PREFIX.event,
        (id) => readableEvent(db, caller, id)?.seq,
        () => {
          throw notFound("Event");
        },
      );

export const webhookRoutes = [
  orgRoute({
    method: "POST",
    path: "/v1/webhooks",
    scope: "webhooks:write",
    body: createWebhookBody,
    response: { 201: webhookResponse },
    summary: "Register a webhook (https, or http to localhost/127.0.0.1); the secret is never returned.",
    operationId: "createWebhook",
    tag: "Webhooks",
    description:
      "Registers a URL (https, or http to localhost) to receive the listed event kinds, signed with HMAC-SHA256 of " +
      "the body using `secret`. The secret is never returned; private network hosts are refused.",
    handler: (rc) =>
      commitWrite(rc, (db) => {
        // A hook reads events on its creator's behalf: registering one needs the right to read them.
        if (!hasScope(rc.caller.scopes, "events:read")) throw forbidden(missingScopeMessage("events:read"));
        if (countHooks(db) >= MAX_WEBHOOKS_PER_ORG)
          throw conflict(`An organization may register at most ${MAX_WEBHOOKS_PER_ORG} webhooks.`);
        const now = clock.nowIso();
        const events = rc.body.events.includes("*") ? ["*"] : [...new Set(rc.body.events)];
        // It receives the events committed after this one, not the organization's history.
        const fromSeq = lastEventSeq(db);
        const row: WebhookRow = {
          webhook_id: newId(ID_PREFIX.webhook),
          url: rc.body.url,
          secret: rc.body.secret,
          events: JSON.stringify(events),
          status: "active",
          failure_count: 0,
          created_by: rc.caller.principalId,
          from_seq: fromSeq,
          scanned_seq: fromSeq,
          created_at: now,
          updated_at: now,
        };
        insertHook(db, row);
        return {
          status: 201,
          data: view(row),
          audit: { action: "webhook.created", resourceType: "webhook", resourceId: row.webhook_id, detail: { events } },
        };
      }),
  }),

  orgRoute({
    method: "GET",
    path: "/v1/webhooks",
    scope: "webhooks:read",
    response: { 200: webhookListResponse },
    summary:
      "Webhooks with status, event filter and failure count: your own, or every hook of the organization for an owner or admin.",
    operationId: "listWebhooks",
    tag: "Webhooks",
    description:
      "Lists webhooks with status, event filter and consecutive failures: the caller's own, or all of them for an " +
      "owner or admin.",
    handler: ({ db, caller }) => {
      return ok({ webhooks: managedHooks(db, caller).map(view) });
    },
  }),

  orgRoute({
    method: "DELETE",
    path: "/v1/webhooks/:id",
    scope: "webhooks:write",
    response: { 200: webhookDeletedResponse },
    summary: "Remove a webhook and its delivery rows.",
    operationId: "deleteWebhook",
    tag: "Webhooks",
    description: "Removes a webhook together with its delivery rows; its creator or an owner/admin only.",
    handler: (rc) => {
      const hook = requireHook(rc.db, rc.caller, rc.params.id);
      return commitWrite(rc, (db) => {
        const removed = deleteHook(db, hook.webhook_id);
        return {
          status: 200,
          data: { webhook_id: hook.webhook_id, deleted: true, deliveries_removed: removed },
          audit: { action: "webhook.deleted", resourceType: "webhook", resourceId: hook.webhook_id },
        };
      });
    },
  }),

  orgRoute({
    method: "POST",
    path: "/v1/webhooks/:id/pause",
    scope: "webhooks:write",
    response: { 200: webhookResponse },
    summary: "Pause delivery; events keep accruing.",
    operationId: "pauseWebhook",
    tag: "Webhooks",
    description: "Stops delivery to a webhook while events keep accruing. A disabled webhook cannot be paused (403).",
    handler: (rc) => {
      const hook = requireHook(rc.db, rc.caller, rc.params.id);
      if (hook.status === "disabled") throw forbidden("Cannot pause a disabled webhook.");
      return setStatus(rc, hook, "paused", "webhook.paused");
    },
  }),

  orgRoute({
    method: "POST",
    path: "/v1/webhooks/:id/resume",
    scope: "webhooks:write",
    response: { 200: webhookResponse },
    summary: "Resume delivery and reset failure_count to 0.",
    operationId: "resumeWebhook",
    tag: "Webhooks",
    description:
      "Resumes delivery and resets `failure_count` to 0; what accrued meanwhile goes out. A disabled webhook must be " +
      "registered again (403).",
    handler: (rc) => {
      const hook = requireHook(rc.db, rc.caller, rc.params.id);
      if (hook.status === "disabled") throw forbidden("Cannot resume a disabled webhook. Re-register it.");
      return setStatus(rc, hook, "active", "webhook.resumed");
    },
  }),

  orgRoute({
    method: "GET",
    path: "/v1/webhooks/:id/deliveries",
    scope: "webhooks:read",
    query: deliveriesQuery,
    response: { 200: deliveryListResponse },
    summary: "Deliveries of one webhook of events you may read, newest first; never a response body.",
    operationId: "listDeliveries",
    tag: "Webhooks",
    description:
      "Lists a webhook's deliveries of events the caller may read, newest first, with status, attempts and the " +
      "receiver's HTTP status; never a response body.",
    handler: ({ db, caller, params, query }) => {
      const hook = requireHook(db, caller, params.id);
      // Only deliveries of events the caller may read (GET /v1/events/:id answers them), filtered
      // before the LIMIT. The cursor names the page's last delivery; one the caller cannot see is missing.
      const before = query.after
        ? positionAfter(
            query.after,
            ID_PREFIX.delivery,
            (id) => readableDelivery(db, caller, hook.webhook_id, id)?.seq,
            () => {
              throw notFound("Delivery");
            },
          )
        : Number.MAX_SAFE_INTEGER;
      const rows = readableDeliveriesBefore(db, caller, hook.webhook_id, before, query.limit + 1);
      const { page, ...more } = pageOf(rows, query.limit, (d) => [d.delivery_id]);
      return ok({ deliveries: page.map(deliveryView), ...more });
    },
  }),

  orgRoute({
    method: "POST",
    path: "/v1/webhooks/:id/deliveries/:delivery_id/retry",
    scope: "webhooks:write",
    response: { 200: deliveryResponse },
    summary: "Redeliver a failed delivery: back to pending, due at once, under the same delivery id (beyond SPEC).",
    operationId: "retryDelivery",
    tag: "Webhooks",
    description:
      "Sends a failed delivery again: it goes back to pending, due at once, under the same delivery id so receivers " +
      "still deduplicate. Other states are a 400.",
    handler: (rc) => {
      const { db, caller, params } = rc;
      const hook = requireHook(db, caller, params.id);
      // A delivery of another hook, or of an event the caller may not read, is as missing as a random id.
      const delivery = readableDelivery(db, caller, hook.webhook_id, params.delivery_id);
      if (!delivery) throw notFound("Delivery");
      if (hook.status === "disabled") throw forbidden("Cannot redeliver to a disabled webhook. Re-register it.");
      if (delivery.status !== "failed")
        throw new ApiError(
          "VALIDATION_ERROR",
          `Only a failed delivery can be redelivered; this one is ${delivery.status}.`,
        );
      return commitWrite(rc, (db) => {
        const now = clock.nowMs();
        reopenFailedDelivery(db, delivery.delivery_id, isoAt(now));
        rc.jobDue(webhookDeliveryJob.name, now);
        return {
          status: 200,
          data: deliveryView(getDelivery(db, delivery.delivery_id)!),
          audit: {
            action: "webhook.redelivered",
            resourceType: "webhook",
            resourceId: hook.webhook_id,
            detail: { delivery_id: delivery.delivery_id, event_id: delivery.event_id },
          },
        };
      });
    },
  }),

  orgRoute({
    method: "POST",
    path: "/v1/webhooks/deliver",
    scope: "webhooks:write",
    body: deliverBody,
    bodyOptional: true,
    response: { 200: deliverResponse },
    summary:
      "Drain the outbox: deliver the events you may read after `after` (from the start without it) to subscribed hooks.",
    operationId: "deliverWebhooks",
    tag: "Webhooks",
    description:
      "Drains the outbox by hand: delivers the events the caller may read after `after` (from the start without it) " +
      "to subscribed hooks. Counts and cursor cover only what the caller may read.",
    handler: async (rc) => {
      const { db, storage, body, caller } = rc;
      const afterSeq = body.after ? drainPosition(db, caller, body.after) : 0;
      const events = readableEventsAfter(db, caller, afterSeq, { limit: body.limit });
      // It waits only for the hooks the caller manages: another principal's slow receiver cannot hold it up.
      const managedIds = managedHookIds(db, caller);
      // Delivery rows are claimed and settled by deliverEvents itself (sending happens between); the
      // drain as an administrative act is audited afterwards.
      await deliverEvents(db, storage, events, rc.deps, body.limit, managedIds);
      const last = events.at(-1);
      const data = {
        events_drained: events.length,
        cursor: last ? encodeCursor([last.event_id]) : (body.after ?? null),
        pending_deliveries: pendingDeliveriesFor(db, caller),
      };
      return commitWrite(rc, () => {
        // What its sends left (a retry, a send still in flight) is the background's next work.
        const next = nextDeliveryWorkAt(db, rc.deps.webhookDeliveries);
        if (next != null) rc.jobDue(webhookDeliveryJob.name, next);
        return {
          status: 200,
          data,
          audit: {
            action: "webhook.drained",
            resourceType: "webhook",
            detail: { after: body.after ?? null, limit: body.limit, ...data },
          },
        };
      });
    },
  }),
];
