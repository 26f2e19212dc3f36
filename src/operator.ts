// Operator tooling channel: organization bootstrap for `npm run bootstrap` / `npm start`.
// Not part of the public API: it exists only in an instance started with an OPERATOR_TOKEN binding
// (the local tooling generates one per state folder; a deployment sets it with `wrangler secret put`),
// and it answers exactly like an unknown path otherwise.
import { hashKey } from "./auth/credentials";
import { clock } from "./http/clock";
import { newId, ID_PREFIX, randomHex } from "./http/ids";
import type { EdgeEnv } from "./http/route";
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
  return !!token && token.length >= 32 && request.method === "POST" && url.pathname === OPERATOR_PATH &&
    !!given && timingSafeEqual(hashKey(given), hashKey(token));
}

/** Create an organization: registry row, owner in its Durable Object, then the credential index row. */
export async function bootstrapOrganization(env: EdgeEnv) {
  const orgId = newId(ID_PREFIX.org);
  const now = clock.nowIso();
  const first = await env.INDEX_DB.prepare("SELECT count(*) AS n FROM dashboard_usernames WHERE username = 'owner'").first<{ n: number }>();
  const username = first && first.n > 0 ? `owner-${randomHex(4)}` : "owner";
  await env.INDEX_DB.batch([
    env.INDEX_DB.prepare("INSERT INTO organizations (org_id, created_at) VALUES (?, ?)").bind(orgId, now),
    env.INDEX_DB.prepare("INSERT INTO dashboard_usernames (username, org_id, created_at) VALUES (?, ?, ?)").bind(username, orgId, now),
  ]);
  const stub = env.ORG.get(env.ORG.idFromName(orgId));
  const result = await stub.bootstrap(orgId, username);
  await addCredential(env.INDEX_DB, result.key_hash, orgId, "api_key", now);
  return { org_id: orgId, api_key: result.api_key, owner_username: username, temporary_password: result.temporary_password };
}
