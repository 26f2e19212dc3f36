// Revocation reaches delegations and created principals, key
// revocation follows the minting role rule, ill-formed Unicode is refused everywhere, handoffs carry
// only the sender's own runs and checkpoints, the MCP Origin check, id-form routing and the early 413.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { originAllowed } from "../src/mcp/routes";
import { ROUTES } from "../src/routes";
import { handle } from "../src/worker";
import { appendOk, call, consolidateOk, expectError, inOrg, mintKey, newOrg, obs, supports } from "./helpers";

const ZEROS = "0".repeat(32);

async function withRole(ownerKey: string, role: "admin" | "member" | "reader" | "owner", scopes: unknown = ["*"]) {
  const k = await mintKey(ownerKey, { scopes });
  if (role !== "member") {
    const m = await call("POST", "/v1/memberships", { key: ownerKey, body: { principal_id: k.principal_id, role } });
    expect(m.status, m.text).toBe(201);
  }
  return k;
}

/** Alice's private claim on subject "alpha", and a helper telling whether a key can see it. */
async function privateAlpha() {
  const org = await newOrg();
  const alice = await mintKey(org.api_key, { scopes: ["*"] });
  const o = await appendOk(alice.key, obs("alpha", "alpha secret", { visibility: "private" }));
  const [claim] = await consolidateOk(alice.key, "alpha", [
    { kind: "fact", statement: "alpha private fact", sources: supports(o) },
  ]);
  const sees = async (key: string) => {
    const r = await call("GET", `/v1/claims/${claim}/evidence`, { key });
    if (r.status !== 200 && r.status !== 404 && r.status !== 401) throw new Error(r.text);
    return r.status === 200;
  };
  return { org, alice, claim, sees };
}

const grant = async (key: string, principalId: string, subject = "alpha") => {
  const g = await call("POST", "/v1/grants", {
    key,
    body: { principal_id: principalId, permissions: ["read"], subject },
  });
  expect(g.status, g.text).toBe(201);
  return g.json.data.grant_id as string;
};

const orgMembershipOf = async (ownerKey: string, principalId: string) =>
  (await call("GET", "/v1/memberships?limit=200", { key: ownerKey })).json.data.memberships.find(
    (m: any) => m.principal_id === principalId && m.workspace_id === null,
  ).membership_id as string;

describe("revocation reaches what a principal delegated or created (item 2)", () => {
  it("revoking a grant revokes the grants delegated from it, transitively, on the next request", async () => {
    const w = await privateAlpha();
    const bob = await mintKey(w.org.api_key, { scopes: ["*"] });
    const carol = await mintKey(w.org.api_key, { scopes: ["*"] });
    const dave = await mintKey(w.org.api_key, { scopes: ["*"] });
    const g1 = await grant(w.org.api_key, bob.principal_id);
    const g2 = await grant(bob.key, carol.principal_id);
    const g3 = await grant(carol.key, dave.principal_id);
    expect([await w.sees(bob.key), await w.sees(carol.key), await w.sees(dave.key)]).toEqual([true, true, true]);
    const listed = (await call("GET", "/v1/grants", { key: w.org.api_key })).json.data.grants;
    expect(listed.map((g: any) => [g.grant_id, g.delegated_from])).toEqual([
      [g1, null],
      [g2, g1],
      [g3, g2],
    ]);

    const r = await call("DELETE", `/v1/grants/${g1}`, { key: w.org.api_key });
    expect(r.status, r.text).toBe(200);
    expect(r.json.data).toMatchObject({ status: "revoked", delegated_revoked: 2 });
    expect([await w.sees(bob.key), await w.sees(carol.key), await w.sees(dave.key)]).toEqual([false, false, false]);
    const after = (await call("GET", "/v1/grants", { key: w.org.api_key })).json.data.grants;
    expect(after.map((g: any) => g.status)).toEqual(["revoked", "revoked", "revoked"]);
  });

  it("revoking a re-shared grant leaves the grant it came from alone", async () => {
    const w = await privateAlpha();
    const bob = await mintKey(w.org.api_key, { scopes: ["*"] });
    const carol = await mintKey(w.org.api_key, { scopes: ["*"] });
    await grant(w.org.api_key, bob.principal_id);
    const g2 = await grant(bob.key, carol.principal_id);
    expect((await call("DELETE", `/v1/grants/${g2}`, { key: bob.key })).status).toBe(200);
    expect([await w.sees(bob.key), await w.sees(carol.key)]).toEqual([true, false]);
  });

  it("removing a member revokes the keys of the principals it created (transitively) and the grants it delegated", async () => {
    const w = await privateAlpha();
    const bob = await mintKey(w.org.api_key, { scopes: ["*"] });
    const carol = await mintKey(w.org.api_key, { scopes: ["*"] });
    await grant(w.org.api_key, bob.principal_id);
    // Bob mints keys for new principals he controls, and re-shares to one of them and to carol.
    const sub = await mintKey(bob.key, { scopes: ["*"] });
    const subsub = await mintKey(sub.key, { scopes: ["*"] });
    await grant(bob.key, sub.principal_id);
    await grant(bob.key, carol.principal_id);
    await grant(sub.key, subsub.principal_id);
    expect([await w.sees(sub.key), await w.sees(subsub.key), await w.sees(carol.key)]).toEqual([true, true, true]);
    const created = await inOrg(w.org.org_id, (o) =>
      o.db.first<{ created_by: string }>("SELECT created_by FROM principals WHERE principal_id = ?", sub.principal_id),
    );
    expect(created?.created_by).toBe(bob.principal_id);

    const d = await call("DELETE", `/v1/memberships/${await orgMembershipOf(w.org.api_key, bob.principal_id)}`, {
      key: w.org.api_key,
    });
    expect(d.status, d.text).toBe(200);
    expect(d.json.data).toMatchObject({ removed: true, keys_revoked: 3, grants_revoked: 4 });
    for (const k of [bob, sub, subsub])
      expectError(await call("GET", "/v1/principal", { key: k.key }), 401, "UNAUTHENTICATED");
    expect(await w.sees(carol.key)).toBe(false);
    // Carol's own standing is untouched.
    expect((await call("GET", "/v1/principal", { key: carol.key })).status).toBe(200);
    // All of it in the removal's one transaction: one audit entry names the counts.
    const audit = await inOrg(w.org.org_id, (o) =>
      o.db.all<{ action: string; detail: string }>(
        "SELECT action, detail FROM audit_log WHERE action = 'membership.removed'",
      ),
    );
    expect(audit).toHaveLength(1);
    expect(JSON.parse(audit[0].detail)).toMatchObject({ keys_revoked: 3, grants_revoked: 4 });
  });

  it("readers cannot create principals at all (POST /v1/keys is a write)", async () => {
    const org = await newOrg();
    const reader = await withRole(org.api_key, "reader", ["keys:manage"]);
    expectError(
      await call("POST", "/v1/keys", { key: reader.key, body: { label: "sub", scopes: ["keys:manage"] } }),
      403,
      "FORBIDDEN",
    );
  });
});

describe("key revocation follows the minting role rule (item 5)", () => {
  it("an admin cannot revoke an owner's key; it can revoke a member's", async () => {
    const org = await newOrg();
    const admin = await withRole(org.api_key, "admin");
    const member = await mintKey(org.api_key, { scopes: ["*"] });
    const ownerKeyId = (await call("GET", "/v1/principal", { key: org.api_key })).json.data.key_id;
    expectError(await call("DELETE", `/v1/keys/${ownerKeyId}`, { key: admin.key }), 403, "FORBIDDEN");
    expect((await call("GET", "/v1/principal", { key: org.api_key })).status).toBe(200);
    const second = await withRole(org.api_key, "owner");
    expectError(await call("DELETE", `/v1/keys/${second.key_id}`, { key: admin.key }), 403, "FORBIDDEN");
    expect((await call("DELETE", `/v1/keys/${member.key_id}`, { key: admin.key })).status).toBe(200);
    // An owner may revoke another owner's key, and an admin its own.
    expect((await call("DELETE", `/v1/keys/${second.key_id}`, { key: org.api_key })).status).toBe(200);
    expect((await call("DELETE", `/v1/keys/${admin.key_id}`, { key: admin.key })).status).toBe(200);
  });
});

describe("ill-formed Unicode is refused in every text field (item 7)", () => {
  const lone = "a\ud800b";
  it("answers 400 naming the field, for bodies of every route", async () => {
    const org = await newOrg();
    const bob = await mintKey(org.api_key, { scopes: ["*"] });
    const o = await appendOk(org.api_key, obs("s", "fine"));
    const cases: [string, string, unknown, string][] = [
      ["POST", "/v1/observations", obs("s", lone), "content"],
      ["POST", "/v1/observations", obs(lone, "x"), "subject_id"],
      ["POST", "/v1/observations", { ...obs("s", "x"), source: { type: "t", ref: "\udfff" } }, "source.ref"],
      [
        "POST",
        "/v1/consolidations",
        { subject_id: "s", claims: [{ kind: "fact", statement: lone, sources: supports(o) }] },
        "claims.0.statement",
      ],
      [
        "POST",
        "/v1/checkpoints",
        { subject_id: "s", agent_id: "a", kind: "cursor", state: lone, ttl_seconds: 60 },
        "state",
      ],
      ["POST", "/v1/handoffs", { to_principal_id: bob.principal_id, note: lone }, "note"],
      ["POST", "/v1/keys", { label: lone, scopes: ["*"] }, "label"],
      ["POST", "/v1/grants", { principal_id: bob.principal_id, permissions: ["read"], subject: lone }, "subject"],
      ["POST", "/v1/context/compile", { query: lone }, "query"],
      ["POST", "/v1/observations", { ...obs("s", "x"), ["k\ud800"]: 1 }, "k\ufffd"],
    ];
    for (const [method, path, body, field] of cases) {
      const r = await call(method, path, { key: org.api_key, body });
      expectError(r, 400, "VALIDATION_ERROR");
      expect(r.json.error.message, path).toContain(`"${field}"`);
      expect(r.json.error.message).toContain("Unicode");
    }
    // Nothing was written.
    const n = await inOrg(org.org_id, (o2) => o2.db.first<{ n: number }>("SELECT count(*) AS n FROM observations")!.n);
    expect(n).toBe(1);
    // Well-formed text outside the BMP (a surrogate pair) is fine.
    expect((await call("POST", "/v1/observations", { key: org.api_key, body: obs("s", "ok \u{1F600}") })).status).toBe(
      201,
    );
  });

  it("refuses it in MCP tool arguments and import lines too", async () => {
    const org = await newOrg();
    const rpc = await call("POST", "/mcp", {
      key: org.api_key,
      body: {
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: {
          name: "svc_remember",
          arguments: { subject_id: "s", kind: "note", content: lone, source: { type: "mcp" } },
        },
      },
      headers: { accept: "application/json" },
    });
    expect(rpc.status).toBe(200);
    expect(rpc.json.result.isError).toBe(true);
    expect(rpc.json.result.content[0].text).toMatch(/^VALIDATION_ERROR: .*"content".*Unicode/);
    const line = JSON.stringify({
      type: "observation",
      observation_id: "obs_" + ZEROS,
      subject_id: "s",
      project_id: null,
      kind: "note",
      content: lone,
      content_hash: "sha256:" + "0".repeat(64),
      source: { type: "t", ref: null },
      trust: "medium",
      visibility: "team",
      author_id: "prn_" + ZEROS,
      created_at: "2026-01-01T00:00:00.000Z",
      purged: false,
      purged_at: null,
    });
    const imp = await call("POST", "/v1/import", {
      key: org.api_key,
      raw: line + "\n",
      headers: { "content-type": "application/x-ndjson" },
    });
    expectError(imp, 400, "VALIDATION_ERROR");
    expect(imp.json.error.message).toMatch(/^Line 1: .*"content".*Unicode/);
  });
});

describe("handoffs carry only the sender's own run and checkpoint (item 10)", () => {
  it("a recipient cannot pass on what was handed to it, so a rejection ends every delegated read", async () => {
    const org = await newOrg();
    const bob = await mintKey(org.api_key, { scopes: ["*"] });
    const carol = await mintKey(org.api_key, { scopes: ["*"] });
    const ctx = (await call("POST", "/v1/context/compile", { key: org.api_key, body: {} })).json.data.context_id;
    const chk = (
      await call("POST", "/v1/checkpoints", {
        key: org.api_key,
        body: { subject_id: "s", agent_id: "a", kind: "cursor", state: "1", ttl_seconds: 600 },
      })
    ).json.data.checkpoint_id;
    const h1 = await call("POST", "/v1/handoffs", {
      key: org.api_key,
      body: { to_principal_id: bob.principal_id, context_id: ctx, checkpoint_id: chk },
    });
    expect(h1.status).toBe(201);
    expect((await call("GET", `/v1/context/${ctx}`, { key: bob.key })).status).toBe(200);
    expectError(
      await call("POST", "/v1/handoffs", {
        key: bob.key,
        body: { to_principal_id: carol.principal_id, context_id: ctx },
      }),
      400,
      "UNRESOLVED_REFERENCE",
    );
    expectError(
      await call("POST", "/v1/handoffs", {
        key: bob.key,
        body: { to_principal_id: carol.principal_id, checkpoint_id: chk },
      }),
      400,
      "UNRESOLVED_REFERENCE",
    );
    // A re-handoff recorded before this rule (or by any other path) grants nothing either.
    await inOrg(org.org_id, (o) =>
      o.db.run(
        `INSERT INTO handoffs (handoff_id, from_principal_id, to_principal_id, context_id, checkpoint_id, status, created_at)
       VALUES (?, ?, ?, ?, ?, 'pending', '2026-01-01T00:00:00.000Z')`,
        "hnd_" + ZEROS,
        bob.principal_id,
        carol.principal_id,
        ctx,
        chk,
      ),
    );
    expectError(await call("GET", `/v1/context/${ctx}`, { key: carol.key }), 404, "NOT_FOUND");
    expectError(await call("GET", `/v1/checkpoints/${chk}`, { key: carol.key }), 404, "NOT_FOUND");
    await call("POST", `/v1/handoffs/${h1.json.data.handoff_id}/resolve`, {
      key: bob.key,
      body: { status: "rejected" },
    });
    expectError(await call("GET", `/v1/context/${ctx}`, { key: bob.key }), 404, "NOT_FOUND");
    expectError(await call("GET", `/v1/checkpoints/${chk}`, { key: bob.key }), 404, "NOT_FOUND");
    // The sender's own run and checkpoint still go.
    const own = (await call("POST", "/v1/context/compile", { key: bob.key, body: {} })).json.data.context_id;
    expect(
      (
        await call("POST", "/v1/handoffs", {
          key: bob.key,
          body: { to_principal_id: carol.principal_id, context_id: own },
        })
      ).status,
    ).toBe(201);
  });
});

describe("MCP Origin check (item 12)", () => {
  it("never accepts an Origin because it equals Host (DNS rebinding)", async () => {
    const org = await newOrg();
    const ping = { jsonrpc: "2.0", id: 1, method: "ping" };
    const r = await call("POST", "/mcp", {
      key: org.api_key,
      body: ping,
      headers: { accept: "application/json", origin: "http://svc.test" },
    });
    expect(r.status).toBe(403);
  });

  it("allows configured origins everywhere and loopback origins only in local mode", () => {
    const deployed = { MCP_ALLOWED_ORIGINS: "https://app.example.com, https://other.example" };
    const local = { SVC_LOCAL_MODE: "true" };
    expect(originAllowed(undefined, deployed)).toBe(true);
    expect(originAllowed("https://app.example.com", deployed)).toBe(true);
    expect(originAllowed("https://app.example.com:8443", deployed)).toBe(false);
    expect(originAllowed("http://localhost:3000", deployed)).toBe(false);
    expect(originAllowed("https://evil.example.com", deployed)).toBe(false);
    for (const o of ["http://localhost:3000", "http://127.0.0.1:8787", "http://[::1]:9000", "https://localhost"])
      expect(originAllowed(o, local), o).toBe(true);
    for (const o of ["http://localhost.evil.com", "http://127.0.0.2", "null", "not a url", "http://svc.test"])
      expect(originAllowed(o, local), o).toBe(false);
    expect(originAllowed("http://localhost:3000", { SVC_LOCAL_MODE: "false" })).toBe(false);
  });
});

describe("routing: absent routes are 404, id segments match only their id form (item 13)", () => {
  // DESIGN's id table, written out independently of the router.
  const ID_OF: Record<string, string> = {
    observations: "obs_" + ZEROS,
    claims: "claim_" + ZEROS,
    context: "ctx_" + ZEROS,
    checkpoints: "chk_" + ZEROS,
    keys: "key_" + ZEROS,
    grants: "grt_" + ZEROS,
    memberships: "mbr_" + ZEROS,
    leases: "lse_" + ZEROS,
    handoffs: "hnd_" + ZEROS,
    webhooks: "whk_" + ZEROS,
    deliveries: "dlv_" + ZEROS,
    events: "evt_" + ZEROS,
    projects: "prj_" + ZEROS,
    subjects: "any subject",
    passkeys: "pk_" + ZEROS,
    policies: "pol_" + ZEROS,
    "claim-approvals": "apr_" + ZEROS,
    channels: "chn_" + ZEROS,
    "knowledge-releases": "rel_" + ZEROS,
    "legal-holds": "hold_" + ZEROS,
    "identity-mappings": "map_" + ZEROS,
    peers: "peer_" + ZEROS,
    workspaces: "wsp_" + ZEROS,
  };
  const idRoutes = ROUTES.filter((r) => r.path.includes(":id"));
  const fill = (path: string, id: (collection: string) => string) =>
    path.replace(
      /([^/]+)\/:[a-z_]+/g,
      (_, collection: string) => `${collection}/${encodeURIComponent(id(collection))}`,
    );

  it("knows the id form of every :id route", () => {
    for (const r of idRoutes)
      for (const [, c] of r.path.matchAll(/([^/]+)\/:[a-z_]+/g)) expect(ID_OF[c], r.path).toBeDefined();
  });

  it("routes well-formed ids (401 without a credential) and answers 404 for any other id", async () => {
    for (const r of idRoutes) {
      const good = await call(
        r.method,
        fill(r.path, (c) => ID_OF[c]),
      );
      expect(good.status, `${r.method} ${r.path}`).toBe(401);
      const collection = /([^/]+)\/:id/.exec(r.path)![1];
      if (collection === "subjects") continue;
      for (const bad of [
        "batch",
        ID_OF[collection].toUpperCase(),
        ID_OF[collection] + "0",
        "obs" + "_" + "g".repeat(32),
        ID_OF[collection].replace(/^[a-z]+_/, "xyz_"),
      ]) {
        const res = await call(
          r.method,
          fill(r.path, () => bad),
        );
        expectError(res, 404, "NOT_FOUND");
        expect(res.json.error.message).toBe("Unknown endpoint.");
      }
    }
  });

  it("SPEC's absent routes are 404 Unknown endpoint., not 405", async () => {
    for (const [method, path] of [
      ["POST", "/v1/observations/batch"],
      ["GET", "/v1/observations/batch"],
      ["POST", "/v1/webhooks/deliveries"],
      ["GET", "/v1/channel-releases"],
      ["GET", "/v1/webhook-subscriptions"],
      ["GET", "/v1/webhook-deliveries"],
      ["GET", "/v1/audit/events"],
      ["POST", "/v1/keys/current"],
    ]) {
      const r = await call(method, path);
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.json.error.message, `${method} ${path}`).toBe("Unknown endpoint.");
    }
    // A real path with a wrong method is still 405 (GET /v1/context/compile too), and "~" is the project id of unscoped memory.
    expectError(await call("POST", `/v1/observations/obs_${ZEROS}`), 405, "METHOD_NOT_ALLOWED");
    expectError(await call("GET", "/v1/context/compile"), 405, "METHOD_NOT_ALLOWED");
    expect((await call("GET", "/v1/projects/~/references")).status).toBe(401);
  });
});

describe("a declared content-length over the limit is 413 before any body byte is read (item 13)", () => {
  it("handle() answers a 2 MB declaration whose body never sends a byte", async () => {
    let pulled = 0;
    // highWaterMark 0: the stream is pulled only when someone reads it.
    const body = new ReadableStream<Uint8Array>(
      {
        pull: () => {
          pulled++;
          return new Promise(() => {});
        },
      },
      { highWaterMark: 0 },
    );
    const request = new Request("http://svc.test/v1/observations", {
      method: "POST",
      body,
      headers: {
        "content-type": "application/json",
        "content-length": String(2 * 1024 * 1024),
        authorization: "Bearer svc_sk_" + "0".repeat(64),
      },
    });
    const timeout = new Promise<"timeout">((resolve) => setTimeout(() => resolve("timeout"), 3_000));
    const res = await Promise.race([handle(request, env as any), timeout]);
    expect(res).not.toBe("timeout");
    const r = res as Response;
    expect(r.status).toBe(413);
    expect(((await r.json()) as any).error.code).toBe("PAYLOAD_TOO_LARGE");
    expect(pulled).toBe(0);
  });
});
