// Applying the org migration list (src/org/migrations.ts). What was applied is checked by name against
// the append-only list, position by position: an applied name the list does not have, or has at
// another position, means this object's schema and this code disagree. That is an error, reported
// through readiness (and as 503 on every request), never papered over by counting.
import type { Db } from "../sql/db";
import { type Migration, ORG_MIGRATIONS } from "./migrations";

export interface AppliedMigration {
  version: number;
  name: string;
}

/** Why the applied migrations do not match the list, or null when they are a prefix of it. Pure. */
export function migrationMismatch(applied: readonly AppliedMigration[], list: readonly Migration[]): string | null {
  const known = new Map(list.map((m, i) => [m.name, i]));
  for (let i = 0; i < applied.length; i++) {
    const { name, version } = applied[i];
    const at = known.get(name);
    if (at === undefined) return `applied migration ${name} is not in the migration list`;
    if (at !== i || version !== i + 1)
      return `migration ${name} was applied out of order (as number ${version}, listed as ${at + 1})`;
  }
  return null;
}

export const appliedMigrations = (db: Db): AppliedMigration[] =>
  db.all<AppliedMigration>("SELECT version, name FROM _migrations ORDER BY version");

/**
 * Apply every listed migration not yet applied, each in its own transaction, after checking that the
 * applied ones are the list's prefix (throws otherwise). Returns the applied count.
 */
export function migrate(db: Db, storage: DurableObjectStorage, list: readonly Migration[] = ORG_MIGRATIONS): number {
  db.run(
    "CREATE TABLE IF NOT EXISTS _migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
  );
  const applied = appliedMigrations(db);
  const mismatch = migrationMismatch(applied, list);
  if (mismatch) throw new Error(mismatch);
  for (let version = applied.length; version < list.length; version++) {
    const m = list[version];
    storage.transactionSync(() => {
      db.sql.exec(m.sql);
      db.run(
        "INSERT INTO _migrations (version, name, applied_at) VALUES (?, ?, ?)",
        version + 1,
        m.name,
        new Date().toISOString(),
      );
    });
  }
  return list.length;
}
