// The SQL of the audit log's reads (its entries are written by commitWrite, src/org/write.ts).
import { type Db, sql } from "../../sql/db";

export interface AuditRow {
  seq: number;
  audit_id: string;
  action: string;
  actor_id: string;
  key_id: string | null;
  resource_type: string;
  resource_id: string | null;
  request_id: string | null;
  detail: string;
  created_at: string;
  prev_hash: string;
  entry_hash: string;
}

/** Where an entry sits in the log (and its hash, which the next entry's prev_hash repeats); null when unknown. */
export const auditEntryPosition = (db: Db, auditId: string) =>
  db.first<{ seq: number; entry_hash: string }>(sql`SELECT seq, entry_hash FROM audit_log WHERE audit_id = ${auditId}`);

/**
 * Up to `limit` entries past `fromSeq` (null: from the start), optionally of one action: in commit order
 * the entries after it, newest first those before it.
 */
export function auditEntriesFrom(
  db: Db,
  q: { fromSeq: number | null; order: "commit" | "newest"; action?: string; limit: number },
): AuditRow[] {
  const ofAction = q.action ? sql`AND action = ${q.action}` : sql``;
  return q.order === "commit"
    ? db.all<AuditRow>(
        sql`SELECT * FROM audit_log WHERE seq > ${q.fromSeq ?? 0} ${ofAction} ORDER BY seq ASC LIMIT ${q.limit}`,
      )
    : db.all<AuditRow>(
        sql`SELECT * FROM audit_log WHERE seq < ${q.fromSeq ?? Number.MAX_SAFE_INTEGER} ${ofAction} ORDER BY seq DESC LIMIT ${q.limit}`,
      );
}
