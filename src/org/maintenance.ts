// The org alarm's work, idempotent and bounded per run: expiry sweeps, the record-ownership outbox,
// and background webhook delivery when due. Each step reports when it wants to run again; a failing
// step is logged and retried later. Reads never depend on any of this having run.
import { runDueDelivery, type Sender } from "../domains/webhooks/delivery";
import { clock } from "../http/clock";
import type { Db } from "./db";
import { getMeta } from "./meta";
import { drainRecordOwners } from "./outbox";

/** Retry delay after a failed outbox drain. */
export const OUTBOX_RETRY_MS = 30_000;

export interface AlarmDeps {
  db: Db;
  storage: DurableObjectStorage;
  indexDb: D1Database;
  maintenanceIntervalMs: number;
  send: Sender;
}

/** Runs every step; returns when the alarm should fire next, or null when nothing is pending. */
export async function runAlarm(deps: AlarmDeps): Promise<number | null> {
  const wakeAt: number[] = [];
  const nextExpiry = runMaintenance(deps.db, deps.storage);
  if (nextExpiry != null) wakeAt.push(nextExpiry);
  const orgId = getMeta(deps.db, "org_id");
  if (orgId) {
    try {
      if (await drainRecordOwners(deps.db, deps.indexDb, orgId)) wakeAt.push(clock.nowMs());
    } catch (err) {
      console.error("outbox drain failed; retrying", err);
      wakeAt.push(clock.nowMs() + OUTBOX_RETRY_MS);
    }
  }
  const delivery = await runDueDelivery(deps.db, deps.storage, deps.maintenanceIntervalMs, deps.send);
  if (delivery != null) wakeAt.push(delivery);
  return wakeAt.length ? Math.min(...wakeAt) : null;
}

export const SWEEP_BATCH = 500;

export function runMaintenance(db: Db, storage: DurableObjectStorage): number | null {
  const now = clock.nowIso();
  let more = false;
  storage.transactionSync(() => {
    const expiredCheckpoints = db.all(
      `DELETE FROM checkpoints WHERE checkpoint_id IN
         (SELECT checkpoint_id FROM checkpoints WHERE expires_at <= ? ORDER BY expires_at LIMIT ?) RETURNING 1`, now, SWEEP_BATCH).length;
    const expiredLeases = db.all(
      `UPDATE leases SET released_at = expires_at WHERE lease_id IN
         (SELECT lease_id FROM leases WHERE released_at IS NULL AND expires_at <= ? ORDER BY expires_at LIMIT ?) RETURNING 1`, now, SWEEP_BATCH).length;
    const expiredSnapshots = db.all(
      `DELETE FROM search_snapshots WHERE snapshot_id IN
         (SELECT snapshot_id FROM search_snapshots WHERE expires_at <= ? ORDER BY expires_at LIMIT ?) RETURNING 1`, now, SWEEP_BATCH).length;
    more = expiredCheckpoints === SWEEP_BATCH || expiredLeases === SWEEP_BATCH || expiredSnapshots === SWEEP_BATCH;
  });
  if (more) return clock.nowMs();
  const next = db.first<{ at: string | null }>(
    `SELECT min(at) AS at FROM (
       SELECT min(expires_at) AS at FROM checkpoints
       UNION ALL SELECT min(expires_at) AS at FROM leases WHERE released_at IS NULL
       UNION ALL SELECT min(expires_at) AS at FROM search_snapshots)`);
  return next?.at ? Date.parse(next.at) : null;
}
