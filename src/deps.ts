// What every org Durable Object is built with, beside the route table (src/routes.ts) and the job list
// (src/jobs.ts): the outbound webhook sender, the observation purge guards, the ownership registry, the
// model backends, and what the org machinery (src/org) asks of the domains: whether a principal has a
// dashboard account, and how to retire a credential the index never received. Passed in explicitly; a
// test replaces them on one object (OrgStore.deps), never in a module.
import { accountOfPrincipal, revokeSessionById } from "./domains/dashboard/store";
import { revokeKey } from "./domains/identity/store";
import { legalHoldPurgeGuard } from "./domains/retention/holds";
import { DeliveriesInFlight, fetchSender, offlineSender, retryScheduleOf } from "./domains/webhooks/delivery";
import type { EdgeEnv } from "./env";
import type { OrgDeps, PurgeGuard } from "./org/request";
import { durableRegistry } from "./registry/client";
import { modelDeps } from "./vector/runtime";

/**
 * What webhook delivery alone needs (its DeliveryDeps) joins OrgDeps here, above the domains, so src/org
 * names no domain type.
 */
declare module "./org/request" {
  interface OrgDeps {
    /** Waits between a delivery's attempts, in ms (WEBHOOK_RETRY_SCHEDULE, or SPEC's). */
    webhookRetrySchedule: readonly number[];
    /** The deliveries this object is sending now (one per object: never reclaimed while held). */
    webhookDeliveries: DeliveriesInFlight;
  }
}

/** Guards every purge consults: an active legal hold covering the observation blocks it (409). */
export const PURGE_GUARDS: readonly PurgeGuard[] = [legalHoldPurgeGuard];

export const orgDeps = (
  env: Pick<
    EdgeEnv,
    | "WEBHOOK_SENDER"
    | "WEBHOOK_RETRY_SCHEDULE"
    | "ID_REGISTRY"
    | "EMBEDDING_PROVIDER"
    | "VECTOR_INDEX"
    | "EXTRACTION_PROVIDER"
    | "AI"
    | "VECTORIZE"
    | "EMBEDDING_URL"
    | "EMBEDDING_MODEL"
    | "EMBEDDING_DIMENSIONS"
    | "EMBEDDING_API_KEY"
    | "EMBEDDING_SIMILARITY_FLOOR"
  >,
): OrgDeps => ({
  sendWebhook: env.WEBHOOK_SENDER === "offline" ? offlineSender : fetchSender,
  webhookRetrySchedule: retryScheduleOf(env),
  webhookDeliveries: new DeliveriesInFlight(),
  purgeGuards: PURGE_GUARDS,
  registry: durableRegistry(env.ID_REGISTRY),
  models: modelDeps(env),
  accountUsername: (db, principalId) => accountOfPrincipal(db, principalId)?.username ?? null,
  retireCredential: (db, { keyId, kind }) =>
    kind === "dashboard_session" ? revokeSessionById(db, keyId) : revokeKey(db, keyId),
});
