// The audit trail: metadata-only entries written by commitWrite in the same transaction as each action,
// hash-chained (see verify.ts). Owner or admin only, on top of the route's scope.
import { ADMIN_ROLES } from "../../auth/roles";
import { clock } from "../../http/clock";
import { notFound } from "../../http/errors";
import { orgRoute } from "../../org/route";
import type { Db } from "../../sql/db";
import { ok } from "../../org/request";
import {
  AUDIT_FORMAT_VERSION,
  auditEntryLine,
  auditHeader,
  auditListResponse,
  exportAuditQuery,
  listAuditQuery,
} from "./schema";
import { type AuditRow, auditEntriesFrom, auditEntryPosition } from "./store";
import { type AuditEntry, GENESIS_PREV_HASH } from "./verify";

const entryView = (a: AuditRow): AuditEntry => ({
  id: a.audit_id,
  action: a.action,
  actor_id: a.actor_id,
  key_id: a.key_id,
  resource_type: a.resource_type,
  resource_id: a.resource_id,
  request_id: a.request_id,
  metadata: JSON.parse(a.detail) as Record<string, unknown>,
  created_at: a.created_at,
  prev_hash: a.prev_hash,
  entry_hash: a.entry_hash,
});

/** The entry named by `after` (404 when unknown), or null from the start of the log. */
function anchor(db: Db, after: string | undefined): { seq: number; entry_hash: string } | null {
  if (after === undefined) return null;
  const row = auditEntryPosition(db, after);
  if (!row) throw notFound("Audit entry");
  return row;
}

/**
 * Up to `limit` entries past `fromSeq` in the given order (commit order: newer than it; newest first:
 * older than it), plus whether more exist.
 */
function page(db: Db, fromSeq: number | null, limit: number, order: "commit" | "newest", action?: string) {
  const rows = auditEntriesFrom(db, { fromSeq, order, action, limit: limit + 1 });
  return { entries: rows.slice(0, limit).map(entryView), hasMore: rows.length > limit };
}

export const auditRoutes = [
  orgRoute({
    method: "GET",
    path: "/v1/audit",
    scope: "audit:read",
    roles: ADMIN_ROLES,
    query: listAuditQuery,
    response: { 200: auditListResponse },
    summary:
      "Metadata-only audit entries, newest first, continuing after an audit id; filter by action (owner or admin).",
    operationId: "listAuditEntries",
    tag: "Audit",
    description:
      "Lists metadata-only audit entries, newest first, optionally of one `action`, continuing after an audit id; " +
      "owner or admin.",
    handler: ({ db, query }) => {
      // Newest first, as one reads a trail; the export is the commit-order stream the hash chain verifies.
      const from = anchor(db, query.after);
      const { entries, hasMore } = page(db, from?.seq ?? null, query.limit, "newest", query.action);
      const cursor = entries.length ? entries[entries.length - 1].id : (query.after ?? null);
      return ok({ entries, has_more: hasMore, cursor });
    },
  }),
  orgRoute({
    method: "GET",
    path: "/v1/audit/export",
    scope: "audit:export",
    roles: ADMIN_ROLES,
    query: exportAuditQuery,
    ndjson: true,
    ndjsonLines: { "svc.audit.header": auditHeader, "svc.audit.entry": auditEntryLine },
    summary:
      "NDJSON audit export behind a svc.audit.header line that explains how to verify the hash chain (owner or admin).",
    operationId: "exportAudit",
    tag: "Audit",
    description:
      "Exports audit entries as NDJSON behind a `svc.audit.header` line that explains how to verify their hash chain; " +
      "owner or admin.",
    handler: ({ db, query }) => {
      const from = anchor(db, query.after);
      const { entries, hasMore } = page(db, from?.seq ?? null, query.limit, "commit");
      const header = {
        type: "svc.audit.header",
        format_version: AUDIT_FORMAT_VERSION,
        filters: { after: query.after ?? null, limit: query.limit },
        entries: entries.length,
        has_more: hasMore,
        next_after: hasMore ? entries[entries.length - 1].id : null,
        exported_at: clock.nowIso(),
        chain: {
          algorithm: "sha256",
          entry_hash:
            "sha256_hex(prev_hash + canonical_json([id, action, actor_id, key_id, resource_type, resource_id, request_id, JSON.stringify(metadata), created_at]))",
          canonical_json:
            "JSON.stringify with object keys sorted and no whitespace; metadata enters as the JSON string JSON.stringify(metadata)",
          genesis_prev_hash: GENESIS_PREV_HASH,
          start_prev_hash: from?.entry_hash ?? GENESIS_PREV_HASH,
          verify:
            "Walk the entry lines in order starting from start_prev_hash: each prev_hash must equal the previous entry_hash, and each entry_hash must equal the recomputed value. The first mismatch is the first modified, inserted or removed entry.",
        },
      };
      const lines = entries.map((e) => JSON.stringify({ type: "svc.audit.entry", ...e }));
      return { status: 200, data: null, ndjson: [JSON.stringify(header), ...lines] };
    },
  }),
];
