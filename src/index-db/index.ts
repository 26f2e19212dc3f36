// The global D1 index: credential hash -> org id, the organization registry, username -> org id.
// Exactly one indexed lookup per authenticated request.

/** The D1 migration files under schema/d1, in order (a test checks this list against the folder). */
export const D1_MIGRATIONS = ["0001_index.sql", "0002_record_owners.sql"] as const;

export async function orgForCredential(db: D1Database, keyHash: string): Promise<string | null> {
  const row = await db.prepare("SELECT org_id FROM credentials WHERE key_hash = ?").bind(keyHash).first<{ org_id: string }>();
  return row?.org_id ?? null;
}

export const addCredential = (db: D1Database, keyHash: string, orgId: string, kind: string, at: string) =>
  db.prepare("INSERT OR IGNORE INTO credentials (key_hash, org_id, kind, created_at) VALUES (?, ?, ?, ?)")
    .bind(keyHash, orgId, kind, at).run();

export const removeCredential = (db: D1Database, keyHash: string) =>
  db.prepare("DELETE FROM credentials WHERE key_hash = ?").bind(keyHash).run();

export async function appliedMigrationCount(db: D1Database): Promise<number> {
  const row = await db.prepare("SELECT count(*) AS n FROM d1_migrations").first<{ n: number }>();
  return row?.n ?? 0;
}
