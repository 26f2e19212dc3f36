import { z } from "zod";
import { ID_PREFIX } from "../../http/ids";
import { count, idOf, pageOf, timestamp } from "../../http/shapes";
import { intRange, limitParam } from "../../http/validate";
import { EVENT_KINDS } from "../../org/write";
import { FAILURE_REASONS } from "./store";
import { webhookUrlProblem } from "./url-guard";

export const MAX_WEBHOOKS_PER_ORG = 100;

export const createWebhookBody = z.strictObject({
  url: z
    .string()
    .max(2048, "must be at most 2048 characters")
    .superRefine((url, ctx) => {
      const problem = webhookUrlProblem(url);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    }),
  secret: z.string().min(16, "must be at least 16 characters").max(512, "must be at most 512 characters"),
  events: z
    .array(z.enum([...EVENT_KINDS, "*"], { error: 'must be an event kind or "*"' }))
    .min(1, "must list at least one event kind")
    .max(50, "must list at most 50 entries"),
});

export const deliverBody = z.strictObject({
  after: z
    .string()
    .max(64)
    .nullable()
    .optional()
    .describe("A `cursor` this route returned, or an event id; absent or null: from the start"),
  limit: intRange(1, 200).default(50),
});

export const deliveriesQuery = z.object({ limit: limitParam(1, 200, 50), after: z.string().max(512).optional() });

// Response schemas (published in docs/openapi.json; checked against every answer of the test suite).
const webhookId = idOf(ID_PREFIX.webhook);

export const webhookResponse = z
  .strictObject({
    webhook_id: webhookId,
    url: z.string(),
    events: z.array(z.enum([...EVENT_KINDS, "*"])),
    status: z.enum(["active", "paused", "disabled"]),
    failure_count: count.describe(
      "Consecutive deliveries that failed for good (out of attempts) since the last success; 10 disable the hook",
    ),
    created_at: timestamp,
    updated_at: timestamp,
    signing: z.strictObject({
      header: z.string(),
      algorithm: z.literal("HMAC-SHA256"),
      format: z.string(),
      note: z.string(),
    }),
  })
  .meta({ id: "Webhook" });
export const webhookListResponse = z.strictObject({ webhooks: z.array(webhookResponse) }).meta({ id: "WebhookList" });
export const webhookDeletedResponse = z
  .strictObject({ webhook_id: webhookId, deleted: z.literal(true), deliveries_removed: count })
  .meta({ id: "DeletedWebhook" });

export const deliveryResponse = z
  .strictObject({
    id: idOf(ID_PREFIX.delivery),
    event_id: idOf(ID_PREFIX.event),
    status: z
      .enum(["pending", "sending", "delivered", "failed"])
      .describe(
        "pending: waiting for its next attempt (next_retry_at); sending: an attempt in flight; delivered; failed: never tried again automatically (failure_reason says why)",
      ),
    attempts: count.describe("Attempts made (at most 5 before a redelivery)"),
    last_attempt_at: timestamp.nullable(),
    next_retry_at: timestamp.nullable().describe("When the next attempt is due; null once delivered or failed"),
    response_status: z
      .number()
      .int()
      .nullable()
      .describe("The receiver's HTTP status; null after a network error or before the first attempt"),
    failure_reason: z
      .enum(FAILURE_REASONS)
      .nullable()
      .describe(
        "Why a failed delivery failed: attempts_exhausted (every attempt failed), hook_disabled (its hook was disabled first), event_unreadable (its hook's creator may no longer read the event: nothing was sent). Null unless failed (beyond SPEC)",
      ),
    created_at: timestamp,
  })
  .meta({ id: "Delivery" });
export const deliveryListResponse = pageOf("deliveries", deliveryResponse).meta({ id: "DeliveryList" });

export const deliverResponse = z
  .strictObject({
    events_drained: count.describe("Events you may read that this call scanned"),
    cursor: z
      .string()
      .nullable()
      .describe("Names the last event drained (or echoes `after` when none was); pass as `after` to continue"),
    pending_deliveries: count.describe("Deliveries not yet sent of hooks you manage and events you may read"),
  })
  .meta({ id: "OutboxDrain" });
