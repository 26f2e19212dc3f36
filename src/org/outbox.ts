// Carrying committed outbox rows to the ownership registry (src/registry), in bounded batches: right
// after the write that queued them (OrgStore.dispatch, before the reply) and from the alarm as the retry.
// Rows are deleted only after the registry accepted them, so a failed drain is simply retried next time.
import { clock } from "../http/clock";
import type { OwnershipRegistry } from "../registry/client";
import type { Db } from "../sql/db";
import { unregisteredOf } from "./reserved-ids";

export const OUTBOX_BATCH = 200;

/** What a write did to memory records, by id, as the record writers (src/domains/memory/records.ts) report it. */
export interface Touched {
  /** Projects, observations and claims created. */
  created: string[];
  /** Existing records changed (a claim's state, an observation's tombstone). */
  changed: string[];
}

/** Several writers' reports as one. */
export const touchedAll = (...list: Touched[]): Touched => ({
  created: list.flatMap((t) => t.created),
  changed: list.flatMap((t) => t.changed),
});

/**
 * Outbox topics and the touched ids each carries, one outbox row per (topic, id). A new consumer (the
 * vector index: `index: (t) => [...t.created, ...t.changed]`) is one line here plus its drain.
 */
export const OUTBOX_TOPICS: Record<string, (t: Touched) => string[]> = {
  /** The ownership registry (src/registry, 256 Durable Object shards): which organization owns an id. */
  record_owner: (t) => t.created,
  /** The vector index (src/domains/indexing): created and changed records, drained by POST /v1/index/drain. */
  index: (t) => [...t.created, ...t.changed].filter((id) => id.startsWith("obs_") || id.startsWith("claim_")),
};

/**
 * Queue the outbox rows of a write (inside its transaction). Created ids taken from the reserve (the
 * write's `takenFromReserve`) were registered before they were handed out and get no record_owner row.
 * Returns how many rows were queued, how many of them for the vector index, and the ids queued for the
 * ownership registry.
 */
export function queueTouched(
  db: Db,
  touched: Touched,
  at: string,
  takenFromReserve: ReadonlySet<string>,
): { rows: number; indexRows: number; ownerIds: string[] } {
  let rows = 0;
  let indexRows = 0;
  let ownerIds: string[] = [];
  for (const [topic, idsOf] of Object.entries(OUTBOX_TOPICS)) {
    let ids = [...new Set(idsOf(touched))];
    if (topic === "record_owner") ids = ownerIds = unregisteredOf(ids, takenFromReserve);
    for (const id of ids) {
      db.run("INSERT INTO outbox (topic, payload, created_at) VALUES (?, ?, ?)", topic, id, at);
      rows++;
      if (topic === "index") indexRows++;
    }
  }
  return { rows, indexRows, ownerIds };
}

/**
 * Register exactly these ids (those of the writes in one RegistrationBatcher batch, right after their
 * commits) and delete their outbox rows: one RPC per shard touched. Only ids still in the outbox are
 * sent (a rolled-back write left none, and the alarm may already have carried them), so no write's rows
 * are sent twice by the writes themselves.
 */
export async function registerQueuedOwners(
  db: Db,
  registry: OwnershipRegistry,
  orgId: string,
  ids: string[],
): Promise<void> {
  const rows = db.all<{ seq: number; payload: string }>(
    "SELECT seq, payload FROM outbox WHERE topic = 'record_owner' AND payload IN (SELECT value FROM json_each(?))",
    JSON.stringify(ids),
  );
  await carryOwnerRows(db, registry, orgId, rows);
}

/**
 * Register queued record_owner rows with the registry (one RPC per shard), then delete them. Rows are
 * deleted only after the registry accepted them, so a failure leaves them for the next try.
 */
async function carryOwnerRows(
  db: Db,
  registry: OwnershipRegistry,
  orgId: string,
  rows: { seq: number; payload: string }[],
): Promise<void> {
  if (!rows.length) return;
  const { conflicts } = await registry.register(
    orgId,
    rows.map((r) => r.payload),
    clock.nowIso(),
  );
  // Only possible when a write's registration failed and another organization imported the id in
  // that window (docs/security.md, "Decisions and what is deliberately left"): the registry keeps the first owner; say so loudly.
  if (conflicts.length)
    console.error("record ids already owned by another organization", orgId, conflicts.slice(0, 10));
  db.run(
    "DELETE FROM outbox WHERE topic = 'record_owner' AND seq IN (SELECT value FROM json_each(?))",
    JSON.stringify(rows.map((r) => r.seq)),
  );
}

/**
 * Group commit for registrations: ids handed in while a batch is with the registry wait and go together
 * in the next batch, so concurrent writes share one RPC per shard (and one outbox delete) instead of
 * one each. Each caller's promise settles when the batch carrying its ids is done, whether it succeeded
 * or not (a failed registration is left to the alarm's retry; `onError` hears of it), and a failed batch
 * never holds up the next.
 */
export class RegistrationBatcher {
  private waiting: string[] = [];
  private nextBatch: Promise<void> | null = null;
  private inFlight: Promise<void> = Promise.resolve();

  constructor(
    private readonly flush: (ids: string[]) => Promise<void>,
    private readonly onError: (err: unknown) => void,
  ) {}

  register(ids: string[]): Promise<void> {
    this.waiting.push(...ids);
    this.nextBatch ??= this.inFlight.then(() => {
      const batch = this.waiting;
      this.waiting = [];
      this.nextBatch = null;
      this.inFlight = this.flush(batch).catch(this.onError);
      return this.inFlight;
    });
    return this.nextBatch;
  }

  /** Settles when every registration handed in so far is done (succeeded or left to the retry). */
  settled(): Promise<void> {
    return this.nextBatch ?? this.inFlight;
  }
}

/**
 * Register one batch of created ids with the registry (one RPC per shard). Returns true when more rows
 * remain. Safe to run concurrently with itself: registration is idempotent for the owner.
 */
export async function drainRecordOwners(db: Db, registry: OwnershipRegistry, orgId: string): Promise<boolean> {
  const rows = db.all<{ seq: number; payload: string }>(
    "SELECT seq, payload FROM outbox WHERE topic = 'record_owner' ORDER BY seq LIMIT ?",
    OUTBOX_BATCH + 1,
  );
  await carryOwnerRows(db, registry, orgId, rows.slice(0, OUTBOX_BATCH));
  return rows.length > OUTBOX_BATCH;
}
