// Carrying committed outbox rows to the global D1 index, in bounded batches, from the alarm.
// Rows are deleted only after D1 accepted them, so a failed drain is simply retried next time.
import { clock } from "../http/clock";
import type { Db } from "./db";

export const OUTBOX_BATCH = 200;

/** Queue created record ids for the ownership index (inside the write's transaction). */
export function queueRecordOwners(db: Db, ids: string[], at: string): void {
  for (const id of ids) db.run("INSERT INTO outbox (topic, payload, created_at) VALUES ('record_owner', ?, ?)", id, at);
}

/** Returns true when more rows remain. */
export async function drainRecordOwners(db: Db, indexDb: D1Database, orgId: string): Promise<boolean> {
  const rows = db.all<{ seq: number; payload: string }>(
    "SELECT seq, payload FROM outbox WHERE topic = 'record_owner' ORDER BY seq LIMIT ?", OUTBOX_BATCH + 1);
  const batch = rows.slice(0, OUTBOX_BATCH);
  if (!batch.length) return false;
  const at = clock.nowIso();
  await indexDb.batch(batch.map((r) =>
    indexDb.prepare("INSERT OR IGNORE INTO record_owners (record_id, org_id, created_at) VALUES (?, ?, ?)").bind(r.payload, orgId, at)));
  db.run("DELETE FROM outbox WHERE topic = 'record_owner' AND seq <= ?", batch[batch.length - 1].seq);
  return rows.length > OUTBOX_BATCH;
}
