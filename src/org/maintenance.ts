// The organization's own background job: carrying the record-ownership outbox to the global D1 index.
// Domain jobs live in their domains; the list the alarm runs is src/jobs.ts.
import { clock } from "../http/clock";
import type { BackgroundJob } from "./jobs";
import { drainRecordOwners } from "./outbox";

/** Retry delay after a failed outbox drain. */
export const OUTBOX_RETRY_MS = 30_000;

export const recordOwnersJob: BackgroundJob = {
  name: "record_owners",
  async run({ db, indexDb, orgId }) {
    if (!orgId) return null;
    return (await drainRecordOwners(db, indexDb, orgId)) ? clock.nowMs() : null;
  },
  retryMs: () => OUTBOX_RETRY_MS,
};

/** The maintenance interval in ms (0: no background timer). */
export const maintenanceIntervalMs = (env: { MAINTENANCE_INTERVAL_SECONDS?: string }) =>
  Math.max(0, Number(env.MAINTENANCE_INTERVAL_SECONDS ?? 0) || 0) * 1000;
