// Operator tooling channel: organization bootstrap for `npm run bootstrap` / `npm start`.
// Not part of the public API: it exists only in an instance started with an OPERATOR_TOKEN binding
// (the local tooling generates one per state folder; a deployment sets it with `wrangler secret put`),
// and it answers exactly like an unknown path otherwise.
import { hashKey } from "./auth/credentials";
import { clock } from "./http/clock";
import { newId, ID_PREFIX, randomHex } from "./http/ids";
import type { EdgeEnv } from "./env";
import { addCredential } from "./index-db";

export const OPERATOR_PATH = "/__operator/bootstrap";

const timingSafeEqual = (a: string, b: string) => {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
};

export function isOperatorRequest(request: Request, url: URL, env: EdgeEnv): boolean {
  const token = env.OPERATOR_TOKEN;
  const given = request.headers.get("x-svc-operator-token");
  return (
    !!token &&
    token.length >= 32 &&
    request.method === "POST" &&
    url.pathname === OPERATOR_PATH &&
    !!given &&
    timingSafeEqual(hashKey(given), hashKey(token))
  );
}

/**
 * Create an organization: registry rows, owner in its Durable Object, then the credential index row.
 * Nothing half-written survives a failure: if the object or the credential row fails, the registry
 * rows are taken back, so no ownerless organization is listed and the owner username is free again.
 * (An object that did bootstrap stays unreachable: nothing routes to it without those rows.)
 */
export async function bootstrapOrganization(env: EdgeEnv) {
  const orgId = newId(ID_PREFIX.org);
  const now = clock.nowIso();
  const username = await registerOrganization(env.INDEX_DB, orgId, now);
  try {
    const stub = env.ORG.get(env.ORG.idFromName(orgId));
    const result = await stub.bootstrap(orgId, username);
    await addCredential(env.INDEX_DB, result.key_hash, orgId, "api_key", now);
    return {
      org_id: orgId,
      api_key: result.api_key,
      owner_username: username,
      temporary_password: result.temporary_password,
    };
  } catch (err) {
    await env.INDEX_DB.batch([
      env.INDEX_DB.prepare("DELETE FROM credentials WHERE org_id = ?").bind(orgId),
      env.INDEX_DB.prepare("DELETE FROM dashboard_usernames WHERE org_id = ?").bind(orgId),
      env.INDEX_DB.prepare("DELETE FROM organizations WHERE org_id = ?").bind(orgId),
    ]).catch(() => undefined); // the original failure is the one to report
    throw err;
  }
}

/**
 * The organization's registry row and its owner's username, in one batch: `owner` while free, else
 * `owner-<hex>`. Two first bootstraps racing for `owner` do not fail: the loser takes a suffixed name.
 */
async function registerOrganization(db: D1Database, orgId: string, now: string): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    const taken =
      attempt > 0 ||
      (await db.prepare("SELECT 1 AS n FROM dashboard_usernames WHERE username = 'owner'").first()) != null;
    const username = taken ? `owner-${randomHex(4)}` : "owner";
    try {
      await db.batch([
        db.prepare("INSERT INTO organizations (org_id, created_at) VALUES (?, ?)").bind(orgId, now),
        db
          .prepare("INSERT INTO dashboard_usernames (username, org_id, created_at) VALUES (?, ?, ?)")
          .bind(username, orgId, now),
      ]);
      return username;
    } catch (err) {
      if (attempt >= 2 || !/UNIQUE constraint failed: dashboard_usernames/.test(String((err as Error).message)))
        throw err;
    }
  }
}
