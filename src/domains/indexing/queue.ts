// The index queue: outbox rows of topic "index", one record id each. Every write queues them in its own
// transaction (src/org/outbox.ts: created and changed observations and claims); verify queues repairs
// here. Drain takes them in order and deletes exactly the rows it handled.
import type { Db } from "../../sql/db";

export const INDEX_TOPIC = "index";

export function queueIndex(db: Db, ids: string[], at: string): void {
  for (const id of ids) db.run("INSERT INTO outbox (topic, payload, created_at) VALUES (?, ?, ?)", INDEX_TOPIC, id, at);
}

export const peekIndexQueue = (db: Db, limit: number) =>
  db.all<{ seq: number; payload: string }>(
    "SELECT seq, payload FROM outbox WHERE topic = ? ORDER BY seq LIMIT ?",
    INDEX_TOPIC,
    limit,
  );

export const indexQueueSize = (db: Db): number =>
  db.first<{ n: number }>("SELECT count(*) AS n FROM outbox WHERE topic = ?", INDEX_TOPIC)?.n ?? 0;

/** Whether a record id is waiting in the queue (verify counts it as pending, not missing). */
export function queuedAmong(db: Db, ids: string[]): Set<string> {
  if (!ids.length) return new Set();
  return new Set(
    db
      .all<{ payload: string }>(
        "SELECT DISTINCT payload FROM outbox WHERE topic = ? AND payload IN (SELECT value FROM json_each(?))",
        INDEX_TOPIC,
        JSON.stringify(ids),
      )
      .map((r) => r.payload),
  );
}

export function ackIndexQueue(db: Db, seqs: number[]): void {
  if (seqs.length)
    db.run(
      "DELETE FROM outbox WHERE topic = ? AND seq IN (SELECT value FROM json_each(?))",
      INDEX_TOPIC,
      JSON.stringify(seqs),
    );
}
