// SQL of the federation domain: peers, filters, the exchange log, push replay records, the inbox of
// pushed events and the map of records imported from each peer.
import { clock } from "../../http/clock";
import { notFound } from "../../http/errors";
import { ID_PREFIX, newId } from "../../http/ids";
import type { Db } from "../../sql/db";
import { unresolved } from "../memory/store";
import type { FilterRow } from "./filters";
import type { Direction, FilterInput } from "./schema";

export interface PeerRow {
  peer_id: string;
  endpoint: string;
  shared_secret: string;
  direction: Direction;
  status: "active" | "suspended";
  label: string | null;
  cursor: string | null;
  scan_seq: number;
  remote_org_id: string | null;
  created_by: string;
  created_at: string;
  suspended_at: string | null;
  last_exchange_at: string | null;
}

export interface LogCounts {
  events: number;
  success: number;
  conflict: number;
  rejected: number;
  bundles: number;
}

/** Never the secret, never the internal scan position. */
export const peerView = (p: PeerRow) => ({
  peer_id: p.peer_id,
  endpoint: p.endpoint,
  direction: p.direction,
  status: p.status,
  cursor: p.cursor,
  remote_org_id: p.remote_org_id,
  label: p.label,
  created_at: p.created_at,
  suspended_at: p.suspended_at,
  last_exchange_at: p.last_exchange_at,
});

export const getPeer = (db: Db, peerId: string) =>
  db.first<PeerRow>("SELECT * FROM federation_peers WHERE peer_id = ?", peerId);

/** A path id: 404 like any missing record. */
export function requirePeer(db: Db, peerId: string): PeerRow {
  const peer = getPeer(db, peerId);
  if (!peer) throw notFound("Peer");
  return peer;
}

/** A body reference: 400 UNRESOLVED_REFERENCE like any missing record. */
export function resolvePeer(db: Db, peerId: string): PeerRow {
  const peer = getPeer(db, peerId);
  if (!peer) throw unresolved("peer", [peerId]);
  return peer;
}

export const countPeers = (db: Db) => db.first<{ n: number }>("SELECT count(*) AS n FROM federation_peers")!.n;
export const peerByEndpoint = (db: Db, endpoint: string) =>
  db.first<PeerRow>("SELECT * FROM federation_peers WHERE endpoint = ?", endpoint);
export const listPeers = (db: Db) => db.all<PeerRow>("SELECT * FROM federation_peers ORDER BY created_at, peer_id");

export function insertPeer(
  db: Db,
  p: Omit<PeerRow, "cursor" | "scan_seq" | "remote_org_id" | "suspended_at" | "last_exchange_at" | "status">,
): PeerRow {
  db.run(
    `INSERT INTO federation_peers (peer_id, endpoint, shared_secret, direction, status, label, created_by, created_at)
     VALUES (?, ?, ?, ?, 'active', ?, ?, ?)`,
    p.peer_id,
    p.endpoint,
    p.shared_secret,
    p.direction,
    p.label,
    p.created_by,
    p.created_at,
  );
  return getPeer(db, p.peer_id)!;
}

export function suspendPeer(db: Db, peerId: string, at: string): void {
  db.run(
    "UPDATE federation_peers SET status = 'suspended', suspended_at = ? WHERE peer_id = ? AND status = 'active'",
    at,
    peerId,
  );
}

export const pinRemoteOrg = (db: Db, peerId: string, orgId: string) =>
  db.run("UPDATE federation_peers SET remote_org_id = ? WHERE peer_id = ? AND remote_org_id IS NULL", orgId, peerId);

export const filtersOf = (db: Db, peerId: string) =>
  db.all<FilterRow>("SELECT * FROM federation_filters WHERE peer_id = ? ORDER BY created_at, filter_id", peerId);

export function insertFilter(db: Db, peerId: string, f: FilterInput, createdBy: string): FilterRow {
  const row: FilterRow = {
    filter_id: newId(ID_PREFIX.filter),
    peer_id: peerId,
    resource_type: f.resource_type,
    include_kinds: f.include_kinds ? JSON.stringify([...new Set(f.include_kinds)]) : null,
    exclude_subjects: f.exclude_subjects ? JSON.stringify([...new Set(f.exclude_subjects)]) : null,
    min_trust: f.min_trust ?? null,
    created_by: createdBy,
    created_at: clock.nowIso(),
  };
  db.run(
    `INSERT INTO federation_filters (filter_id, peer_id, resource_type, include_kinds, exclude_subjects, min_trust, created_by, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    row.filter_id,
    row.peer_id,
    row.resource_type,
    row.include_kinds,
    row.exclude_subjects,
    row.min_trust,
    row.created_by,
    row.created_at,
  );
  return row;
}

/** Pull: the reported cursor (last event served) and the internal scan position move together. */
export function advancePeer(db: Db, peerId: string, cursor: string | null, scanSeq: number, at: string): void {
  db.run(
    "UPDATE federation_peers SET cursor = ?, scan_seq = ?, last_exchange_at = ? WHERE peer_id = ?",
    cursor,
    scanSeq,
    at,
    peerId,
  );
}

export const touchPeer = (db: Db, peerId: string, at: string) =>
  db.run("UPDATE federation_peers SET last_exchange_at = ? WHERE peer_id = ?", at, peerId);

export function insertLog(
  db: Db,
  entry: {
    peerId: string;
    operation: "pull" | "push";
    counts: LogCounts;
    cursorBefore: string | null;
    cursorAfter: string | null;
    requestId: string;
    at: string;
    signed: boolean;
  },
): string {
  const logId = newId(ID_PREFIX.federationLog);
  db.run(
    `INSERT INTO federation_log (log_id, peer_id, operation, counts, cursor_before, cursor_after, request_id, created_at, signed)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    logId,
    entry.peerId,
    entry.operation,
    JSON.stringify(entry.counts),
    entry.cursorBefore,
    entry.cursorAfter,
    entry.requestId,
    entry.at,
    +entry.signed,
  );
  return logId;
}

export interface LogRow {
  seq: number;
  log_id: string;
  peer_id: string;
  operation: string;
  counts: string;
  cursor_before: string | null;
  cursor_after: string | null;
  request_id: string;
  created_at: string;
  /** 1 signed by the peer, 0 an owner's or admin's unsigned pull, NULL logged before this was kept. */
  signed: number | null;
}

export const logPage = (db: Db, peerId: string, afterSeq: number, limit: number) =>
  db.all<LogRow>(
    "SELECT * FROM federation_log WHERE peer_id = ? AND seq > ? ORDER BY seq LIMIT ?",
    peerId,
    afterSeq,
    limit + 1,
  );

export const logView = (l: LogRow) => ({
  log_id: l.log_id,
  peer_id: l.peer_id,
  operation: l.operation,
  counts: JSON.parse(l.counts) as LogCounts,
  cursor_before: l.cursor_before,
  cursor_after: l.cursor_after,
  request_id: l.request_id,
  created_at: l.created_at,
  signed: l.signed === null ? null : l.signed === 1,
});

export const getExchange = (db: Db, peerId: string, exchangeId: string) =>
  db.first<{ body_hash: string; response: string }>(
    "SELECT body_hash, response FROM federation_exchanges WHERE peer_id = ? AND exchange_id = ?",
    peerId,
    exchangeId,
  );

export const insertExchange = (
  db: Db,
  peerId: string,
  exchangeId: string,
  bodyHash: string,
  response: unknown,
  at: string,
) =>
  db.run(
    "INSERT INTO federation_exchanges (peer_id, exchange_id, body_hash, response, created_at) VALUES (?, ?, ?, ?, ?)",
    peerId,
    exchangeId,
    bodyHash,
    JSON.stringify(response),
    at,
  );

export const inboxHash = (db: Db, peerId: string, remoteEventId: string) =>
  db.first<{ body_hash: string }>(
    "SELECT body_hash FROM federation_inbox WHERE peer_id = ? AND remote_event_id = ?",
    peerId,
    remoteEventId,
  )?.body_hash ?? null;

export function insertInbox(
  db: Db,
  peerId: string,
  e: { id: string; kind: string; resource_type: string; resource_id: string; payload: unknown; created_at: string },
  bodyHash: string,
  at: string,
): void {
  db.run(
    `INSERT INTO federation_inbox (peer_id, remote_event_id, body_hash, kind, resource_type, resource_id, payload, remote_created_at, received_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    peerId,
    e.id,
    bodyHash,
    e.kind,
    e.resource_type,
    e.resource_id,
    JSON.stringify(e.payload),
    e.created_at,
    at,
  );
}

/** The local id a record from this peer was imported as, or null. */
export const importedAs = (db: Db, peerId: string, remoteId: string) =>
  db.first<{ local_id: string }>(
    "SELECT local_id FROM federation_imports WHERE peer_id = ? AND remote_id = ?",
    peerId,
    remoteId,
  )?.local_id ?? null;

export const recordImport = (
  db: Db,
  peerId: string,
  remoteId: string,
  recordType: "observation" | "claim",
  localId: string,
  at: string,
) =>
  db.run(
    "INSERT INTO federation_imports (peer_id, remote_id, record_type, local_id, created_at) VALUES (?, ?, ?, ?, ?)",
    peerId,
    remoteId,
    recordType,
    localId,
    at,
  );
