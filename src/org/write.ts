// The one write path. Every mutating route commits through `commitWrite`: its canonical rows, the
// domain events, the audit entry and the idempotency replay record land in ONE transactionSync, so a
// failure anywhere leaves nothing behind and an event never exists for a rolled-back write.
import { sha256Hex } from "../auth/credentials";
import { clock } from "../http/clock";
import { type ApiError, conflict } from "../http/errors";
import { ID_PREFIX, newId } from "../http/ids";
import type { Db } from "../sql/db";
import { recordOwnersJob } from "./maintenance";
import { type Touched, queueTouched } from "./outbox";
import type { Reply, RequestCtx } from "./request";

/** The eleven event kinds of SPEC "Events"; nothing else is ever emitted. */
export const EVENT_KINDS = [
  "observation.appended",
  "claim.materialized",
  "claim.superseded",
  "claim.revoked",
  "claim.expired",
  "lease.acquired",
  "handoff.created",
  "handoff.accepted",
  "handoff.rejected",
  "release.published",
  "release.revoked",
] as const;
export type EventKind = (typeof EVENT_KINDS)[number];

export interface EventInput {
  kind: EventKind;
  resourceType: string;
  resourceId: string;
  /** Metadata only: never content. */
  payload: Record<string, unknown>;
  /** Visibility of the record it describes ("team" when not applicable). */
  visibility?: string;
  /**
   * Workspace of the record it describes (absent or null: none). Its team events are then read like
   * the workspace's team records (src/access/policy.ts), never by the rest of the organization.
   */
  workspaceId?: string | null;
}

export interface AuditInput {
  action: string;
  resourceType: string;
  resourceId?: string | null;
  /** Metadata only. */
  detail?: Record<string, unknown>;
}

export interface WriteOutcome {
  status: number;
  data: unknown;
  meta?: Record<string, unknown>;
  events?: EventInput[];
  audit: AuditInput | AuditInput[];
  /** Memory records this write created or changed, as the record writers reported them: turned into outbox rows per topic. */
  touched?: Touched;
}

/**
 * A write that refuses the request yet must leave its trace (a consumed WebAuthn challenge, a failed
 * second factor): what the work wrote and the audit entry commit, then commitWrite throws `refused`.
 * Nothing is recorded for idempotency: a refusal is not replayed.
 */
export interface RefusedWrite {
  refused: ApiError;
  audit: AuditInput | AuditInput[];
}

/**
 * What commitWrite hands a write's work beside the database: notes of this one write, made fresh when
 * its transaction starts and gone with it (committed or rolled back), so no write sees another's.
 */
export interface WriteScope {
  /**
   * Record ids this write took from the reserve (newRecordId, src/org/reserved-ids.ts): registered
   * already, so its end queues none of them for the ownership registry.
   */
  readonly takenFromReserve: Set<string>;
}

/** How soon after a write the alarm carries its outbox rows to the global index (batches writes). */
export const OUTBOX_DELAY_MS = 1_000;

/** Trimmed to 200 characters per SPEC; empty means absent. */
export function normalizeIdempotencyKey(raw: string | null): string | null {
  if (raw == null) return null;
  const key = raw.trim().slice(0, 200);
  return key.length ? key : null;
}

/** JSON with object keys sorted: the form hashed for the audit chain and idempotency. */
export const canonical = (value: unknown): string =>
  JSON.stringify(value, (_k, v) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );

export function insertEvent(db: Db, actorId: string, e: EventInput, at: string): string {
  const eventId = newId(ID_PREFIX.event);
  db.run(
    `INSERT INTO events (event_id, kind, actor_id, resource_type, resource_id, payload, visibility, workspace_id, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    eventId,
    e.kind,
    actorId,
    e.resourceType,
    e.resourceId,
    JSON.stringify(e.payload),
    e.visibility ?? "team",
    e.workspaceId ?? null,
    at,
  );
  return eventId;
}

/** The audit chain: each entry's hash covers the previous entry's hash and its own fields. */
export const AUDIT_GENESIS_HASH = "0".repeat(64);
export type AuditHashFields = [
  id: string,
  action: string,
  actorId: string,
  keyId: string | null,
  resourceType: string,
  resourceId: string | null,
  requestId: string | null,
  detailJson: string,
  createdAt: string,
];
export const auditEntryHash = (prevHash: string, fields: AuditHashFields): string =>
  sha256Hex(prevHash + canonical(fields));

/** Append entries to the audit chain (call inside the write's transaction): the head is read once. */
export function insertAudit(
  db: Db,
  who: { actorId: string; keyId: string | null; requestId: string | null },
  entries: AuditInput | AuditInput[],
  at: string,
): void {
  let prevHash =
    db.first<{ entry_hash: string }>("SELECT entry_hash FROM audit_log ORDER BY seq DESC LIMIT 1")?.entry_hash ??
    AUDIT_GENESIS_HASH;
  for (const a of Array.isArray(entries) ? entries : [entries]) {
    const detail = JSON.stringify(a.detail ?? {});
    const entry: AuditHashFields = [
      newId(ID_PREFIX.audit),
      a.action,
      who.actorId,
      who.keyId,
      a.resourceType,
      a.resourceId ?? null,
      who.requestId,
      detail,
      at,
    ];
    const entryHash = auditEntryHash(prevHash, entry);
    db.run(
      `INSERT INTO audit_log (audit_id, action, actor_id, key_id, resource_type, resource_id, request_id, detail, created_at, prev_hash, entry_hash)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ...entry,
      prevHash,
      entryHash,
    );
    prevHash = entryHash;
  }
}

/**
 * Run `work` and record its events, audit entries and (when the route honours Idempotency-Key and the
 * caller sent one) the replay record, all in one transaction. A replay of the same request answers the
 * stored response with status 200 and meta.replayed true; the same key with another request is 409.
 * When `work` answers a RefusedWrite, its rows and audit commit and its error is thrown after the commit.
 */
export function commitWrite(rc: RequestCtx, work: (db: Db, write: WriteScope) => WriteOutcome | RefusedWrite): Reply {
  const idemKey = rc.idempotent ? rc.idempotencyKey : null;
  // The request identity includes the caller: another principal reusing the key is a different
  // request (409), never a replay of someone else's response.
  const requestHash = idemKey
    ? sha256Hex(canonical([rc.caller.principalId, rc.routeId, rc.params, rc.body ?? null]))
    : null;
  const result = rc.storage.transactionSync((): Reply | RefusedWrite => {
    if (idemKey) {
      const prior = rc.db.first<{ request_hash: string; response: string }>(
        "SELECT request_hash, response FROM idempotency WHERE idem_key = ?",
        idemKey,
      );
      if (prior) {
        if (prior.request_hash !== requestHash)
          // One message for another body and for another principal's use: it must not reveal the latter.
          throw conflict("Idempotency-Key was already used for a different request.");
        const stored = JSON.parse(prior.response) as { data: unknown; meta?: Record<string, unknown> };
        return { status: 200, data: stored.data, meta: { ...(stored.meta ?? {}), replayed: true } };
      }
    }
    const at = clock.nowIso();
    const write: WriteScope = { takenFromReserve: new Set() };
    const out = work(rc.db, write);
    const who = { actorId: rc.caller.principalId, keyId: rc.caller.keyId, requestId: rc.requestId };
    if ("refused" in out) {
      insertAudit(rc.db, who, out.audit, at);
      return out;
    }
    for (const e of out.events ?? []) insertEvent(rc.db, rc.caller.principalId, e, at);
    if (out.events?.length) rc.eventsWritten();
    insertAudit(rc.db, who, out.audit, at);
    const queued = queueTouched(rc.db, out.touched ?? { created: [], changed: [] }, at, write.takenFromReserve);
    // The alarm is the retry; the object registers these ids itself right after the commit.
    if (queued.ownerIds.length) rc.jobDue(recordOwnersJob.name, clock.nowMs(), clock.nowMs() + OUTBOX_DELAY_MS);
    if (out.touched?.created.length) rc.recordsCreated(out.touched.created, queued.ownerIds);
    if (queued.indexRows) rc.indexRowsQueued();
    const meta = rc.idempotent ? { ...(out.meta ?? {}), replayed: false } : out.meta;
    if (idemKey)
      rc.db.run(
        "INSERT INTO idempotency (idem_key, request_hash, status, response, created_at) VALUES (?, ?, ?, ?, ?)",
        idemKey,
        requestHash,
        out.status,
        JSON.stringify({ data: out.data, meta: out.meta ?? {} }),
        at,
      );
    return { status: out.status, data: out.data, meta };
  });
  if ("refused" in result) throw result.refused;
  return result;
}
