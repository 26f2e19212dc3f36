// What every org Durable Object is built with, beside the route table (src/routes.ts) and the job list
// (src/jobs.ts): the outbound webhook sender, the observation purge guards and the ownership registry. Passed in explicitly;
// a test replaces them on one object (OrgStore.deps), never in a module.
import { legalHoldPurgeGuard } from "./domains/retention/holds";
import { DeliveriesInFlight, fetchSender, offlineSender, retryScheduleOf } from "./domains/webhooks/delivery";
import type { EdgeEnv } from "./http/route";
import type { OrgDeps, PurgeGuard } from "./org/request";
import { durableRegistry } from "./registry/client";
import { modelDeps } from "./vector/runtime";

/** Guards every purge consults: an active legal hold covering the observation blocks it (409). */
export const PURGE_GUARDS: readonly PurgeGuard[] = [legalHoldPurgeGuard];

export const orgDeps = (env: Pick<EdgeEnv, "WEBHOOK_SENDER" | "WEBHOOK_RETRY_SCHEDULE" | "ID_REGISTRY" | "EMBEDDING_PROVIDER" | "VECTOR_INDEX" | "EXTRACTION_PROVIDER" | "AI" | "VECTORIZE" |
  "EMBEDDING_URL" | "EMBEDDING_MODEL" | "EMBEDDING_DIMENSIONS" | "EMBEDDING_API_KEY" | "EMBEDDING_SIMILARITY_FLOOR">): OrgDeps => ({
  sendWebhook: env.WEBHOOK_SENDER === "offline" ? offlineSender : fetchSender,
  webhookRetrySchedule: retryScheduleOf(env),
  webhookDeliveries: new DeliveriesInFlight(),
  purgeGuards: PURGE_GUARDS,
  registry: durableRegistry(env.ID_REGISTRY),
  models: modelDeps(env),
});
