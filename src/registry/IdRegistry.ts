// One shard of the record-ownership registry: which organization owns a project, observation or claim
// id. 256 of these (src/registry/shards.ts), each its own SQLite, so nothing shared grows in one place.
// Every method is one synchronous transaction: concurrent callers of one shard are serialized, which is
// what makes "first claimer wins" true.
import { DurableObject } from "cloudflare:workers";

export interface ClaimResult {
  /** Ids this shard already holds for another organization (nothing was claimed when non-empty). */
  foreign: string[];
  /** Ids this call newly recorded for the organization (to release if the import then fails). */
  added: string[];
}

export class IdRegistry extends DurableObject {
  private readonly sql: SqlStorage;

  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env as never);
    this.sql = ctx.storage.sql;
    this.sql.exec(`CREATE TABLE IF NOT EXISTS owners (
      record_id TEXT PRIMARY KEY,
      org_id TEXT NOT NULL,
      created_at TEXT NOT NULL
    ) WITHOUT ROWID`);
  }

  private ownersOf(ids: string[]): Map<string, string> {
    const rows = this.sql
      .exec<{ record_id: string; org_id: string }>(
        "SELECT record_id, org_id FROM owners WHERE record_id IN (SELECT value FROM json_each(?))",
        JSON.stringify(ids),
      )
      .toArray();
    return new Map(rows.map((r) => [r.record_id, r.org_id]));
  }

  private insert(orgId: string, ids: string[], at: string): void {
    this.sql.exec(
      "INSERT OR IGNORE INTO owners (record_id, org_id, created_at) SELECT value, ?, ? FROM json_each(?)",
      orgId,
      at,
      JSON.stringify(ids),
    );
  }

  /** Import: all-or-nothing for this shard. Refuses when any id is another organization's; else records the new ones. */
  claim(orgId: string, ids: string[], at: string): ClaimResult {
    return this.ctx.storage.transactionSync(() => {
      const owners = this.ownersOf(ids);
      const foreign = ids.filter((id) => owners.has(id) && owners.get(id) !== orgId);
      if (foreign.length) return { foreign, added: [] };
      const added = ids.filter((id) => !owners.has(id));
      this.insert(orgId, added, at);
      return { foreign: [], added };
    });
  }

  /** A write's created ids: idempotent for the owner; returns ids another organization already holds (a conflict to log). */
  register(orgId: string, ids: string[], at: string): { conflicts: string[] } {
    return this.ctx.storage.transactionSync(() => {
      const owners = this.ownersOf(ids);
      this.insert(
        orgId,
        ids.filter((id) => !owners.has(id)),
        at,
      );
      return { conflicts: ids.filter((id) => owners.has(id) && owners.get(id) !== orgId) };
    });
  }

  /** Undo this organization's own claims (a refused or failed import); another owner's rows are never touched. */
  release(orgId: string, ids: string[]): void {
    this.sql.exec(
      "DELETE FROM owners WHERE org_id = ? AND record_id IN (SELECT value FROM json_each(?))",
      orgId,
      JSON.stringify(ids),
    );
  }

  /** The owner of each id this shard knows (tests and operators). */
  owners(ids: string[]): Record<string, string> {
    return Object.fromEntries(this.ownersOf(ids));
  }

  /** Rows and bytes of this shard (capacity planning). */
  size(): { rows: number; bytes: number } {
    const rows = this.sql.exec<{ n: number }>("SELECT count(*) AS n FROM owners").one().n;
    return { rows, bytes: this.ctx.storage.sql.databaseSize };
  }
}
