// Verifying the audit hash chain written by insertAudit (src/org/write.ts):
//   entry_hash = sha256_hex(prev_hash + canonical([id, action, actor_id, key_id, resource_type,
//                                                  resource_id, request_id, JSON.stringify(metadata), created_at]))
// and each prev_hash is the previous entry's entry_hash (64 zeros before the first entry).
import { AUDIT_GENESIS_HASH, auditEntryHash } from "../../org/write";

export const GENESIS_PREV_HASH = AUDIT_GENESIS_HASH;

/** An audit entry as GET /v1/audit and GET /v1/audit/export expose it. */
export interface AuditEntry {
  id: string;
  action: string;
  actor_id: string;
  key_id: string | null;
  resource_type: string;
  resource_id: string | null;
  request_id: string | null;
  metadata: Record<string, unknown>;
  created_at: string;
  prev_hash: string;
  entry_hash: string;
}

// metadata is stored as JSON.stringify(detail); parsing and re-stringifying that string reproduces it exactly.
export const entryHash = (prevHash: string, e: AuditEntry): string =>
  auditEntryHash(prevHash, [
    e.id,
    e.action,
    e.actor_id,
    e.key_id,
    e.resource_type,
    e.resource_id,
    e.request_id,
    JSON.stringify(e.metadata),
    e.created_at,
  ]);

export type ChainCheck =
  | { ok: true; checked: number; last_hash: string }
  | { ok: false; index: number; id: string; reason: "prev_hash" | "entry_hash" };

/**
 * Walks consecutive entries. `startPrevHash` is the entry_hash of the entry before the first one
 * (the audit export header's chain.start_prev_hash; 64 zeros from the start of the log).
 */
export function verifyChain(entries: readonly AuditEntry[], startPrevHash = GENESIS_PREV_HASH): ChainCheck {
  let prev = startPrevHash;
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    if (e.prev_hash !== prev) return { ok: false, index: i, id: e.id, reason: "prev_hash" };
    if (entryHash(prev, e) !== e.entry_hash) return { ok: false, index: i, id: e.id, reason: "entry_hash" };
    prev = e.entry_hash;
  }
  return { ok: true, checked: entries.length, last_hash: prev };
}
