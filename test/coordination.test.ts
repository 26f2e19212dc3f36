import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { clock } from "../src/http/clock";
import { call, expectError, inOrg, mintKey, newOrg, orgStub } from "./helpers";

const cp = (extra: Record<string, unknown> = {}) => ({
  subject_id: "task-1",
  agent_id: "planner",
  kind: "task_state",
  state: JSON.stringify({ step: 1 }),
  ttl_seconds: 3600,
  ...extra,
});

describe("checkpoints", () => {
  it("upserts on subject + agent + kind: 201 first, then 200 updated with the same id", async () => {
    const org = await newOrg();
    const a = await call("POST", "/v1/checkpoints", { key: org.api_key, body: cp() });
    expect(a.status).toBe(201);
    expect(a.json.data).toMatchObject({
      updated: false,
      subject_id: "task-1",
      agent_id: "planner",
      kind: "task_state",
      ttl_seconds: 3600,
    });
    expect(a.json.data.checkpoint_id).toMatch(/^chk_[0-9a-f]{32}$/);
    const b = await call("POST", "/v1/checkpoints", { key: org.api_key, body: cp({ state: "two" }) });
    expect(b.status).toBe(200);
    expect(b.json.data).toMatchObject({ updated: true, checkpoint_id: a.json.data.checkpoint_id, state: "two" });
    const other = await call("POST", "/v1/checkpoints", { key: org.api_key, body: cp({ agent_id: "coder" }) });
    expect(other.status).toBe(201);
    expect(other.json.data.checkpoint_id).not.toBe(a.json.data.checkpoint_id);
    const g = await call("GET", "/v1/checkpoints?subject_id=task-1&kind=task_state&agent_id=planner", {
      key: org.api_key,
    });
    expect(g.json.data).toMatchObject({ checkpoint_id: a.json.data.checkpoint_id, state: "two" });
    const byId = await call("GET", `/v1/checkpoints/${a.json.data.checkpoint_id}`, { key: org.api_key });
    expect(byId.json.data.state).toBe("two");
  });

  it("validates ttl, state length, kind and the required query", async () => {
    const org = await newOrg();
    const bad = [
      cp({ ttl_seconds: 59 }),
      cp({ ttl_seconds: 2_592_001 }),
      cp({ ttl_seconds: 60.5 }),
      cp({ state: "x".repeat(64_001) }),
      cp({ kind: "diary" }),
      cp({ agent_id: undefined }),
      cp({ subject_id: "" }),
      cp({ state: { a: 1 } }),
    ];
    for (const body of bad)
      expectError(await call("POST", "/v1/checkpoints", { key: org.api_key, body }), 400, "VALIDATION_ERROR");
    expect(
      (
        await call("POST", "/v1/checkpoints", {
          key: org.api_key,
          body: cp({ ttl_seconds: 60, state: "x".repeat(64_000) }),
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await call("POST", "/v1/checkpoints", {
          key: org.api_key,
          body: cp({ kind: "cursor", ttl_seconds: 2_592_000 }),
        })
      ).status,
    ).toBe(201);
    for (const q of ["kind=task_state", "subject_id=task-1", "subject_id=task-1&kind=diary"])
      expectError(await call("GET", `/v1/checkpoints?${q}`, { key: org.api_key }), 400, "VALIDATION_ERROR");
  });

  it("reads as 404 the moment it expires, before any sweep", async () => {
    const org = await newOrg();
    const a = await call("POST", "/v1/checkpoints", { key: org.api_key, body: cp({ ttl_seconds: 60 }) });
    clock.advance(61_000);
    expectError(
      await call("GET", "/v1/checkpoints?subject_id=task-1&kind=task_state", { key: org.api_key }),
      404,
      "NOT_FOUND",
    );
    expectError(
      await call("GET", `/v1/checkpoints/${a.json.data.checkpoint_id}`, { key: org.api_key }),
      404,
      "NOT_FOUND",
    );
    // A write after expiry starts a new checkpoint.
    const b = await call("POST", "/v1/checkpoints", { key: org.api_key, body: cp() });
    expect(b.status).toBe(201);
    expect(b.json.data.checkpoint_id).not.toBe(a.json.data.checkpoint_id);
  });

  it("deletes outright, by its writer only; others and other organizations get 404", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const peer = await mintKey(org.api_key, { scopes: ["*"] });
    const a = await call("POST", "/v1/checkpoints", { key: org.api_key, body: cp({ kind: "cursor" }) });
    const id = a.json.data.checkpoint_id;
    for (const key of [peer.key, other.api_key]) {
      expectError(await call("GET", `/v1/checkpoints/${id}`, { key }), 404, "NOT_FOUND");
      expectError(await call("DELETE", `/v1/checkpoints/${id}`, { key }), 404, "NOT_FOUND");
    }
    expectError(
      await call("GET", "/v1/checkpoints?subject_id=task-1&kind=cursor", { key: peer.key }),
      404,
      "NOT_FOUND",
    );
    expectError(
      await call("POST", "/v1/checkpoints", { key: peer.key, body: cp({ kind: "cursor" }) }),
      409,
      "CONFLICT",
    );
    expect((await call("DELETE", `/v1/checkpoints/${id}`, { key: org.api_key })).status).toBe(200);
    expectError(await call("GET", `/v1/checkpoints/${id}`, { key: org.api_key }), 404, "NOT_FOUND");
    const n = await inOrg(org.org_id, (o) => o.db.first<{ n: number }>("SELECT count(*) AS n FROM checkpoints")!.n);
    expect(n).toBe(0);
  });

  it("needs the checkpoint scopes and emits no events, only audit entries", async () => {
    const org = await newOrg();
    const ro = await mintKey(org.api_key, { scopes: ["checkpoints:read"] });
    expectError(await call("POST", "/v1/checkpoints", { key: ro.key, body: cp() }), 403, "FORBIDDEN");
    await call("POST", "/v1/checkpoints", { key: org.api_key, body: cp() });
    const counts = await inOrg(org.org_id, (o) =>
      o.db.first<{ e: number; a: number }>(
        "SELECT (SELECT count(*) FROM events) AS e, (SELECT count(*) FROM audit_log WHERE action = 'checkpoint.created') AS a",
      )!,
    );
    expect(counts).toEqual({ e: 0, a: 1 });
  });
});

describe("leases", () => {
  const res = { resource_type: "repo", resource_id: "svc/main", ttl_seconds: 60 };

  it("acquires (201), renews for the holder (200, same id), 409s another principal, frees on release", async () => {
    const org = await newOrg();
    const other = await mintKey(org.api_key, { scopes: ["*"] });
    const a = await call("POST", "/v1/leases", { key: org.api_key, body: res });
    expect(a.status).toBe(201);
    expect(a.json.data.lease_id).toMatch(/^lse_[0-9a-f]{32}$/);
    clock.advance(10_000);
    const renew = await call("POST", "/v1/leases", { key: org.api_key, body: res });
    expect(renew.status).toBe(200);
    expect(renew.json.data).toMatchObject({ lease_id: a.json.data.lease_id, renewed: true });
    expect(renew.json.data.expires_at > a.json.data.expires_at).toBe(true);
    expectError(await call("POST", "/v1/leases", { key: other.key, body: res }), 409, "CONFLICT");
    expectError(await call("DELETE", `/v1/leases/${a.json.data.lease_id}`, { key: other.key }), 403, "FORBIDDEN");
    const rel = await call("DELETE", `/v1/leases/${a.json.data.lease_id}`, { key: org.api_key });
    expect(rel.status).toBe(200);
    expect(rel.json.data).toMatchObject({ released: true, already_released: false });
    const b = await call("POST", "/v1/leases", { key: other.key, body: res });
    expect(b.status).toBe(201);
    const ev = await call("GET", "/v1/events?kind=lease.acquired", { key: org.api_key });
    expect(ev.json.data.events.map((e: any) => e.resource_id)).toEqual([
      a.json.data.lease_id,
      a.json.data.lease_id,
      b.json.data.lease_id,
    ]);
  });

  it("lets another principal take a lease once it expired", async () => {
    const org = await newOrg();
    const other = await mintKey(org.api_key, { scopes: ["*"] });
    await call("POST", "/v1/leases", { key: org.api_key, body: { ...res, ttl_seconds: 10 } });
    clock.advance(11_000);
    expect((await call("POST", "/v1/leases", { key: other.key, body: res })).status).toBe(201);
  });

  it("gives exactly one of two racing principals the lease", async () => {
    const org = await newOrg();
    const keys = await Promise.all([mintKey(org.api_key, { scopes: ["*"] }), mintKey(org.api_key, { scopes: ["*"] })]);
    for (let round = 0; round < 5; round++) {
      const body = { ...res, resource_id: `race-${round}` };
      const results = await Promise.all(keys.map((k) => call("POST", "/v1/leases", { key: k.key, body })));
      expect(results.map((r) => r.status).sort()).toEqual([201, 409]);
    }
  });

  it("validates the body", async () => {
    const org = await newOrg();
    for (const body of [
      { ...res, ttl_seconds: 9 },
      { ...res, ttl_seconds: 86_401 },
      { ...res, resource_id: "" },
      { resource_type: "x", ttl_seconds: 60 },
    ])
      expectError(await call("POST", "/v1/leases", { key: org.api_key, body }), 400, "VALIDATION_ERROR");
  });

  it("force-releases for owners and admins only, and 404s foreign or unknown leases", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const member = await mintKey(org.api_key, { scopes: ["*"] });
    const a = await call("POST", "/v1/leases", { key: member.key, body: res });
    const id = a.json.data.lease_id;
    expectError(await call("POST", `/v1/leases/${id}/force-release`, { key: member.key }), 403, "FORBIDDEN");
    expectError(await call("POST", `/v1/leases/${id}/force-release`, { key: other.api_key }), 404, "NOT_FOUND");
    expectError(await call("DELETE", `/v1/leases/${id}`, { key: other.api_key }), 404, "NOT_FOUND");
    clock.advance(5_000);
    const from = clock.nowMs();
    const f = await call("POST", `/v1/leases/${id}/force-release`, { key: org.api_key });
    expect(f.status).toBe(200);
    expect(Date.parse(f.json.data.released_at)).toBeGreaterThanOrEqual(from);
    expect(Date.parse(f.json.data.released_at)).toBeLessThanOrEqual(clock.nowMs());
    expect((await call("POST", "/v1/leases", { key: org.api_key, body: res })).status).toBe(201);
  });

  it("lists unreleased, unexpired leases with an opaque cursor", async () => {
    const org = await newOrg();
    for (let i = 0; i < 3; i++)
      await call("POST", "/v1/leases", {
        key: org.api_key,
        body: { ...res, resource_id: `r${i}`, ttl_seconds: 100 + i * 100 },
      });
    const released = await call("POST", "/v1/leases", { key: org.api_key, body: { ...res, resource_id: "gone" } });
    await call("DELETE", `/v1/leases/${released.json.data.lease_id}`, { key: org.api_key });
    const p1 = await call("GET", "/v1/leases?limit=2", { key: org.api_key });
    expect(p1.json.data.leases).toHaveLength(2);
    const p2 = await call("GET", `/v1/leases?limit=2&after=${p1.json.data.next_cursor}`, { key: org.api_key });
    expect(p2.json.data.leases.map((l: any) => l.resource_id)).toEqual(["r2"]);
    clock.advance(150_000);
    const later = await call("GET", "/v1/leases", { key: org.api_key });
    expect(later.json.data.leases.map((l: any) => l.resource_id)).toEqual(["r1", "r2"]);
  });
});

describe("expiry alarm", () => {
  it("sweeps expired checkpoints and leases and re-arms for the next expiry", async () => {
    const org = await newOrg();
    await call("POST", "/v1/checkpoints", { key: org.api_key, body: cp({ ttl_seconds: 60 }) });
    await call("POST", "/v1/checkpoints", { key: org.api_key, body: cp({ agent_id: "late", ttl_seconds: 600 }) });
    await call("POST", "/v1/leases", {
      key: org.api_key,
      body: { resource_type: "r", resource_id: "1", ttl_seconds: 30 },
    });
    const stub = orgStub(org.org_id);
    const armed = await inOrg(org.org_id, async (o) => (o as any).ctx.storage.getAlarm());
    expect(armed).not.toBeNull();
    clock.advance(120_000);
    expect(await runDurableObjectAlarm(stub as unknown as DurableObjectStub)).toBe(true);
    const state = await inOrg(org.org_id, async (o) => ({
      checkpoints: o.db.all<{ agent_id: string }>("SELECT agent_id FROM checkpoints").map((r) => r.agent_id),
      liveLeases: o.db.first<{ n: number }>("SELECT count(*) AS n FROM leases WHERE released_at IS NULL")!.n,
      next: await (o as any).ctx.storage.getAlarm(),
    }));
    expect(state.checkpoints).toEqual(["late"]);
    expect(state.liveLeases).toBe(0);
    expect(state.next).not.toBeNull();
    clock.advance(600_000);
    await runDurableObjectAlarm(stub as unknown as DurableObjectStub);
    const after = await inOrg(org.org_id, async (o) => ({
      n: o.db.first<{ n: number }>("SELECT count(*) AS n FROM checkpoints")!.n,
      next: await (o as any).ctx.storage.getAlarm(),
    }));
    expect(after).toEqual({ n: 0, next: null });
  });
});

describe("handoffs", () => {
  it("offers to a principal; only the recipient resolves; events follow; resolving twice is 400", async () => {
    const org = await newOrg();
    const bob = await mintKey(org.api_key, { scopes: ["*"] });
    const carol = await mintKey(org.api_key, { scopes: ["*"] });
    const h = await call("POST", "/v1/handoffs", {
      key: org.api_key,
      body: { to_principal_id: bob.principal_id, note: "take the deploy" },
    });
    expect(h.status).toBe(201);
    expect(h.json.data).toMatchObject({
      status: "pending",
      to_principal_id: bob.principal_id,
      note: "take the deploy",
    });
    const id = h.json.data.handoff_id;
    expect(id).toMatch(/^hnd_[0-9a-f]{32}$/);
    expect(
      (await call("GET", "/v1/handoffs", { key: bob.key })).json.data.handoffs.map((x: any) => x.handoff_id),
    ).toEqual([id]);
    expect((await call("GET", "/v1/handoffs", { key: carol.key })).json.data.handoffs).toEqual([]);
    expectError(
      await call("POST", `/v1/handoffs/${id}/resolve`, { key: org.api_key, body: { status: "accepted" } }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(
      await call("POST", `/v1/handoffs/${id}/resolve`, { key: carol.key, body: { status: "accepted" } }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(
      await call("POST", `/v1/handoffs/${id}/resolve`, { key: bob.key, body: { status: "maybe" } }),
      400,
      "VALIDATION_ERROR",
    );
    const ok = await call("POST", `/v1/handoffs/${id}/resolve`, { key: bob.key, body: { status: "accepted" } });
    expect(ok.json.data).toMatchObject({ status: "accepted" });
    expectError(
      await call("POST", `/v1/handoffs/${id}/resolve`, { key: bob.key, body: { status: "rejected" } }),
      400,
      "VALIDATION_ERROR",
    );
    expect((await call("GET", "/v1/handoffs", { key: bob.key })).json.data.handoffs).toEqual([]);
    const created = await call("GET", "/v1/events?kind=handoff.created", { key: org.api_key });
    const accepted = await call("GET", "/v1/events?kind=handoff.accepted", { key: org.api_key });
    expect(created.json.data.events.map((e: any) => e.resource_id)).toEqual([id]);
    expect(accepted.json.data.events.map((e: any) => e.resource_id)).toEqual([id]);
    expect(created.text).not.toContain("take the deploy");
    const h2 = await call("POST", "/v1/handoffs", { key: org.api_key, body: { to_principal_id: bob.principal_id } });
    await call("POST", `/v1/handoffs/${h2.json.data.handoff_id}/resolve`, {
      key: bob.key,
      body: { status: "rejected" },
    });
    expect((await call("GET", "/v1/events?kind=handoff.rejected", { key: org.api_key })).json.data.events).toHaveLength(
      1,
    );
  });

  it("validates recipient, context and checkpoint references", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const bob = await mintKey(org.api_key, { scopes: ["*"] });
    const me = (await call("GET", "/v1/principal", { key: org.api_key })).json.data.principal_id;
    const foreignPrincipal = (await call("GET", "/v1/principal", { key: other.api_key })).json.data.principal_id;
    expectError(
      await call("POST", "/v1/handoffs", { key: org.api_key, body: { to_principal_id: me } }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(await call("POST", "/v1/handoffs", { key: org.api_key, body: {} }), 400, "VALIDATION_ERROR");
    expectError(
      await call("POST", "/v1/handoffs", { key: org.api_key, body: { to_principal_id: foreignPrincipal } }),
      400,
      "UNRESOLVED_REFERENCE",
    );
    const bobRun = await call("POST", "/v1/context/compile", { key: bob.key, body: {} });
    expectError(
      await call("POST", "/v1/handoffs", {
        key: org.api_key,
        body: { to_principal_id: bob.principal_id, context_id: bobRun.json.data.context_id },
      }),
      400,
      "UNRESOLVED_REFERENCE",
    );
    expectError(
      await call("POST", "/v1/handoffs", {
        key: org.api_key,
        body: { to_principal_id: bob.principal_id, checkpoint_id: "chk_" + "0".repeat(32) },
      }),
      400,
      "UNRESOLVED_REFERENCE",
    );
    expectError(
      await call("POST", `/v1/handoffs/hnd_${"0".repeat(32)}/resolve`, { key: bob.key, body: { status: "accepted" } }),
      404,
      "NOT_FOUND",
    );
  });

  it("delegates its context run and checkpoint to the recipient while pending or accepted", async () => {
    const org = await newOrg();
    const bob = await mintKey(org.api_key, { scopes: ["*"] });
    const o = await call("POST", "/v1/observations", {
      key: org.api_key,
      body: { subject_id: "s", kind: "note", content: "x", source: { type: "t" } },
    });
    const priv = await call("POST", "/v1/observations", {
      key: org.api_key,
      body: { subject_id: "s", kind: "note", content: "y", source: { type: "t" }, visibility: "private" },
    });
    const c = await call("POST", "/v1/consolidations", {
      key: org.api_key,
      body: {
        subject_id: "s",
        claims: [
          {
            kind: "fact",
            statement: "lynx shared fact",
            sources: [{ observation_id: o.json.data.observation_id, relation: "supports" }],
          },
          {
            kind: "fact",
            statement: "lynx private fact",
            sources: [{ observation_id: priv.json.data.observation_id, relation: "supports" }],
          },
        ],
      },
    });
    const [shared, secret] = c.json.data.claims.map((x: any) => x.claim_id);
    const run = await call("POST", "/v1/context/compile", { key: org.api_key, body: { query: "lynx" } });
    const ctx = run.json.data.context_id;
    expect(run.json.data.items).toHaveLength(2);
    const chk = await call("POST", "/v1/checkpoints", { key: org.api_key, body: cp() });
    const chkId = chk.json.data.checkpoint_id;
    expectError(await call("GET", `/v1/context/${ctx}`, { key: bob.key }), 404, "NOT_FOUND");
    expectError(await call("GET", `/v1/checkpoints/${chkId}`, { key: bob.key }), 404, "NOT_FOUND");
    const h = await call("POST", "/v1/handoffs", {
      key: org.api_key,
      body: { to_principal_id: bob.principal_id, context_id: ctx, checkpoint_id: chkId },
    });
    expect(h.status).toBe(201);
    const read = await call("GET", `/v1/context/${ctx}`, { key: bob.key });
    expect(read.status).toBe(200);
    expect(read.json.data.items.map((i: any) => i.claim_id)).toEqual([shared]);
    expect(read.text).not.toContain(secret);
    expect((await call("GET", `/v1/checkpoints/${chkId}`, { key: bob.key })).json.data.state).toBe(cp().state);
    await call("POST", `/v1/handoffs/${h.json.data.handoff_id}/resolve`, {
      key: bob.key,
      body: { status: "rejected" },
    });
    expectError(await call("GET", `/v1/context/${ctx}`, { key: bob.key }), 404, "NOT_FOUND");
    expectError(await call("GET", `/v1/checkpoints/${chkId}`, { key: bob.key }), 404, "NOT_FOUND");
  });
});
