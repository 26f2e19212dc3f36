// What every org Durable Object is built with, beside the route table (src/routes.ts) and the job list
// (src/jobs.ts): the outbound webhook sender and the observation purge guards. Passed in explicitly;
// a test replaces them on one object (OrgStore.deps), never in a module.
import { fetchSender, offlineSender } from "./domains/webhooks/delivery";
import type { EdgeEnv } from "./http/route";
import type { OrgDeps, PurgeGuard } from "./org/request";
import { modelDeps } from "./vector/runtime";

/** Guards every purge consults; retention's legal-hold guard registers here. */
export const PURGE_GUARDS: readonly PurgeGuard[] = [];

export const orgDeps = (env: Pick<EdgeEnv, "WEBHOOK_SENDER" | "EMBEDDING_PROVIDER" | "VECTOR_INDEX" | "EXTRACTION_PROVIDER" | "AI" | "VECTORIZE">): OrgDeps => ({
  sendWebhook: env.WEBHOOK_SENDER === "offline" ? offlineSender : fetchSender,
  purgeGuards: PURGE_GUARDS,
  models: modelDeps(env),
});
