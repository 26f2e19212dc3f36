// The organization's own background job: carrying the record-ownership outbox to the registry (the retry
// path: a creating write already registers its ids before it replies, see OrgStore.dispatch).
// Domain jobs live in their domains; the list the alarm runs is src/jobs.ts.
import { clock } from "../http/clock";
import type { BackgroundJob } from "./jobs";
import { drainRecordOwners } from "./outbox";
import { type ModelEnv, modelConfig } from "../vector/config";

/** Retry delay after a failed outbox drain. */
export const OUTBOX_RETRY_MS = 30_000;

export const recordOwnersJob: BackgroundJob = {
  name: "record_owners",
  async run({ db, deps, orgId }) {
    if (!orgId) return null;
    return (await drainRecordOwners(db, deps.registry, orgId)) ? clock.nowMs() : null;
  },
  retryMs: () => OUTBOX_RETRY_MS,
};

/** SPEC "Who drives delivery": the timer's default period. */
export const DEFAULT_MAINTENANCE_INTERVAL_MS = 15_000;

/**
 * The maintenance interval in ms (0: no background timer). SPEC's rule: the timer runs only when the
 * interval is above zero and either an interval was given explicitly or a vector capability is
 * configured (then at the default period).
 */
export function maintenanceIntervalMs(env: { MAINTENANCE_INTERVAL_SECONDS?: string } & ModelEnv): number {
  const given = env.MAINTENANCE_INTERVAL_SECONDS?.trim();
  if (given) return Math.max(0, Number(given) || 0) * 1000;
  return modelConfig(env, clock.nowIso).vectors.status === "enabled" ? DEFAULT_MAINTENANCE_INTERVAL_MS : 0;
}
