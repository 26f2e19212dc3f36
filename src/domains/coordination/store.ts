// The SQL of leases, checkpoints and handoffs (the expiry sweep's is in ./expiry.ts, beside its job).
import type { Caller } from "../../access/caller";
import { heldOrDelegated } from "../../access/retrieval";
import { clock } from "../../http/clock";
import { fromClause, type Db, sql } from "../../sql/db";

// Leases -----------------------------------------------------------------------------------------

export interface LeaseRow {
  lease_id: string;
  resource_type: string;
  resource_id: string;
  holder_id: string;
  ttl_seconds: number;
  acquired_at: string;
  expires_at: string;
  released_at: string | null;
}

export const getLease = (db: Db, id: string) => db.first<LeaseRow>(sql`SELECT * FROM leases WHERE lease_id = ${id}`);

/** The resource's unreleased lease, live or past its expiry (at most one: a partial unique index). */
export const unreleasedLease = (db: Db, resourceType: string, resourceId: string) =>
  db.first<LeaseRow>(
    sql`SELECT * FROM leases WHERE resource_type = ${resourceType} AND resource_id = ${resourceId} AND released_at IS NULL`,
  );

export const insertLease = (db: Db, l: LeaseRow) =>
  db.run(sql`INSERT INTO leases (lease_id, resource_type, resource_id, holder_id, ttl_seconds, acquired_at, expires_at)
    VALUES (${l.lease_id}, ${l.resource_type}, ${l.resource_id}, ${l.holder_id}, ${l.ttl_seconds}, ${l.acquired_at}, ${l.expires_at})`);

export const renewLease = (db: Db, leaseId: string, expiresAt: string, ttlSeconds: number) =>
  db.run(sql`UPDATE leases SET expires_at = ${expiresAt}, ttl_seconds = ${ttlSeconds} WHERE lease_id = ${leaseId}`);

/** An expired lease the sweep has not reached yet ends at its expiry. */
export const endLeaseAtExpiry = (db: Db, leaseId: string) =>
  db.run(sql`UPDATE leases SET released_at = expires_at WHERE lease_id = ${leaseId}`);

export const releaseLease = (db: Db, leaseId: string, at: string) =>
  db.run(sql`UPDATE leases SET released_at = ${at} WHERE lease_id = ${leaseId}`);

/** A lease's place in the list order (a cursor names the page's last lease, released since or not). */
export const leasePosition = (db: Db, leaseId: string) =>
  db.first<{ r: number }>(sql`SELECT rowid AS r FROM leases WHERE lease_id = ${leaseId}`)?.r;

/** Unreleased, unexpired leases after a list position, optionally of one resource type. */
export const liveLeasesAfter = (db: Db, f: { now: string; after: number; resourceType?: string; limit: number }) =>
  db.all<LeaseRow>(sql`SELECT * FROM leases WHERE released_at IS NULL AND expires_at > ${f.now} AND rowid > ${f.after}
    ${f.resourceType !== undefined ? sql`AND resource_type = ${f.resourceType}` : sql``} ORDER BY rowid LIMIT ${f.limit}`);

// Checkpoints ------------------------------------------------------------------------------------

export interface CheckpointRow {
  checkpoint_id: string;
  subject_id: string;
  agent_id: string;
  kind: string;
  state: string;
  ttl_seconds: number;
  writer_id: string;
  created_at: string;
  updated_at: string;
  expires_at: string;
}

/** The caller may read it: the writer, or the recipient of a live handoff from the writer naming it. */
const readable = (caller: Caller) =>
  fromClause(heldOrDelegated(caller, "c", { id: "checkpoint_id", writer: "writer_id" }));

/** One unexpired checkpoint the caller may read. */
export const readableCheckpoint = (db: Db, caller: Caller, id: string, now = clock.nowIso()): CheckpointRow | null =>
  db.first<CheckpointRow>(
    sql`SELECT * FROM checkpoints c WHERE ${readable(caller)} AND c.checkpoint_id = ${id} AND c.expires_at > ${now}`,
  );

/** Latest unexpired checkpoint for subject + kind (+ agent) that the caller may read. */
export const latestCheckpoint = (
  db: Db,
  caller: Caller,
  q: { subject_id: string; kind: string; agent_id?: string },
  now = clock.nowIso(),
) =>
  db.first<CheckpointRow>(sql`SELECT * FROM checkpoints c
    WHERE ${readable(caller)} AND c.subject_id = ${q.subject_id} AND c.kind = ${q.kind} AND c.expires_at > ${now}
      ${q.agent_id !== undefined ? sql`AND c.agent_id = ${q.agent_id}` : sql``} ORDER BY c.updated_at DESC LIMIT 1`);

/** The checkpoint of organization + subject + agent + kind, expired or not (the upsert's key). */
export const checkpointAt = (db: Db, k: { subject_id: string; agent_id: string; kind: string }) =>
  db.first<CheckpointRow>(
    sql`SELECT * FROM checkpoints WHERE subject_id = ${k.subject_id} AND agent_id = ${k.agent_id} AND kind = ${k.kind}`,
  );

export const insertCheckpoint = (db: Db, c: CheckpointRow) =>
  db.run(sql`INSERT INTO checkpoints (checkpoint_id, subject_id, agent_id, kind, state, ttl_seconds, writer_id, created_at, updated_at, expires_at)
    VALUES (${c.checkpoint_id}, ${c.subject_id}, ${c.agent_id}, ${c.kind}, ${c.state}, ${c.ttl_seconds}, ${c.writer_id},
      ${c.created_at}, ${c.updated_at}, ${c.expires_at})`);

export const updateCheckpoint = (
  db: Db,
  checkpointId: string,
  c: { state: string; ttl_seconds: number; updated_at: string; expires_at: string },
) =>
  db.run(sql`UPDATE checkpoints SET state = ${c.state}, ttl_seconds = ${c.ttl_seconds}, updated_at = ${c.updated_at}, expires_at = ${c.expires_at}
    WHERE checkpoint_id = ${checkpointId}`);

export const deleteCheckpoint = (db: Db, checkpointId: string) =>
  db.run(sql`DELETE FROM checkpoints WHERE checkpoint_id = ${checkpointId}`);

// Handoffs ---------------------------------------------------------------------------------------

export interface HandoffRow {
  handoff_id: string;
  from_principal_id: string;
  to_principal_id: string;
  context_id: string | null;
  checkpoint_id: string | null;
  note: string | null;
  status: string;
  created_at: string;
  resolved_at: string | null;
}

export const getHandoff = (db: Db, id: string) =>
  db.first<HandoffRow>(sql`SELECT * FROM handoffs WHERE handoff_id = ${id}`);

/** A new handoff, pending. */
export const insertHandoff = (db: Db, h: HandoffRow) =>
  db.run(sql`INSERT INTO handoffs (handoff_id, from_principal_id, to_principal_id, context_id, checkpoint_id, note, status, created_at)
    VALUES (${h.handoff_id}, ${h.from_principal_id}, ${h.to_principal_id}, ${h.context_id}, ${h.checkpoint_id}, ${h.note}, 'pending', ${h.created_at})`);

export const resolveHandoff = (db: Db, handoffId: string, status: string, at: string) =>
  db.run(sql`UPDATE handoffs SET status = ${status}, resolved_at = ${at} WHERE handoff_id = ${handoffId}`);

/** A handoff's place in the list order, among those addressed to the recipient (resolved or not). */
export const handoffPosition = (db: Db, handoffId: string, recipientId: string) =>
  db.first<{ r: number }>(
    sql`SELECT rowid AS r FROM handoffs WHERE handoff_id = ${handoffId} AND to_principal_id = ${recipientId}`,
  )?.r;

/** Pending handoffs addressed to the recipient after a list position, oldest first. */
export const pendingHandoffsAfter = (db: Db, recipientId: string, after: number, limit: number) =>
  db.all<HandoffRow>(sql`SELECT * FROM handoffs WHERE to_principal_id = ${recipientId} AND status = 'pending' AND rowid > ${after}
    ORDER BY rowid LIMIT ${limit}`);
