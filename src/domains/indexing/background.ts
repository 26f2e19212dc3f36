// The index drain as background work: run by the organization's timer when background repair is
// enabled and a vector capability is configured (SPEC "Who drives delivery"). Bounded per run; an
// unreachable backend leaves the queue as it is and asks to be retried later.
import { clock } from "../../http/clock";
import { ApiError } from "../../http/errors";
import type { Db } from "../../org/db";
import { hasVectors, type VectorRuntime } from "../../vector/runtime";
import { indexQueueSize } from "./queue";
import { applyDrain, runDrain } from "./service";

export const BACKGROUND_INDEX_BATCH = 100;
export const INDEX_RETRY_MS = 30_000;

/** Returns when to run again (ms), or null when nothing is queued or vectors are off. */
export async function drainIndexInBackground(db: Db, storage: DurableObjectStorage, rt: VectorRuntime): Promise<number | null> {
  if (!hasVectors(rt) || indexQueueSize(db) === 0) return null;
  try {
    const plan = await runDrain(db, rt, BACKGROUND_INDEX_BATCH, clock.nowIso());
    storage.transactionSync(() => applyDrain(db, plan, clock.nowIso()));
  } catch (err) {
    if (err instanceof ApiError && err.code === "UNAVAILABLE") return clock.nowMs() + INDEX_RETRY_MS;
    throw err;
  }
  return indexQueueSize(db) > 0 ? clock.nowMs() : null;
}
