import type { Db } from "./db";
import { ORG_MIGRATIONS } from "./migrations";

/** Apply every migration not yet recorded, each in its own transaction. Returns the applied count. */
export function migrate(db: Db, storage: DurableObjectStorage): number {
  db.run("CREATE TABLE IF NOT EXISTS _migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)");
  const applied = db.first<{ n: number }>("SELECT count(*) AS n FROM _migrations")!.n;
  for (let version = applied; version < ORG_MIGRATIONS.length; version++) {
    const m = ORG_MIGRATIONS[version];
    storage.transactionSync(() => {
      db.sql.exec(m.sql);
      db.run("INSERT INTO _migrations (version, name, applied_at) VALUES (?, ?, ?)", version + 1, m.name, new Date().toISOString());
    });
  }
  return appliedCount(db);
}

export const appliedCount = (db: Db) => db.first<{ n: number }>("SELECT count(*) AS n FROM _migrations")!.n;
