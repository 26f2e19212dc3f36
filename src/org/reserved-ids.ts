// Record ids registered with the ownership registry before any write hands them out (table
// reserved_record_ids). A write that takes one has nothing to register after its commit: no registry
// RPC before its reply and no outbox row (README "Record ownership"). The object tops the reserve up in
// the background; when it runs dry a write uses a fresh id that is registered after its commit, as before.
import type { OwnershipRegistry } from "../registry/client";
import { recordIdFor } from "../registry/shards";
import type { Db } from "./db";

export const RESERVED_PREFIXES = ["prj_", "obs_", "claim_"] as const;
export type RecordPrefix = (typeof RESERVED_PREFIXES)[number];

/** Ids registered per prefix and top-up, and the stock below which a top-up starts. */
export const RESERVE_BATCH = 64;
const LOW_WATER = 16;

/**
 * An unused reserved id for `prefix`, marked taken inside the caller's transaction (a rollback puts it
 * back), or null when the reserve is dry.
 */
export function takeReservedId(db: Db, prefix: RecordPrefix): string | null {
  return db.first<{ record_id: string }>(
    `UPDATE reserved_record_ids SET taken = 1
      WHERE record_id = (SELECT record_id FROM reserved_record_ids WHERE prefix = ? AND taken = 0 LIMIT 1)
      RETURNING record_id`, prefix)?.record_id ?? null;
}

/**
 * A write's created ids less the reserved ones it took (registered already). Every row marked taken
 * belongs to the current transaction, so all of them are deleted here, also one a writer took but did
 * not report among several it did (it is registered to this organization; it just never appears).
 * What is returned needs registering after the commit.
 */
export function unregisteredOf(db: Db, created: string[]): string[] {
  if (!created.length) return created; // a write that created nothing took nothing from the reserve
  const taken = new Set(db.all<{ record_id: string }>(
    "DELETE FROM reserved_record_ids WHERE taken = 1 RETURNING record_id").map((r) => r.record_id));
  return taken.size ? created.filter((id) => !taken.has(id)) : created;
}

/** Of the prefixes of these created ids, those whose untaken stock is below the low-water mark. */
export function lowReserves(db: Db, created: string[]): RecordPrefix[] {
  const used = RESERVED_PREFIXES.filter((p) => created.some((id) => id.startsWith(p)));
  if (!used.length) return [];
  const stock = new Map(db.all<{ prefix: string; n: number }>(
    "SELECT prefix, count(*) AS n FROM reserved_record_ids WHERE taken = 0 GROUP BY prefix").map((r) => [r.prefix, r.n]));
  return used.filter((p) => (stock.get(p) ?? 0) < LOW_WATER);
}

/**
 * Register RESERVE_BATCH fresh ids per prefix with the registry, then stock them. Ids the registry
 * already holds for another organization (120 random bits: not expected) are never stocked. Throws when
 * the registry is unreachable, having stocked nothing.
 */
export async function topUpReserves(db: Db, registry: OwnershipRegistry, orgId: string, prefixes: RecordPrefix[], at: string): Promise<void> {
  const fresh = prefixes.flatMap((prefix) => Array.from({ length: RESERVE_BATCH }, () => ({ prefix, id: recordIdFor(orgId, prefix) })));
  if (!fresh.length) return;
  const { conflicts } = await registry.register(orgId, fresh.map((f) => f.id), at);
  const foreign = new Set(conflicts);
  db.run(
    `INSERT OR IGNORE INTO reserved_record_ids (record_id, prefix, taken)
       SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), 0 FROM json_each(?)`,
    JSON.stringify(fresh.filter((f) => !foreign.has(f.id)).map((f) => [f.id, f.prefix])));
}
