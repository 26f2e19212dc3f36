// The org alarm's work: sweep expired checkpoints and leases in bounded batches, then report when
// the alarm should fire next (the earliest remaining expiry), or null when nothing is pending.
// Reads never depend on this having run: every read checks expiry itself.
import { clock } from "../http/clock";
import type { Db } from "./db";

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
    more = expiredCheckpoints === SWEEP_BATCH || expiredLeases === SWEEP_BATCH;
  });
  if (more) return clock.nowMs();
  const next = db.first<{ at: string | null }>(
    `SELECT min(at) AS at FROM (
       SELECT min(expires_at) AS at FROM checkpoints
       UNION ALL SELECT min(expires_at) AS at FROM leases WHERE released_at IS NULL)`);
  return next?.at ? Date.parse(next.at) : null;
}
