// Audit queries and the audit export's NDJSON lines (published as JSON Schema in docs/API.md).
import { z } from "zod";
import { ID_PREFIX } from "../../http/ids";
import { idOf } from "../../http/shapes";
import { limitParam } from "../../http/validate";

export const AUDIT_FORMAT_VERSION = 1;

export const listAuditQuery = z.object({
  after: z.string().max(64).optional(),
  action: z.string().min(1).max(100).optional(),
  limit: limitParam(1, 500, 50),
});

export const exportAuditQuery = z.object({
  after: z.string().max(64).optional(),
  limit: limitParam(1, 5000, 1000),
});

const hash = z.string().regex(/^[0-9a-f]{64}$/);

/** One entry; metadata only, never content or secrets. */
export const auditEntry = z
  .strictObject({
    id: idOf(ID_PREFIX.audit),
    action: z.string(),
    actor_id: z.string(),
    key_id: z.string().nullable(),
    resource_type: z.string(),
    resource_id: z.string().nullable(),
    request_id: z.string().nullable(),
    metadata: z.record(z.string(), z.unknown()),
    created_at: z.string(),
    prev_hash: hash,
    entry_hash: hash,
  })
  .meta({ id: "AuditEntry" });

export const auditEntryLine = auditEntry.extend({ type: z.literal("svc.audit.entry") }).meta({ id: "AuditEntryLine" });

export const auditHeader = z
  .strictObject({
    type: z.literal("svc.audit.header"),
    format_version: z.literal(AUDIT_FORMAT_VERSION),
    filters: z.strictObject({ after: z.string().nullable(), limit: z.number().int() }),
    entries: z.number().int(),
    has_more: z.boolean(),
    /** Pass as `after` to continue; null on the last page. */
    next_after: z.string().nullable(),
    exported_at: z.string(),
    chain: z.strictObject({
      algorithm: z.literal("sha256"),
      entry_hash: z.string(),
      canonical_json: z.string(),
      genesis_prev_hash: hash,
      /** entry_hash of the entry before this page's first line (genesis_prev_hash from the start of the log). */
      start_prev_hash: hash,
      verify: z.string(),
    }),
  })
  .meta({ id: "AuditExportHeader" });

/** GET /v1/audit (published in docs/openapi.json; checked against every answer of the test suite). */
export const auditListResponse = z
  .strictObject({
    entries: z.array(auditEntry),
    has_more: z.boolean(),
    cursor: z
      .string()
      .nullable()
      .describe("The last (oldest) entry id of the page (or the `after` given): pass it as `after` for older entries"),
  })
  .meta({ id: "AuditEntryList" });
