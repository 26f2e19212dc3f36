// Record ids registered with the ownership registry before any write hands them out (table
// reserved_record_ids). A write that takes one has nothing to register after its commit: no registry
// RPC before its reply and no outbox row (docs/operations.md, "Limits and scale"). The object tops the reserve up in
// the background; when it runs dry a write uses a fresh id that is registered after its commit.
import type { OwnershipRegistry } from "../registry/client";
import { recordIdFor } from "../registry/shards";
import type { Db } from "../sql/db";

export const RESERVED_PREFIXES = ["prj_", "obs_", "claim_"] as const;
export type RecordPrefix = (typeof RESERVED_PREFIXES)[number];

/** Ids registered per prefix and top-up, and the stock below which a top-up starts. */
export const RESERVE_BATCH = 64;
export const LOW_WATER = 16;

/**
 * An unused reserved id for `prefix`, removed from the reserve inside the caller's transaction and
 * noted in `taken`, the ids the calling write took (WriteScope.takenFromReserve, one per write): the take
 * deletes the row (a rollback puts it back), so the write's end learns from the note, not from a second
 * statement, which of its created ids were registered already. Null when the reserve is dry.
 */
export function takeReservedId(db: Db, prefix: RecordPrefix, taken: Set<string>): string | null {
  const id =
    db.first<{ record_id: string }>(
      `DELETE FROM reserved_record_ids
      WHERE record_id = (SELECT record_id FROM reserved_record_ids WHERE prefix = ? LIMIT 1)
      RETURNING record_id`,
      prefix,
    )?.record_id ?? null;
  if (id) taken.add(id);
  return id;
}

/**
 * A write's created ids less the reserved ones it took (`taken`, registered already): what needs
 * registering after the commit. Also a writer that took several ids and reported fewer leaves nothing
 * behind: a taken id is out of the reserve, registered to this organization, and simply never appears.
 */
export function unregisteredOf(created: string[], taken: ReadonlySet<string>): string[] {
  return taken.size ? created.filter((id) => !taken.has(id)) : created;
}

/** Reserved ids per prefix (every row is untaken: a take deletes it), counted in SQL. */
function reserveStock(db: Db): Map<string, number> {
  return new Map(
    db
      .all<{ prefix: string; n: number }>("SELECT prefix, count(*) AS n FROM reserved_record_ids GROUP BY prefix")
      .map((r) => [r.prefix, r.n]),
  );
}

const usedPrefixes = (created: string[]) => RESERVED_PREFIXES.filter((p) => created.some((id) => id.startsWith(p)));

/**
 * The reserve's stock per prefix as last counted, less the ids created since (an upper bound on those
 * taken from it), so that a creating write counts the reserve in SQL only when it may be running low,
 * not after every write. One per organization object.
 */
export class ReserveGauge {
  private readonly stock = new Map<string, number>();

  /** A write committed these created ids: their prefixes' stock is lower by at most that many. */
  spent(created: string[]): void {
    for (const p of usedPrefixes(created)) {
      const left = this.stock.get(p);
      if (left !== undefined) this.stock.set(p, left - created.filter((id) => id.startsWith(p)).length);
    }
  }

  /** Of the prefixes of these created ids, those to top up: counted in SQL only when the gauge may be low. */
  low(db: Db, created: string[]): RecordPrefix[] {
    const used = usedPrefixes(created);
    if (used.every((p) => (this.stock.get(p) ?? -1) >= LOW_WATER)) return [];
    const counted = reserveStock(db);
    for (const p of used) this.stock.set(p, counted.get(p) ?? 0);
    return used.filter((p) => (counted.get(p) ?? 0) < LOW_WATER);
  }

  /** A top-up of these prefixes ended (stocked or not): count them again next time. */
  forget(prefixes: readonly RecordPrefix[]): void {
    for (const p of prefixes) this.stock.delete(p);
  }
}

/**
 * Register RESERVE_BATCH fresh ids per prefix with the registry, then stock them. Ids the registry
 * already holds for another organization (120 random bits: not expected) are never stocked. Throws when
 * the registry is unreachable, having stocked nothing.
 */
export async function topUpReserves(
  db: Db,
  registry: OwnershipRegistry,
  orgId: string,
  prefixes: RecordPrefix[],
  at: string,
): Promise<void> {
  const fresh = prefixes.flatMap((prefix) =>
    Array.from({ length: RESERVE_BATCH }, () => ({ prefix, id: recordIdFor(orgId, prefix) })),
  );
  if (!fresh.length) return;
  const { conflicts } = await registry.register(
    orgId,
    fresh.map((f) => f.id),
    at,
  );
  const foreign = new Set(conflicts);
  db.run(
    `INSERT OR IGNORE INTO reserved_record_ids (record_id, prefix)
       SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)`,
    JSON.stringify(fresh.filter((f) => !foreign.has(f.id)).map((f) => [f.id, f.prefix])),
  );
}
