// Carrying committed outbox rows to the global D1 index, in bounded batches, from the alarm.
// Rows are deleted only after D1 accepted them, so a failed drain is simply retried next time.
import { clock } from "../http/clock";
import type { Db } from "./db";

export const OUTBOX_BATCH = 200;

/** What a write did to memory records, by id, as the record writers (src/domains/memory/records.ts) report it. */
export interface Touched {
  /** Projects, observations and claims created. */
  created: string[];
  /** Existing records changed (a claim's state, an observation's tombstone). */
  changed: string[];
}

/** Several writers' reports as one. */
export const touchedAll = (...list: Touched[]): Touched =>
  ({ created: list.flatMap((t) => t.created), changed: list.flatMap((t) => t.changed) });

/**
 * Outbox topics and the touched ids each carries, one outbox row per (topic, id). A new consumer (the
 * vector index: `index: (t) => [...t.created, ...t.changed]`) is one line here plus its drain.
 */
export const OUTBOX_TOPICS: Record<string, (t: Touched) => string[]> = {
  /** The global ownership index (D1 record_owners): which organization owns an id. */
  record_owner: (t) => t.created,
  /** The vector index (src/domains/indexing): created and changed records, drained by POST /v1/index/drain. */
  index: (t) => [...t.created, ...t.changed].filter((id) => id.startsWith("obs_") || id.startsWith("claim_")),
};

/** Queue the outbox rows of a write (inside its transaction). Returns how many rows were queued. */
export function queueTouched(db: Db, touched: Touched, at: string): number {
  let queued = 0;
  for (const [topic, idsOf] of Object.entries(OUTBOX_TOPICS))
    for (const id of new Set(idsOf(touched))) {
      db.run("INSERT INTO outbox (topic, payload, created_at) VALUES (?, ?, ?)", topic, id, at);
      queued++;
    }
  return queued;
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
