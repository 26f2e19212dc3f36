import { readableWhere } from "../access/policy";
import { sharedWhere } from "../access/retrieval";
import { type Db, fromClause, list, sql } from "../sql/db";
import type { Caller } from "./request";

// A row of the events table: written by commitWrite (src/org/write.ts), read by GET /v1/events and
// by webhook delivery.
export interface EventRow {
  seq: number;
  event_id: string;
  kind: string;
  actor_id: string;
  resource_type: string;
  resource_id: string;
  /** JSON, metadata only; delivered to webhooks exactly as stored. */
  payload: string;
  visibility: string;
  /** The workspace of the record it describes, or null (see EventInput.workspaceId). */
  workspace_id: string | null;
  created_at: string;
}

/**
 * The one rule for which events a caller may read — GET /v1/events, its `after` cursor, GET
 * /v1/events/:id, webhook delivery (as the hook's creator) and a hook's delivery list all read
 * through it: SQL over an `events` row aliased `alias`. Events carry no subject or project (only
 * an organization-wide grant widens them); a workspace record's team events go to the workspace's
 * members and organization owners/admins, like its team records.
 */
export const readableEventsWhere = (caller: Caller, alias = "e") =>
  readableWhere(caller, alias, "actor_id", { targets: false });
const readableByCaller = (caller: Caller) => fromClause(readableEventsWhere(caller));

/** One event the caller may read, or null (an unreadable event is as unknown as a random id). */
export function readableEvent(db: Db, caller: Caller, eventId: string): EventRow | null {
  return db.first<EventRow>(sql`SELECT * FROM events e WHERE e.event_id = ${eventId} AND ${readableByCaller(caller)}`);
}

/** The events in (afterSeq, upToSeq] the caller may read, in commit order, optionally of one kind. */
export function readableEventsAfter(
  db: Db,
  caller: Caller,
  afterSeq: number,
  opts: { kind?: string; upToSeq?: number; limit: number },
): EventRow[] {
  const upTo = opts.upToSeq !== undefined ? sql`AND e.seq <= ${opts.upToSeq}` : sql``;
  return db.all<EventRow>(sql`SELECT * FROM events e WHERE e.seq > ${afterSeq} ${upTo} ${kindIs(opts.kind)}
    AND ${readableByCaller(caller)} ORDER BY e.seq LIMIT ${opts.limit}`);
}

/** The events before `beforeSeq` (from the newest when null) the caller may read, newest first, optionally of one kind. */
export function readableEventsBefore(
  db: Db,
  caller: Caller,
  beforeSeq: number | null,
  opts: { kind?: string; limit: number },
): EventRow[] {
  return db.all<EventRow>(sql`SELECT * FROM events e WHERE e.seq < ${beforeSeq ?? Number.MAX_SAFE_INTEGER}
    ${kindIs(opts.kind)} AND ${readableByCaller(caller)} ORDER BY e.seq DESC LIMIT ${opts.limit}`);
}

const kindIs = (kind: string | undefined) => (kind ? sql`AND e.kind = ${kind}` : sql``);

/** Of these event ids, those the caller may read. */
export function readableAmong(db: Db, caller: Caller, eventIds: readonly string[]): Set<string> {
  const rows = db.all<{ event_id: string }>(
    sql`SELECT e.event_id FROM events e WHERE e.event_id IN ${list(eventIds)} AND ${readableByCaller(caller)}`,
  );
  return new Set(rows.map((r) => r.event_id));
}

/** The newest event's position in the log (0: none yet). */
export const lastEventSeq = (db: Db) =>
  db.first<{ seq: number }>(sql`SELECT coalesce(max(seq), 0) AS seq FROM events`)!.seq;

/** One event by id, whoever may read it: for work already decided on it (a claimed delivery). */
export const eventById = (db: Db, eventId: string) =>
  db.first<EventRow>(sql`SELECT * FROM events WHERE event_id = ${eventId}`);

/**
 * Shared events (src/access/retrieval.ts sharedWhere: team, of no workspace) of the given kinds after a
 * position in the log, in commit order (federation reads through this: nothing private, and nothing of
 * a workspace, whose events only its members read, ever leaves the organization: a peer is in no workspace).
 */
export const teamEventsAfter = (db: Db, afterSeq: number, kinds: readonly string[], limit: number) =>
  db.all<EventRow>(sql`SELECT * FROM events e WHERE e.seq > ${afterSeq} AND e.kind IN ${list(kinds)}
    AND ${fromClause([sharedWhere("e", { retention: false })])} ORDER BY e.seq LIMIT ${limit}`);
