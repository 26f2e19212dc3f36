// The expiry sweep, a named background job (src/jobs.ts): ends expired leases and deletes expired
// checkpoints in bounded batches. Reads never depend on it having run (they compare expires_at).
import { clock } from "../../http/clock";
import type { BackgroundJob } from "../../org/jobs";

export const SWEEP_BATCH = 500;

export const expirySweepJob: BackgroundJob = {
  name: "expiry_sweep",
  run({ db, storage }) {
    const now = clock.nowIso();
    let more = false;
    storage.transactionSync(() => {
      const expiredCheckpoints = db.all(
        `DELETE FROM checkpoints WHERE checkpoint_id IN
           (SELECT checkpoint_id FROM checkpoints WHERE expires_at <= ? ORDER BY expires_at LIMIT ?) RETURNING 1`,
        now,
        SWEEP_BATCH,
      ).length;
      const expiredLeases = db.all(
        `UPDATE leases SET released_at = expires_at WHERE lease_id IN
           (SELECT lease_id FROM leases WHERE released_at IS NULL AND expires_at <= ? ORDER BY expires_at LIMIT ?) RETURNING 1`,
        now,
        SWEEP_BATCH,
      ).length;
      more = expiredCheckpoints === SWEEP_BATCH || expiredLeases === SWEEP_BATCH;
    });
    if (more) return clock.nowMs();
    const next = db.first<{ at: string | null }>(
      `SELECT min(at) AS at FROM (
         SELECT min(expires_at) AS at FROM checkpoints
         UNION ALL SELECT min(expires_at) AS at FROM leases WHERE released_at IS NULL)`,
    );
    return next?.at ? Date.parse(next.at) : null;
  },
  retryMs: () => 60_000,
};
