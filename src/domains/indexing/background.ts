// The index drain as a background job (src/jobs.ts): made due by every write that queues index rows
// when the timer runs (a maintenance interval above zero) and a vector capability is configured, per
// SPEC "Who drives delivery". Bounded per run; an unreachable backend leaves the queue as it is and
// the job retries later. Without a timer, POST /v1/index/drain is the driver.
import { clock } from "../../http/clock";
import { ApiError } from "../../http/errors";
import type { BackgroundJob } from "../../org/jobs";
import { hasVectors, type ModelDeps, runtimeFor } from "../../vector/runtime";
import { indexQueueSize } from "./queue";
import { applyDrain, runDrain } from "./service";

export const BACKGROUND_INDEX_BATCH = 100;
export const INDEX_RETRY_MS = 30_000;
/** After a write, how long the job waits so that consecutive writes drain as one batch. */
export const INDEX_DRAIN_DELAY_MS = 1_000;

/** Whether writes should make the job due: the timer runs and vectors are configured. */
export const drainsInBackground = (models: ModelDeps, maintenanceIntervalMs: number): boolean =>
  maintenanceIntervalMs > 0 && models.config.vectors.status === "enabled";

export const indexDrainJob: BackgroundJob = {
  name: "index_drain",
  async run(ctx) {
    const rt = runtimeFor(ctx);
    if (
      !drainsInBackground(ctx.deps.models, ctx.maintenanceIntervalMs) ||
      !hasVectors(rt) ||
      indexQueueSize(ctx.db) === 0
    )
      return null;
    try {
      const plan = await runDrain(ctx.db, rt, BACKGROUND_INDEX_BATCH, clock.nowIso());
      ctx.storage.transactionSync(() => applyDrain(ctx.db, plan, clock.nowIso()));
    } catch (err) {
      if (err instanceof ApiError && err.code === "UNAVAILABLE") return clock.nowMs() + INDEX_RETRY_MS;
      throw err;
    }
    return indexQueueSize(ctx.db) > 0 ? clock.nowMs() : null;
  },
  retryMs: () => INDEX_RETRY_MS,
};
