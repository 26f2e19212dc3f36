import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { REVISION } from "../src/domains/health/routes";
import { D1_MIGRATIONS } from "../src/index-db";
import { ROUTES } from "../src/routes";
import { call, expectError, mintKey, newOrg, inOrg } from "./helpers";

/** POSTs `text` as a chunked stream, with no content-length unless `declaredLength` is given. */
async function streamTo(path: string, key: string, text: string, declaredLength?: string) {
  const bytes = new TextEncoder().encode(text);
  let offset = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (offset >= bytes.byteLength) return controller.close();
      controller.enqueue(bytes.slice(offset, offset + 65_536));
      offset += 65_536;
    },
  });
  const headers: Record<string, string> = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  if (declaredLength !== undefined) headers["content-length"] = declaredLength;
  const request = new Request("http://svc.test" + path, {
    method: "POST",
    headers,
    body,
    duplex: "half",
  } as RequestInit);
  const sentLength = request.headers.get("content-length");
  const res = await SELF.fetch(request);
  const resText = await res.text();
  return { sentLength, result: { status: res.status, headers: res.headers, text: resText, json: JSON.parse(resText) } };
}

describe("pipeline", () => {
  it("answers health in the envelope with request id, no-store and JSON content type", async () => {
    const r = await call("GET", "/healthz");
    expect(r.status).toBe(200);
    expect(r.json.data.status).toBe("ok");
    expect(r.json.meta.request_id).toMatch(/^req_[0-9a-f]{32}$/);
    expect(r.headers.get("x-request-id")).toBe(r.json.meta.request_id);
    expect(r.headers.get("cache-control")).toBe("no-store");
    expect(r.headers.get("content-type")).toBe("application/json; charset=utf-8");
  });

  it("gives every response its own request id", async () => {
    const a = await call("GET", "/healthz");
    const b = await call("GET", "/v1/nothing");
    expect(a.json.meta.request_id).not.toBe(b.json.meta.request_id);
    expect(b.headers.get("x-request-id")).toBe(b.json.meta.request_id);
  });

  it("answers an unknown path 404 Unknown endpoint. before authentication", async () => {
    const r = await call("GET", "/v1/no-such-route", { headers: { authorization: "Bearer junk" } });
    expectError(r, 404, "NOT_FOUND");
    expect(r.json.error.message).toBe("Unknown endpoint.");
    expect(r.headers.get("cache-control")).toBe("no-store");
  });

  it("answers a wrong method 405 listing the allowed methods, without a credential", async () => {
    const r = await call("DELETE", "/v1/keys");
    expectError(r, 405, "METHOD_NOT_ALLOWED");
    expect(r.json.error.message).toBe("Allowed methods: POST, GET.");
    expect(r.headers.get("allow")).toBe("POST, GET");
  });

  it("lists exactly the spec's absent routes as unknown", async () => {
    for (const [m, p] of [
      ["POST", "/v1/observations:batch"],
      ["GET", "/v1/channel-releases"],
      ["POST", "/v1/channel-context"],
      ["GET", "/v1/webhook-subscriptions"],
      ["GET", "/v1/webhook-deliveries"],
      ["GET", "/v1/audit/events"],
    ]) {
      expectError(await call(m, p), 404, "NOT_FOUND");
    }
  });

  it("rejects a declared content-length over 1,048,576 with 413 before reading", async () => {
    const { api_key } = await newOrg();
    const r = await call("POST", "/v1/keys", {
      key: api_key,
      raw: "{}",
      headers: { "content-length": "2000000", "content-type": "application/json" },
    });
    expectError(r, 413, "PAYLOAD_TOO_LARGE");
  });

  it("rejects a received body over the limit with 413 and accepts one exactly at it", async () => {
    const { api_key } = await newOrg();
    // Streamed in chunks with NO content-length: only counting the received bytes can catch it.
    const over = JSON.stringify({ label: "x".repeat(1_048_577), scopes: ["*"] });
    const streamed = await streamTo("/v1/keys", api_key, over);
    expect(streamed.sentLength).toBeNull();
    expectError(streamed.result, 413, "PAYLOAD_TOO_LARGE");
    const pad = 1_048_576 - JSON.stringify({ label: "", scopes: ["*"] }).length;
    const exact = JSON.stringify({ label: "y".repeat(pad), scopes: ["*"] });
    expect(exact.length).toBe(1_048_576);
    // Exactly at the limit passes the body check and reaches validation (label too long).
    expectError((await streamTo("/v1/keys", api_key, exact)).result, 400, "VALIDATION_ERROR");
  });

  it("counts received bytes even when the declared content-length is false and small", async () => {
    const { api_key } = await newOrg();
    const over = JSON.stringify({ label: "x".repeat(1_048_577), scopes: ["*"] });
    const lying = await streamTo("/v1/keys", api_key, over, "100");
    // The body is received in full (the runtime does not cut it at the header), so only the
    // received-bytes check can answer 413.
    expectError(lying.result, 413, "PAYLOAD_TOO_LARGE");
  });

  it("answers 400 for a body that is not JSON, and for an empty body where one is required", async () => {
    const { api_key } = await newOrg();
    expectError(await call("POST", "/v1/keys", { key: api_key, raw: "{not json" }), 400, "VALIDATION_ERROR");
    expectError(await call("POST", "/v1/keys", { key: api_key }), 400, "VALIDATION_ERROR");
  });

  it("names the offending field in validation errors and rejects unknown fields such as org_id", async () => {
    const { api_key } = await newOrg();
    const r = await call("POST", "/v1/keys", { key: api_key, body: { label: "x", scopes: ["no:such"] } });
    expectError(r, 400, "VALIDATION_ERROR");
    expect(r.json.error.message).toContain("scopes");
    const o = await call("POST", "/v1/keys", { key: api_key, body: { label: "x", scopes: ["*"], org_id: "org_x" } });
    expectError(o, 400, "VALIDATION_ERROR");
    expect(o.json.error.message).toContain("org_id");
  });

  it("derives routing from the one route table: every table route exists and needs a credential unless public", async () => {
    // An id segment matches only its record's id form (DESIGN's id table), so each gets a well-formed one.
    const prefix: Record<string, string> = {
      observations: "obs_",
      claims: "claim_",
      context: "ctx_",
      checkpoints: "chk_",
      keys: "key_",
      grants: "grt_",
      memberships: "mbr_",
      leases: "lse_",
      handoffs: "hnd_",
      webhooks: "whk_",
      deliveries: "dlv_",
      events: "evt_",
      projects: "prj_",
      passkeys: "pk_",
      policies: "pol_",
      "claim-approvals": "apr_",
      channels: "chn_",
      "knowledge-releases": "rel_",
      "legal-holds": "hold_",
      "identity-mappings": "map_",
      peers: "peer_",
      workspaces: "wsp_",
    };
    for (const r of ROUTES) {
      const res = await call(
        r.method,
        r.path.replace(/([^/]+)\/:[a-z_]+/g, (_, c: string) => `${c}/${prefix[c] ? prefix[c] + "0".repeat(32) : "x"}`),
      );
      // Public: health answers, the login route refuses the missing body (never 401, 404 or 405).
      if (r.auth === "public") expect(res.status, `${r.method} ${r.path}`).toBe(r.method === "GET" ? 200 : 400);
      else expectError(res, 401, "UNAUTHENTICATED");
    }
  });
});

describe("authentication", () => {
  it("401s a missing header, a non-Bearer scheme, a wrong prefix and an unknown key", async () => {
    for (const h of [undefined, "Basic abc", "Bearer abc", "Bearer svc_sk_" + "0".repeat(64), "svc_sk_abc"]) {
      const r = await call("GET", "/v1/principal", { headers: h ? { authorization: h } : {} });
      expectError(r, 401, "UNAUTHENTICATED");
    }
  });

  it("shows the principal's scopes, trust ceiling and role", async () => {
    const org = await newOrg();
    const r = await call("GET", "/v1/principal", { key: org.api_key });
    expect(r.status).toBe(200);
    expect(r.json.data).toMatchObject({ scopes: "*", max_trust: "verified", role: "owner" });
    expect(r.json.data.principal_id).toMatch(/^prn_[0-9a-f]{32}$/);
    expect(r.json.data.key_id).toMatch(/^key_[0-9a-f]{32}$/);
  });

  it("keeps organizations apart: a key only ever reaches its own organization", async () => {
    const a = await newOrg();
    const b = await newOrg();
    const ka = await call("GET", "/v1/principal", { key: a.api_key });
    const kb = await call("GET", "/v1/principal", { key: b.api_key });
    expect(ka.json.data.principal_id).not.toBe(kb.json.data.principal_id);
    const minted = await mintKey(a.api_key, { scopes: ["keys:manage"] });
    const revokeFromB = await call("DELETE", `/v1/keys/${minted.key_id}`, { key: b.api_key });
    expectError(revokeFromB, 404, "NOT_FOUND");
    const missing = await call("DELETE", `/v1/keys/key_${"0".repeat(32)}`, { key: b.api_key });
    expect(revokeFromB.json.error).toEqual(missing.json.error);
  });
});

describe("keys", () => {
  it("returns the raw key once, stores only its hash, and never lists it", async () => {
    const org = await newOrg();
    const m = await call("POST", "/v1/keys", {
      key: org.api_key,
      body: { label: "agent-1", scopes: ["observations:write"] },
    });
    expect(m.status).toBe(201);
    expect(m.json.data).toMatchObject({
      label: "agent-1",
      scopes: ["observations:write"],
      max_trust: "high",
      status: "active",
    });
    expect(m.json.data.key).toMatch(/^svc_sk_[0-9a-f]{64}$/);
    const list = await call("GET", "/v1/keys", { key: org.api_key });
    expect(list.status).toBe(200);
    expect(list.text).not.toContain(m.json.data.key);
    expect(list.json.data.keys.some((k: any) => k.key_id === m.json.data.key_id)).toBe(true);
    for (const k of list.json.data.keys) expect(Object.keys(k)).not.toContain("key_hash");
    const stored = await inOrg(org.org_id, (o) =>
      o.db.first<{ key_hash: string }>("SELECT key_hash FROM api_keys WHERE key_id = ?", m.json.data.key_id),
    );
    expect(stored!.key_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(stored!.key_hash).not.toContain(m.json.data.key.slice(7));
  });

  it("403s a key without the route's scope, naming the scope", async () => {
    const org = await newOrg();
    const k = await mintKey(org.api_key, { scopes: ["observations:write"] });
    const r = await call("GET", "/v1/keys", { key: k.key });
    expectError(r, 403, "FORBIDDEN");
    expect(r.json.error.message).toBe('Missing required scope "keys:manage".');
  });

  it("refuses to mint scopes or a trust ceiling the minting key does not hold", async () => {
    const org = await newOrg();
    const minter = await mintKey(org.api_key, { scopes: ["keys:manage", "observations:write"], max_trust: "medium" });
    expectError(
      await call("POST", "/v1/keys", { key: minter.key, body: { label: "x", scopes: ["claims:write"] } }),
      403,
      "FORBIDDEN",
    );
    expectError(
      await call("POST", "/v1/keys", { key: minter.key, body: { label: "x", scopes: "*" } }),
      403,
      "FORBIDDEN",
    );
    expectError(
      await call("POST", "/v1/keys", {
        key: minter.key,
        body: { label: "x", scopes: ["keys:manage"], max_trust: "high" },
      }),
      403,
      "FORBIDDEN",
    );
    const narrower = await call("POST", "/v1/keys", {
      key: minter.key,
      body: { label: "x", scopes: ["observations:write"] },
    });
    expect(narrower.status).toBe(201);
    // The default ceiling is high, capped at the minter's own ceiling.
    expect(narrower.json.data.max_trust).toBe("medium");
  });

  it("revokes a key effective on the next request, and reports a repeat", async () => {
    const org = await newOrg();
    const k = await mintKey(org.api_key, { scopes: ["observations:write"] });
    expect((await call("GET", "/v1/principal", { key: k.key })).status).toBe(200);
    const d = await call("DELETE", `/v1/keys/${k.key_id}`, { key: org.api_key });
    expect(d.status).toBe(200);
    expect(d.json.data).toMatchObject({ status: "revoked", already_revoked: false });
    expectError(await call("GET", "/v1/principal", { key: k.key }), 401, "UNAUTHENTICATED");
    const again = await call("DELETE", `/v1/keys/${k.key_id}`, { key: org.api_key });
    expect(again.json.data.already_revoked).toBe(true);
  });

  it("rejects a revoked key in the Durable Object even while the index still routes it", async () => {
    const org = await newOrg();
    const k = await mintKey(org.api_key, { scopes: ["observations:write"] });
    await inOrg(org.org_id, (o) => {
      o.db.run("UPDATE api_keys SET status = 'revoked' WHERE key_id = ?", k.key_id);
    });
    expectError(await call("GET", "/v1/principal", { key: k.key }), 401, "UNAUTHENTICATED");
  });

  it("mints a key for a new member agent principal by default, or for an existing principal", async () => {
    const org = await newOrg();
    const k = await mintKey(org.api_key, { scopes: ["observations:write"] });
    const p = await call("GET", "/v1/principal", { key: k.key });
    expect(p.json.data.role).toBe("member");
    const second = await mintKey(org.api_key, { scopes: ["observations:write"], principal_id: k.principal_id });
    expect(second.principal_id).toBe(k.principal_id);
    const unknown = await call("POST", "/v1/keys", {
      key: org.api_key,
      body: { label: "x", scopes: ["*"], principal_id: "prn_" + "1".repeat(32) },
    });
    expectError(unknown, 400, "UNRESOLVED_REFERENCE");
  });

  it("lets a member manage only its own keys and never mint for another principal", async () => {
    const org = await newOrg();
    const member = await mintKey(org.api_key, { scopes: ["keys:manage"] });
    const owner = await call("GET", "/v1/principal", { key: org.api_key });
    const forOwner = await call("POST", "/v1/keys", {
      key: member.key,
      body: { label: "x", scopes: ["keys:manage"], principal_id: owner.json.data.principal_id },
    });
    expectError(forOwner, 400, "UNRESOLVED_REFERENCE");
    const list = await call("GET", "/v1/keys", { key: member.key });
    expect(list.json.data.keys.every((k: any) => k.principal_id === member.principal_id)).toBe(true);
    expectError(await call("DELETE", `/v1/keys/${owner.json.data.key_id}`, { key: member.key }), 404, "NOT_FOUND");
  });

  it("pages the key list with an opaque cursor", async () => {
    const org = await newOrg();
    for (let i = 0; i < 3; i++) await mintKey(org.api_key, { scopes: ["observations:write"] });
    const p1 = await call("GET", "/v1/keys?limit=2", { key: org.api_key });
    expect(p1.json.data.keys).toHaveLength(2);
    expect(p1.json.data.has_more).toBe(true);
    const p2 = await call("GET", `/v1/keys?limit=2&after=${p1.json.data.next_cursor}`, { key: org.api_key });
    expect(p2.json.data.keys).toHaveLength(2);
    expect(p2.json.data.has_more).toBe(false);
    const ids = [...p1.json.data.keys, ...p2.json.data.keys].map((k: any) => k.key_id);
    expect(new Set(ids).size).toBe(4);
    expectError(await call("GET", "/v1/keys?after=garbage", { key: org.api_key }), 400, "VALIDATION_ERROR");
    expectError(await call("GET", "/v1/keys?limit=0", { key: org.api_key }), 400, "VALIDATION_ERROR");
  });

  it("writes an audit row for key creation and revocation but no event", async () => {
    const org = await newOrg();
    const k = await mintKey(org.api_key, { scopes: ["observations:write"] });
    await call("DELETE", `/v1/keys/${k.key_id}`, { key: org.api_key });
    const rows = await inOrg(org.org_id, (o) => ({
      audit: o.db
        .all<{ action: string }>("SELECT action FROM audit_log WHERE resource_id = ?", k.key_id)
        .map((r) => r.action),
      events: o.db.first<{ n: number }>("SELECT count(*) AS n FROM events")!.n,
    }));
    expect(rows.audit).toEqual(["key.created", "key.revoked"]);
    expect(rows.events).toBe(0);
  });
});

describe("principals directory", () => {
  it("is for owner or admin only", async () => {
    const org = await newOrg();
    const member = await mintKey(org.api_key, { scopes: ["principals:read"] });
    const denied = await call("GET", "/v1/principals", { key: member.key });
    expectError(denied, 403, "FORBIDDEN");
    const r = await call("GET", "/v1/principals", { key: org.api_key });
    expect(r.status).toBe(200);
    expect(r.json.data.principals.map((p: any) => p.role).sort()).toEqual(["member", "owner"]);
    expect(r.text).not.toMatch(/svc_sk_|password/);
  });
});

describe("readiness", () => {
  it("reports applied and expected migrations, checks and capabilities when ready", async () => {
    const r = await call("GET", "/readyz");
    expect(r.status).toBe(200);
    expect(r.json.data.ready).toBe(true);
    expect(r.json.data.schema.applied).toBe(r.json.data.schema.expected);
    // The test Worker runs wrangler.toml's MAINTENANCE_INTERVAL_SECONDS = "15": the alarm drives delivery.
    expect(r.json.data.capabilities).toEqual({
      background_repair: "enabled",
      maintenance_interval_seconds: 15,
      vectors: true,
      model: false,
    });
    expect(r.json.data.checks).toEqual({ index_db: "ok", org_store: "ok" });
  });

  it("answers 503 NOT_READY with the whole body in meta when migrations differ", async () => {
    await env.INDEX_DB.prepare("DELETE FROM d1_migrations").run();
    try {
      const r = await call("GET", "/readyz");
      expectError(r, 503, "NOT_READY");
      expect(r.json.meta.ready).toBe(false);
      expect(r.json.meta.schema.index_db.applied).toBe(0);
      expect(r.json.meta.capabilities.background_repair).toBe("enabled");
      expect(r.json.meta.runtime).toBe("workerd");
      expect(r.json.meta.revision).toBe(REVISION);
    } finally {
      for (const [i, name] of D1_MIGRATIONS.entries())
        await env.INDEX_DB.prepare("INSERT INTO d1_migrations (id, name) VALUES (?, ?)")
          .bind(i + 1, name)
          .run();
    }
  });

  it("knows every D1 migration file of schema/d1", () => {
    expect([...D1_MIGRATIONS]).toEqual(env.TEST_D1_MIGRATION_FILES);
  });
});

describe("Db", () => {
  it("reads rows as the runtime's toArray does: same keys in the same order, the later of two same-named columns, every value type", async () => {
    const org = await newOrg();
    const out = await inOrg(org.org_id, (store) => {
      const q =
        "SELECT 1 AS a, 'x' AS b, NULL AS c, 2.5 AS d, X'0102' AS e, 'first' AS dup, 'second' AS dup, 'ü🎉' AS f UNION ALL SELECT 2, 'y', 3, -1, X'', 'p', 'q', ''";
      const expected = store.db.sql.exec(q).toArray();
      const rows = store.db.all<Record<string, unknown>>(q);
      return {
        expected,
        rows,
        first: store.db.first(q),
        none: store.db.first("SELECT 1 AS a WHERE 0"),
        empty: store.db.all("SELECT 1 AS a WHERE 0"),
        keys: rows.map((r) => Object.keys(r)),
        expectedKeys: expected.map((r) => Object.keys(r)),
      };
    });
    expect(out.rows).toEqual(out.expected);
    expect(out.keys).toEqual(out.expectedKeys);
    expect(out.rows[0]).toMatchObject({ a: 1, b: "x", c: null, d: 2.5, dup: "second", f: "ü🎉" });
    expect(new Uint8Array(out.rows[0].e as ArrayBuffer)).toEqual(new Uint8Array([1, 2]));
    expect(out.first).toEqual(out.expected[0]);
    expect(out.none).toBeNull();
    expect(out.empty).toEqual([]);
  });
});
