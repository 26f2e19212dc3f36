// Test helpers: call the front Worker exactly as a client would, and create organizations.
import { env, runInDurableObject, SELF } from "cloudflare:test";
import type { OrgStore } from "../src/OrgStore";
import { expect } from "vitest";
import { z } from "zod";
import { bootstrapOrganization } from "../src/operator";
import { buildMatcher } from "../src/http/router";
import { errorEnvelope, successMetaOf } from "../src/http/shapes";
import { ROUTES } from "../src/routes";
import type { OwnershipRegistry } from "../src/registry/client";
import { groupByShard } from "../src/registry/shards";
import { Db } from "../src/sql/db";
import { clock } from "../src/http/clock";

export interface CallResult {
  status: number;
  headers: Headers;
  text: string;
  json: any;
}

export async function call(
  method: string,
  path: string,
  opts: { key?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<CallResult> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.key) headers.authorization = `Bearer ${opts.key}`;
  let body: string | undefined;
  if (opts.raw !== undefined) body = opts.raw;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers["content-type"] ??= "application/json";
  }
  const res = await SELF.fetch(`http://svc.test${path}`, { method, headers, body });
  // Bytes decoded as UTF-8, exactly what res.text() does; text() also warns on every NDJSON answer
  // (application/x-ndjson is not a content type the runtime knows as text).
  const text = new TextDecoder().decode(await res.arrayBuffer());
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  await checkAnswer(method, path, res.status, res.headers.get("content-type") ?? "", text, json);
  return { status: res.status, headers: res.headers, text, json };
}

const matchRoute = buildMatcher(ROUTES);

/**
 * Every answer the suite receives is checked against what the route table publishes in
 * docs/openapi.json: a success against the route's declared response schema for that exact status
 * (NDJSON line by line against its `ndjsonLines`, an empty body where the schema is null), a failure
 * against the error envelope. A route without a declared response fails here, so the published
 * shapes cannot drift from real answers.
 */
export async function checkAnswer(
  method: string,
  path: string,
  status: number,
  contentType: string,
  text: string,
  json: any,
) {
  const url = new URL(`http://svc.test${path}`);
  const m = await matchRoute(new Request(url, { method }), url);
  const route = m.kind === "route" ? m.route : null;
  const fail = (why: string) => {
    throw new Error(`${method} ${path} answered ${status}: ${why}`);
  };
  if (status >= 400) {
    // /mcp answers transport failures as bare JSON-RPC errors; everything else is the error envelope.
    if (route?.bareResponse && json?.jsonrpc === "2.0") return;
    if (!contentType.startsWith("application/json")) return;
    const checked = errorEnvelope.safeParse(json);
    if (!checked.success) fail(`not the error envelope: ${issues(checked.error)}`);
    return;
  }
  if (status < 200 || status >= 300 || !route) return;
  if (route.auth === "key" && route.ndjson) {
    const lineSchema = z.union(Object.values(route.ndjsonLines ?? {}) as [z.ZodType, ...z.ZodType[]]);
    for (const line of text.split("\n").filter(Boolean)) {
      const checked = lineSchema.safeParse(JSON.parse(line));
      if (!checked.success) fail(`an NDJSON line matches none of the route's ndjsonLines: ${issues(checked.error)}`);
    }
    return;
  }
  const declared = route.response;
  if (!declared) return fail("the route declares no `response` schemas (src/org/route.ts)");
  if (!(status in declared)) fail(`the route declares only ${Object.keys(declared).join(", ")}`);
  const schema = declared[status as keyof typeof declared];
  if (schema === null || schema === undefined) {
    if (text !== "") fail("the route declares an empty body");
    return;
  }
  if (!route.bareResponse && (json?.data === undefined || typeof json?.meta?.request_id !== "string"))
    fail("not a `{ data, meta }` envelope");
  if (!route.bareResponse) {
    const meta = successMetaOf(route).safeParse(json.meta);
    if (!meta.success)
      fail(
        `meta does not match the route's (request_id, replayed on an idempotent route, responseMeta): ${issues(meta.error)}`,
      );
  }
  const checked = schema.safeParse(route.bareResponse ? json : json.data);
  if (!checked.success) fail(`the answer does not match the route's response schema: ${issues(checked.error)}`);
}

const issues = (error: z.ZodError) =>
  JSON.stringify(error.issues.slice(0, 3).map((i) => ({ path: i.path.join("."), code: i.code, message: i.message })));

export const newOrg = () => bootstrapOrganization(env);

export function expectError(r: CallResult, status: number, code: string) {
  expect(r.status, r.text).toBe(status);
  expect(r.json?.error?.code, r.text).toBe(code);
  expect(typeof r.json?.error?.message).toBe("string");
  expect(r.json?.meta?.request_id).toMatch(/^req_[0-9a-f]{32}$/);
}

export async function mintKey(ownerKey: string, body: Record<string, unknown>) {
  const r = await call("POST", "/v1/keys", { key: ownerKey, body: { label: "test", ...body } });
  expect(r.status, r.text).toBe(201);
  return r.json.data as { key: string; key_id: string; principal_id: string };
}

export const obs = (subject: string, content: string, extra: Record<string, unknown> = {}) => ({
  subject_id: subject,
  kind: "note",
  content,
  source: { type: "test", ref: "r1" },
  ...extra,
});

/** A fresh organization and two principals in it with every scope: the usual setup of a two-reader test. */
export async function orgWithTwoPrincipals() {
  const org = await newOrg();
  const first = await mintKey(org.api_key, { scopes: ["*"] });
  const second = await mintKey(org.api_key, { scopes: ["*"] });
  return { org, first, second };
}

export async function append(key: string, body: Record<string, unknown>, headers?: Record<string, string>) {
  return call("POST", "/v1/observations", { key, body, headers });
}

export async function appendOk(key: string, body: Record<string, unknown>): Promise<string> {
  const r = await append(key, body);
  expect(r.status, r.text).toBe(201);
  return r.json.data.observation_id;
}

export async function consolidateOk(
  key: string,
  subject: string,
  claims: Record<string, unknown>[],
): Promise<string[]> {
  const r = await call("POST", "/v1/consolidations", { key, body: { subject_id: subject, claims } });
  expect(r.status, r.text).toBe(201);
  return r.json.data.claims.map((c: { claim_id: string }) => c.claim_id);
}

export const supports = (observation_id: string) => [{ observation_id, relation: "supports" }];

/** An ownership registry whose every shard is unreachable (give it to one org object through its deps). */
export const failingRegistry: OwnershipRegistry = {
  claim: () => Promise.reject(new Error("registry unreachable (test)")),
  register: () => Promise.reject(new Error("registry unreachable (test)")),
  release: () => Promise.reject(new Error("registry unreachable (test)")),
};

/** The owner the ownership registry records for each id (ids it does not know are absent). */
export async function registryOwners(ids: string[]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [shard, list] of groupByShard(ids))
    Object.assign(out, await env.ID_REGISTRY.get(env.ID_REGISTRY.idFromName(shard)).owners(list));
  return out;
}

/**
 * Moves the service's clock a day ahead for one test, so the background work its writes arm (the index
 * drain and the ownership registry's outbox, 1 s after a write) falls due a day after real time and never
 * fires during it: only what the test runs drains, however slow the machine. An alarm run by the test
 * (runDurableObjectAlarm) still runs the jobs due by the moved clock. setup.ts resets the clock after
 * each test.
 */
export const holdBackgroundDrain = () => clock.advance(24 * 3_600_000);

/** Run `fn` inside the organization's Durable Object (direct SQL checks, alarms). */
export function orgStub(orgId: string): DurableObjectStub<OrgStore> {
  return env.ORG.get(env.ORG.idFromName(orgId)) as unknown as DurableObjectStub<OrgStore>;
}
export const inOrg = <R>(orgId: string, fn: (o: OrgStore, state: DurableObjectState) => R | Promise<R>): Promise<R> =>
  runInDurableObject(orgStub(orgId) as unknown as DurableObjectStub, (o, state) => fn(o as unknown as OrgStore, state));

/**
 * The audit chain's formula written out from docs/api-guide.md ("Audit"), independent of the product code:
 * entry_hash = sha256_hex(prev_hash + canonical_json([id, action, actor_id, key_id, resource_type,
 * resource_id, request_id, JSON.stringify(metadata), created_at])). The array holds only strings and
 * nulls, so its canonical JSON is plain JSON.stringify.
 */
export async function readmeAuditHash(
  prevHash: string,
  e: {
    id: string;
    action: string;
    actor_id: string;
    key_id: string | null;
    resource_type: string;
    resource_id: string | null;
    request_id: string | null;
    metadataJson: string;
    created_at: string;
  },
): Promise<string> {
  const text =
    prevHash +
    JSON.stringify([
      e.id,
      e.action,
      e.actor_id,
      e.key_id,
      e.resource_type,
      e.resource_id,
      e.request_id,
      e.metadataJson,
      e.created_at,
    ]);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** A public route's request with no body, no credential and no waiting (health and readiness probes). */
export const bareRequest = { bodyText: null, authorization: null, clientAddress: null, wait: async () => {} };

/**
 * A Db over `db`'s storage that counts the rows SQLite reads for its statements (cursor.rowsRead),
 * reading each cursor to the end so the count is final, and handing the rows on as Db reads them (raw).
 */
export function countingDb(db: Db): { db: Db; rowsRead: () => number } {
  let rowsRead = 0;
  const counting = new Db(
    new Proxy(db.sql, {
      get: (t, k) =>
        k === "exec"
          ? (...a: Parameters<SqlStorage["exec"]>) => {
              const cur = t.exec(...a);
              const rows = [...cur.raw()];
              rowsRead += cur.rowsRead;
              return { columnNames: cur.columnNames, raw: () => rows.values() };
            }
          : Reflect.get(t, k, t),
    }),
  );
  return { db: counting, rowsRead: () => rowsRead };
}

/** A seeded pseudo-random generator in [0, 1) (scripts/synthetic-text.mjs, shared with the benches). */
export { prng } from "../scripts/synthetic-text.mjs";

let nameSeq = 0;
/** A dashboard username no other test uses (usernames are unique across the deployment). */
export const uniqueName = (prefix = "u") =>
  `${prefix}${Date.now().toString(36)}${(nameSeq++).toString(36)}${Math.random().toString(36).slice(2, 6)}`;

export const login = (username: string, password: string, headers: Record<string, string> = {}) =>
  call("POST", "/v1/dashboard-sessions", { body: { username, password }, headers });

/** A new dashboard account of `role`, created with `key`, still on its temporary password. */
export async function newAccount(key: string, role = "member") {
  const username = uniqueName();
  const r = await call("POST", "/v1/operator-accounts", { key, body: { username, role } });
  expect(r.status, r.text).toBe(201);
  return {
    username,
    password: r.json.data.temporary_password as string,
    principalId: r.json.data.principal_id as string,
    accountId: r.json.data.account_id as string,
    data: r.json.data,
  };
}

/** An account past its temporary password, with a full session (`token`). */
export async function fullAccount(key: string, role = "member") {
  const acct = await newAccount(key, role);
  const first = await login(acct.username, acct.password);
  expect(first.status, first.text).toBe(201);
  const password = `pw-${uniqueName()}-long`;
  const changed = await call("PATCH", "/v1/operator-accounts/current/password", {
    key: first.json.data.session_token,
    body: { current_password: acct.password, new_password: password },
  });
  expect(changed.status, changed.text).toBe(200);
  const full = await login(acct.username, password);
  expect(full.json.data.stage, full.text).toBe("full");
  return { ...acct, password, token: full.json.data.session_token as string };
}
