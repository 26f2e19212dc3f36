// The global D1 index: credential hash -> org id, the organization registry, username -> org id.
// Exactly one indexed lookup per authenticated request (on the nearest replica); nothing here grows
// with the number of records (record ownership lives in src/registry).

/** The D1 migration files under schema/d1, in order (a test checks this list against the folder). */
export const D1_MIGRATIONS = [
  "0001_index.sql",
  "0002_record_owners.sql",
  "0003_login_failures.sql",
  "0004_drop_record_owners.sql",
  "0005_login_slots.sql",
  "0006_login_queue_per_client.sql",
] as const;

/**
 * Routing cache: key hash -> org id, per Worker isolate. Safe because the mapping never changes for a
 * key, and authentication itself happens in the org's Durable Object, which re-reads the key row on
 * every request (a revoked key fails on its next request whatever this cache holds). Misses are never
 * cached, so a new key works at once.
 */
const ROUTE_CACHE_MAX = 10_000;
const ROUTE_CACHE_TTL_MS = 10 * 60_000;
const routeCache = new Map<string, { orgId: string; until: number }>();

const CREDENTIAL_ORG = "SELECT org_id FROM credentials WHERE key_hash = ?";

/**
 * The organization a credential routes to. Read from the nearest replica (D1 Sessions API,
 * "first-unconstrained"): safe, because the org Durable Object re-checks the key row on every request,
 * so a stale replica can only route, never authorize (a revoked key it still knows fails in the DO).
 * A miss is asked again of the primary, so a key created a moment ago never fails on a lagging replica.
 * Writes (addCredential, removeCredential) use the primary.
 */
export async function orgForCredential(
  db: Pick<D1Database, "prepare" | "withSession">,
  keyHash: string,
): Promise<string | null> {
  const hit = routeCache.get(keyHash);
  if (hit && hit.until > Date.now()) return hit.orgId;
  const row =
    (await db.withSession("first-unconstrained").prepare(CREDENTIAL_ORG).bind(keyHash).first<{ org_id: string }>()) ??
    (await db.prepare(CREDENTIAL_ORG).bind(keyHash).first<{ org_id: string }>());
  if (!row) return null;
  if (routeCache.size >= ROUTE_CACHE_MAX) routeCache.delete(routeCache.keys().next().value!);
  routeCache.set(keyHash, { orgId: row.org_id, until: Date.now() + ROUTE_CACHE_TTL_MS });
  return row.org_id;
}

export const addCredential = (db: D1Database, keyHash: string, orgId: string, kind: string, at: string) =>
  db
    .prepare("INSERT OR IGNORE INTO credentials (key_hash, org_id, kind, created_at) VALUES (?, ?, ?, ?)")
    .bind(keyHash, orgId, kind, at)
    .run();

export const removeCredential = (db: D1Database, keyHash: string) =>
  db.prepare("DELETE FROM credentials WHERE key_hash = ?").bind(keyHash).run();

/** The organization holding a dashboard username (usernames are unique across the deployment). */
export const orgOfUsername = async (db: D1Database, username: string) =>
  (
    await db
      .prepare("SELECT org_id FROM dashboard_usernames WHERE username = ?")
      .bind(username)
      .first<{ org_id: string }>()
  )?.org_id ?? null;

/** Claims a username for an organization; a taken one fails with a UNIQUE constraint error. */
export const claimUsername = (db: D1Database, username: string, orgId: string, at: string) =>
  db
    .prepare("INSERT INTO dashboard_usernames (username, org_id, created_at) VALUES (?, ?, ?)")
    .bind(username, orgId, at)
    .run();

export async function appliedMigrationCount(db: D1Database): Promise<number> {
  const row = await db.prepare("SELECT count(*) AS n FROM d1_migrations").first<{ n: number }>();
  return row?.n ?? 0;
}
