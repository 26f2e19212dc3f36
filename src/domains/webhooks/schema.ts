import { z } from "zod";
import { limitParam } from "../../http/validate";
import { EVENT_KINDS } from "../../org/write";
import { webhookUrlProblem } from "./url-guard";

export const MAX_WEBHOOKS_PER_ORG = 100;

export const createWebhookBody = z.strictObject({
  url: z.string().max(2048, "must be at most 2048 characters").superRefine((url, ctx) => {
    const problem = webhookUrlProblem(url);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  }),
  secret: z.string().min(16, "must be at least 16 characters").max(512, "must be at most 512 characters"),
  events: z.array(z.enum([...EVENT_KINDS, "*"], { error: "must be an event kind or \"*\"" }))
    .min(1, "must list at least one event kind").max(50, "must list at most 50 entries"),
});

export const deliverBody = z.strictObject({
  after: z.string().max(64).optional(),
  limit: z.number().int("must be an integer from 1 to 200").min(1, "must be an integer from 1 to 200")
    .max(200, "must be an integer from 1 to 200").default(50),
});

export const deliveriesQuery = z.object({ limit: limitParam(1, 200, 50), after: z.string().max(512).optional() });
