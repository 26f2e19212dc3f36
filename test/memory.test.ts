import { describe, expect, it } from "vitest";
import { clock } from "../src/http/clock";
import { claimRoutes, evidenceOf } from "../src/domains/memory/claims";
import { eventRoutes } from "../src/domains/events/routes";
import { getClaim } from "../src/domains/memory/records";
import { Db, Sql } from "../src/sql/db";
import type { Caller } from "../src/org/request";
import {
  append,
  appendOk,
  call,
  consolidateOk,
  expectError,
  holdBackgroundDrain,
  mintKey,
  newOrg,
  obs,
  supports,
  inOrg,
} from "./helpers";
import { LOW_WATER, RESERVE_BATCH } from "../src/org/reserved-ids";

describe("projects", () => {
  it("creates with create:true (201), resolves the same reference to the same id (200), 404s unknown", async () => {
    const org = await newOrg();
    const a = await call("POST", "/v1/projects/resolve", {
      key: org.api_key,
      body: { reference: "repo:x", create: true },
    });
    expect(a.status).toBe(201);
    expect(a.json.data.project_id).toMatch(/^prj_[0-9a-f]{32}$/);
    const b = await call("POST", "/v1/projects/resolve", { key: org.api_key, body: { reference: "repo:x" } });
    expect(b.status).toBe(200);
    expect(b.json.data).toMatchObject({ project_id: a.json.data.project_id, created: false });
    expectError(
      await call("POST", "/v1/projects/resolve", { key: org.api_key, body: { reference: "repo:none" } }),
      404,
      "NOT_FOUND",
    );
    expectError(
      await call("POST", "/v1/projects/resolve", { key: org.api_key, body: { reference: "" } }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(
      await call("POST", "/v1/projects/resolve", { key: org.api_key, body: { reference: "r", create: "yes" } }),
      400,
      "VALIDATION_ERROR",
    );
  });

  it("needs projects:create to create, and projects:resolve to resolve", async () => {
    const org = await newOrg();
    const k = await mintKey(org.api_key, { scopes: ["projects:resolve"] });
    const r = await call("POST", "/v1/projects/resolve", { key: k.key, body: { reference: "repo:y", create: true } });
    expectError(r, 403, "FORBIDDEN");
    expect(r.json.error.message).toContain('"projects:create"');
    const none = await mintKey(org.api_key, { scopes: ["observations:write"] });
    expectError(
      await call("POST", "/v1/projects/resolve", { key: none.key, body: { reference: "repo:y" } }),
      403,
      "FORBIDDEN",
    );
  });

  it("keeps project references per organization", async () => {
    const a = await newOrg();
    const b = await newOrg();
    const pa = await call("POST", "/v1/projects/resolve", {
      key: a.api_key,
      body: { reference: "shared", create: true },
    });
    expectError(
      await call("POST", "/v1/projects/resolve", { key: b.api_key, body: { reference: "shared" } }),
      404,
      "NOT_FOUND",
    );
    const r = await append(b.api_key, obs("s", "x", { project_id: pa.json.data.project_id }));
    expectError(r, 400, "UNRESOLVED_REFERENCE");
  });
});

describe("observations", () => {
  it("appends with a sha256 content hash, defaults trust medium and visibility team", async () => {
    const org = await newOrg();
    const r = await append(org.api_key, obs("s1", "hello"));
    expect(r.status).toBe(201);
    // sha256("hello")
    expect(r.json.data.content_hash).toBe("sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
    expect(r.json.data).toMatchObject({
      trust: "medium",
      visibility: "team",
      kind: "note",
      subject_id: "s1",
      project_id: null,
    });
  });

  it("validates every field", async () => {
    const org = await newOrg();
    const bad: Record<string, unknown>[] = [
      { kind: "note", content: "x", source: { type: "t" } },
      obs("", "x"),
      obs("s", ""),
      obs("s", "x", { kind: "diary" }),
      { subject_id: "s", kind: "note", content: "x" },
      obs("s", "x", { source: { ref: "only-ref" } }),
      obs("s", "x", { trust: "absolute" }),
      obs("s", "x", { visibility: "public" }),
      obs("s", "x", { content: 42 }),
      obs("s", "x", { org_id: "org_1" }),
    ];
    for (const body of bad) expectError(await append(org.api_key, body), 400, "VALIDATION_ERROR");
    const r = await append(org.api_key, obs("s", "x", { project_id: "prj_" + "0".repeat(32) }));
    expectError(r, 400, "UNRESOLVED_REFERENCE");
    expect(r.json.error.message).toContain("prj_" + "0".repeat(32));
  });

  it("refuses trust above the key's ceiling with 403 and accepts it at the ceiling", async () => {
    const org = await newOrg();
    const k = await mintKey(org.api_key, { scopes: ["observations:write"], max_trust: "medium" });
    const r = await append(k.key, obs("s", "x", { trust: "high" }));
    expectError(r, 403, "FORBIDDEN");
    expect(r.json.error.message).toBe('This credential may not assert "high" trust.');
    expect((await append(k.key, obs("s", "x", { trust: "medium" }))).status).toBe(201);
    expect((await append(org.api_key, obs("s", "x", { trust: "verified" }))).status).toBe(201);
  });

  it("records observation.appended with exactly subject_id, kind, trust, visibility and never the content", async () => {
    const org = await newOrg();
    const id = await appendOk(org.api_key, obs("subj", "top secret words", { trust: "high", visibility: "private" }));
    const ev = await call("GET", "/v1/events?kind=observation.appended", { key: org.api_key });
    const e = ev.json.data.events.find((x: any) => x.resource_id === id);
    expect(e).toMatchObject({ kind: "observation.appended", resource_type: "observation" });
    expect(e.id).toMatch(/^evt_[0-9a-f]{32}$/);
    expect(e.payload).toEqual({ subject_id: "subj", kind: "note", trust: "high", visibility: "private" });
    expect(ev.text).not.toContain("top secret");
  });

  describe("Idempotency-Key", () => {
    it("replays the same request as 200 with meta.replayed and the same record", async () => {
      const org = await newOrg();
      const a = await append(org.api_key, obs("s", "one"), { "idempotency-key": "k1" });
      expect(a.status).toBe(201);
      expect(a.json.meta.replayed).toBe(false);
      const b = await append(org.api_key, obs("s", "one"), { "idempotency-key": "k1" });
      expect(b.status).toBe(200);
      expect(b.json.meta.replayed).toBe(true);
      expect(b.json.data).toEqual(a.json.data);
      const count = await inOrg(
        org.org_id,
        (o) => o.db.first<{ n: number }>("SELECT count(*) AS n FROM observations")!.n,
      );
      expect(count).toBe(1);
    });

    it("409s the same key with a different body, and with the same body on another endpoint", async () => {
      const org = await newOrg();
      await append(org.api_key, obs("s", "one"), { "idempotency-key": "k2" });
      expectError(await append(org.api_key, obs("s", "two"), { "idempotency-key": "k2" }), 409, "CONFLICT");
    });

    it("409s the same key and the same valid body on another path (params are part of the request)", async () => {
      const org = await newOrg();
      const o = await appendOk(org.api_key, obs("s", "x"));
      await consolidateOk(org.api_key, "s", [{ kind: "fact", statement: "tuesday deploys", sources: supports(o) }]);
      const compile = async () =>
        (await call("POST", "/v1/context/compile", { key: org.api_key, body: { query: "tuesday" } })).json.data
          .context_id;
      const [first, second] = [await compile(), await compile()];
      const feedback = (ctx: string) =>
        call("POST", `/v1/context/${ctx}/feedback`, {
          key: org.api_key,
          body: { outcome: "used" },
          headers: { "idempotency-key": "k-fb" },
        });
      expect((await feedback(first)).status).toBe(201);
      // The body is valid for both runs, so the request reaches the idempotency check: a replay of the
      // first run's answer would be wrong, the second run is a different request.
      expectError(await feedback(second), 409, "CONFLICT");
      const stored = await inOrg(org.org_id, (db) =>
        db.db.all<{ context_id: string }>("SELECT context_id FROM feedback"),
      );
      expect(stored).toEqual([{ context_id: first }]);
      expect((await feedback(first)).json.meta.replayed).toBe(true);
    });

    it("trims the key to 200 characters and scopes it per organization", async () => {
      const a = await newOrg();
      const b = await newOrg();
      const long = "x".repeat(200);
      await append(a.api_key, obs("s", "one"), { "idempotency-key": long + "AAA" });
      const replay = await append(a.api_key, obs("s", "one"), { "idempotency-key": `  ${long}BBB` });
      expect(replay.json.meta.replayed).toBe(true);
      const other = await append(b.api_key, obs("s", "different"), { "idempotency-key": long });
      expect(other.status).toBe(201);
    });

    it("does not record a replay for a failed request", async () => {
      const org = await newOrg();
      const k = await mintKey(org.api_key, { scopes: ["observations:write"], max_trust: "low" });
      expectError(await append(k.key, obs("s", "x", { trust: "high" }), { "idempotency-key": "k3" }), 403, "FORBIDDEN");
      const ok = await append(k.key, obs("s", "x", { trust: "low" }), { "idempotency-key": "k3" });
      expect(ok.status).toBe(201);
    });
  });

  describe("purge", () => {
    it("tombstones content everywhere but keeps id, hash and audit provenance", async () => {
      const org = await newOrg();
      const id = await appendOk(org.api_key, obs("s", "forget this zanzibar"));
      const [claim] = await consolidateOk(org.api_key, "s", [
        { kind: "fact", statement: "a fact", sources: supports(id) },
      ]);
      const d = await call("DELETE", `/v1/observations/${id}`, { key: org.api_key });
      expect(d.status).toBe(200);
      expect(d.json.data).toMatchObject({ observation_id: id, content: null, purged: true, already_purged: false });
      expect(d.json.data.content_hash).toMatch(/^sha256:/);
      const ev = await call("GET", `/v1/claims/${claim}/evidence`, { key: org.api_key });
      expect(ev.text).not.toContain("zanzibar");
      expect(ev.json.data.supporting[0]).toMatchObject({ observation_id: id, content: null, purged: true });
      const exp = await call("GET", "/v1/export?type=observations", { key: org.api_key });
      expect(exp.text).not.toContain("zanzibar");
      expect(exp.text).toContain(id);
      const audit = await inOrg(org.org_id, (o) =>
        o.db.all<{ action: string }>("SELECT action FROM audit_log WHERE resource_id = ?", id),
      );
      expect(audit.map((a) => a.action)).toEqual(["observation.appended", "observation.purged"]);
      const again = await call("DELETE", `/v1/observations/${id}`, { key: org.api_key });
      expect(again.json.data.already_purged).toBe(true);
    });

    it("refuses a purged observation as a new claim source", async () => {
      const org = await newOrg();
      const id = await appendOk(org.api_key, obs("s", "x"));
      await call("DELETE", `/v1/observations/${id}`, { key: org.api_key });
      const r = await call("POST", "/v1/consolidations", {
        key: org.api_key,
        body: { subject_id: "s", claims: [{ kind: "fact", statement: "y", sources: supports(id) }] },
      });
      expectError(r, 400, "UNRESOLVED_REFERENCE");
    });

    it("needs observations:purge, hides foreign and private records as 404, and limits purge to author or admin", async () => {
      const org = await newOrg();
      const other = await newOrg();
      const writer = await mintKey(org.api_key, { scopes: ["observations:write", "observations:purge"] });
      const peer = await mintKey(org.api_key, { scopes: ["observations:purge"] });
      const noScope = await mintKey(org.api_key, { scopes: ["observations:write"] });
      const priv = await appendOk(writer.key, obs("s", "mine", { visibility: "private" }));
      const team = await appendOk(writer.key, obs("s", "ours"));
      expectError(await call("DELETE", `/v1/observations/${team}`, { key: noScope.key }), 403, "FORBIDDEN");
      const hidden = await call("DELETE", `/v1/observations/${priv}`, { key: peer.key });
      const foreign = await call("DELETE", `/v1/observations/${team}`, { key: other.api_key });
      const missing = await call("DELETE", `/v1/observations/obs_${"0".repeat(32)}`, { key: peer.key });
      for (const r of [hidden, foreign, missing]) expectError(r, 404, "NOT_FOUND");
      expect(hidden.json.error).toEqual(missing.json.error);
      expectError(await call("DELETE", `/v1/observations/${team}`, { key: peer.key }), 403, "FORBIDDEN");
      expect((await call("DELETE", `/v1/observations/${team}`, { key: org.api_key })).status).toBe(200);
    });
  });
});

describe("consolidation and claims", () => {
  it("materializes claims deterministically with model_used false and one event per claim", async () => {
    const org = await newOrg();
    const o1 = await appendOk(org.api_key, obs("alice", "alice likes tea", { trust: "high" }));
    const o2 = await appendOk(org.api_key, obs("alice", "alice said tea", { trust: "low" }));
    const r = await call("POST", "/v1/consolidations", {
      key: org.api_key,
      body: {
        subject_id: "alice",
        claims: [
          {
            kind: "preference",
            statement: "Alice likes tea",
            sources: [
              { observation_id: o1, relation: "supports" },
              { observation_id: o2, relation: "supports" },
            ],
          },
          {
            kind: "fact",
            statement: "Alice drinks",
            sources: [
              { observation_id: o1, relation: "supports" },
              { observation_id: o2, relation: "qualifies" },
            ],
          },
        ],
      },
    });
    expect(r.status).toBe(201);
    expect(r.json.data.model_used).toBe(false);
    expect(r.json.meta.model).toBe("disabled");
    const [c1, c2] = r.json.data.claims;
    expect(c1).toMatchObject({
      subject_id: "alice",
      kind: "preference",
      status: "active",
      visibility: "team",
      trust: "low",
      version: 1,
      valid_to: null,
      superseded_by: null,
      project_id: null,
    });
    expect(c1.sources).toEqual([
      { observation_id: o1, relation: "supports" },
      { observation_id: o2, relation: "supports" },
    ]);
    // Trust is the lowest of the supporting sources only.
    expect(c2.trust).toBe("high");
    const ev = await call("GET", "/v1/events?kind=claim.materialized", { key: org.api_key });
    expect(ev.json.data.events.map((e: any) => e.resource_id)).toEqual([c1.claim_id, c2.claim_id]);
    expect(ev.text).not.toContain("Alice likes tea");
  });

  it("validates the body: 1 to 50 claims, kinds, relations, sources", async () => {
    const org = await newOrg();
    const o = await appendOk(org.api_key, obs("s", "x"));
    const claim = { kind: "fact", statement: "x", sources: supports(o) };
    const bad = [
      { subject_id: "s", claims: [] },
      { subject_id: "s", claims: Array.from({ length: 51 }, () => claim) },
      { claims: [claim] },
      { subject_id: "s", claims: [{ ...claim, kind: "opinion" }] },
      { subject_id: "s", claims: [{ ...claim, sources: [] }] },
      { subject_id: "s", claims: [{ ...claim, sources: [{ observation_id: o, relation: "likes" }] }] },
      { subject_id: "s", claims: [{ ...claim, statement: "" }] },
      { subject_id: "s", claims: [{ ...claim, valid_to: "tomorrow" }] },
      { subject_id: "s", claims: [{ ...claim, valid_to: "2000-01-01T00:00:00.000Z" }] },
      { subject_id: "s", claims: [{ ...claim, sources: [{ claim_id: "claim_x", relation: "supports" }] }] },
    ];
    for (const body of bad)
      expectError(await call("POST", "/v1/consolidations", { key: org.api_key, body }), 400, "VALIDATION_ERROR");
    expect(
      (
        await call("POST", "/v1/consolidations", {
          key: org.api_key,
          body: { subject_id: "s", claims: Array.from({ length: 50 }, () => claim) },
        })
      ).status,
    ).toBe(201);
  });

  it("rejects sources that are missing, foreign or private to someone else, identically, and writes nothing", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const agent = await mintKey(org.api_key, { scopes: ["observations:write", "claims:write"] });
    const priv = await appendOk(org.api_key, obs("s", "owner only", { visibility: "private" }));
    const foreign = await appendOk(other.api_key, obs("s", "b only"));
    const msgs: string[] = [];
    for (const id of [priv, foreign, "obs_" + "0".repeat(32)]) {
      const r = await call("POST", "/v1/consolidations", {
        key: agent.key,
        body: { subject_id: "s", claims: [{ kind: "fact", statement: "x", sources: supports(id) }] },
      });
      expectError(r, 400, "UNRESOLVED_REFERENCE");
      msgs.push(r.json.error.message.replace(id, "ID"));
    }
    expect(new Set(msgs).size).toBe(1);
    const counts = await inOrg(org.org_id, (o) =>
      o.db.first<{ c: number; e: number }>(
        "SELECT (SELECT count(*) FROM claims) AS c, (SELECT count(*) FROM events WHERE kind = 'claim.materialized') AS e",
      ),
    );
    expect(counts).toEqual({ c: 0, e: 0 });
  });

  it("needs claims:write, naming the scope", async () => {
    const org = await newOrg();
    const k = await mintKey(org.api_key, { scopes: ["observations:write"] });
    const r = await call("POST", "/v1/consolidations", { key: k.key, body: { subject_id: "s", claims: [] } });
    expectError(r, 403, "FORBIDDEN");
    expect(r.json.error.message).toBe('Missing required scope "claims:write".');
  });

  it("enters disputed with a contradicts source, and disputes an active claim named in a contradicts source", async () => {
    const org = await newOrg();
    const o1 = await appendOk(org.api_key, obs("svc", "deploys on tuesday"));
    const o2 = await appendOk(org.api_key, obs("svc", "deploys on friday"));
    const [first] = await consolidateOk(org.api_key, "svc", [
      { kind: "fact", statement: "deploys tuesday", sources: supports(o1) },
    ]);
    const r = await call("POST", "/v1/consolidations", {
      key: org.api_key,
      body: {
        subject_id: "svc",
        claims: [
          {
            kind: "fact",
            statement: "deploys friday",
            sources: [
              { observation_id: o2, relation: "supports" },
              { claim_id: first, relation: "contradicts" },
            ],
          },
        ],
      },
    });
    expect(r.status).toBe(201);
    expect(r.json.data.claims[0]).toMatchObject({ status: "disputed", disputes: [first] });
    const ev = await call("GET", `/v1/claims/${first}/evidence`, { key: org.api_key });
    expect(ev.json.data.claim).toMatchObject({ status: "disputed", version: 2 });
    const direct = await call("POST", "/v1/consolidations", {
      key: org.api_key,
      body: {
        subject_id: "svc",
        claims: [
          { kind: "fact", statement: "not tuesday", sources: [{ observation_id: o1, relation: "contradicts" }] },
        ],
      },
    });
    expect(direct.json.data.claims[0].status).toBe("disputed");
    const otherSubject = await call("POST", "/v1/consolidations", {
      key: org.api_key,
      body: {
        subject_id: "elsewhere",
        claims: [
          {
            kind: "fact",
            statement: "x",
            sources: [
              { observation_id: o2, relation: "supports" },
              { claim_id: first, relation: "contradicts" },
            ],
          },
        ],
      },
    });
    expectError(otherSubject, 400, "VALIDATION_ERROR");
  });

  it("defaults a claim drawn from private evidence to private", async () => {
    const org = await newOrg();
    const o = await appendOk(org.api_key, obs("s", "x", { visibility: "private" }));
    const r = await call("POST", "/v1/consolidations", {
      key: org.api_key,
      body: { subject_id: "s", claims: [{ kind: "fact", statement: "x", sources: supports(o) }] },
    });
    expect(r.json.data.claims[0].visibility).toBe("private");
  });

  it("replays a consolidation with the same Idempotency-Key without writing twice", async () => {
    const org = await newOrg();
    const o = await appendOk(org.api_key, obs("s", "x"));
    const body = { subject_id: "s", claims: [{ kind: "fact", statement: "x", sources: supports(o) }] };
    const a = await call("POST", "/v1/consolidations", {
      key: org.api_key,
      body,
      headers: { "idempotency-key": "c1" },
    });
    const b = await call("POST", "/v1/consolidations", {
      key: org.api_key,
      body,
      headers: { "idempotency-key": "c1" },
    });
    expect(a.status).toBe(201);
    expect(b.status).toBe(200);
    expect(b.json.meta).toMatchObject({ replayed: true, model: "disabled" });
    expect(b.json.data).toEqual(a.json.data);
    const n = await inOrg(org.org_id, (x) => x.db.first<{ n: number }>("SELECT count(*) AS n FROM claims")!.n);
    expect(n).toBe(1);
  });
});

describe("claim lifecycle", () => {
  async function twoClaims() {
    const org = await newOrg();
    const o = await appendOk(org.api_key, obs("s", "v1 and v2"));
    const [a, b] = await consolidateOk(org.api_key, "s", [
      { kind: "fact", statement: "the api is v1", sources: supports(o) },
      { kind: "fact", statement: "the api is v2", sources: supports(o) },
    ]);
    return { org, a, b };
  }

  it("supersedes an active claim by an active claim, once", async () => {
    const { org, a, b } = await twoClaims();
    const r = await call("POST", `/v1/claims/${a}/supersede`, {
      key: org.api_key,
      body: { superseded_by: b, reason: "upgrade" },
    });
    expect(r.status).toBe(200);
    expect(r.json.data).toMatchObject({ status: "superseded", superseded_by: b, version: 2 });
    expectError(
      await call("POST", `/v1/claims/${a}/supersede`, { key: org.api_key, body: { superseded_by: b } }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(
      await call("POST", `/v1/claims/${b}/supersede`, { key: org.api_key, body: { superseded_by: a } }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(
      await call("POST", `/v1/claims/${b}/supersede`, { key: org.api_key, body: { superseded_by: b } }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(
      await call("POST", `/v1/claims/${b}/supersede`, { key: org.api_key, body: {} }),
      400,
      "VALIDATION_ERROR",
    );
    const ev = await call("GET", "/v1/events?kind=claim.superseded", { key: org.api_key });
    expect(ev.json.data.events).toHaveLength(1);
    expect(ev.json.data.events[0]).toMatchObject({ resource_id: a, payload: { superseded_by: b } });
    expect(ev.text).not.toContain("upgrade");
  });

  it("revokes anything but superseded; a repeat reports already_revoked without a second event", async () => {
    const { org, a, b } = await twoClaims();
    await call("POST", `/v1/claims/${a}/supersede`, { key: org.api_key, body: { superseded_by: b } });
    expectError(await call("POST", `/v1/claims/${a}/revoke`, { key: org.api_key, body: {} }), 400, "VALIDATION_ERROR");
    const r1 = await call("POST", `/v1/claims/${b}/revoke`, { key: org.api_key });
    expect(r1.status).toBe(200);
    expect(r1.json.data).toMatchObject({ status: "revoked", already_revoked: false });
    const r2 = await call("POST", `/v1/claims/${b}/revoke`, { key: org.api_key, body: {} });
    expect(r2.json.data.already_revoked).toBe(true);
    const ev = await call("GET", "/v1/events?kind=claim.revoked", { key: org.api_key });
    expect(ev.json.data.events).toHaveLength(1);
    expectError(
      await call("POST", `/v1/claims/${b}/supersede`, { key: org.api_key, body: { superseded_by: a } }),
      400,
      "VALIDATION_ERROR",
    );
  });

  it("expires by setting valid_to now, keeps status, reports already_expired on repeat", async () => {
    const { org, a } = await twoClaims();
    // Move the service clock a day ahead: valid_to must be the service's "now", not any past instant.
    clock.advance(86_400_000);
    const from = clock.nowMs();
    const e1 = await call("POST", `/v1/claims/${a}/expire`, { key: org.api_key, body: { reason: "stale" } });
    expect(e1.status).toBe(200);
    expect(e1.json.data).toMatchObject({ status: "active", already_expired: false });
    expect(Date.parse(e1.json.data.valid_to)).toBeGreaterThanOrEqual(from);
    expect(Date.parse(e1.json.data.valid_to)).toBeLessThanOrEqual(clock.nowMs());
    clock.advance(5);
    const e2 = await call("POST", `/v1/claims/${a}/expire`, { key: org.api_key });
    expect(e2.json.data.already_expired).toBe(true);
    const ev = await call("GET", "/v1/events?kind=claim.expired", { key: org.api_key });
    expect(ev.json.data.events.map((e: any) => e.resource_id)).toEqual([a]);
  });

  it("treats a claim whose valid_to passed as expired", async () => {
    const org = await newOrg();
    const o = await appendOk(org.api_key, obs("s", "x"));
    const r = await call("POST", "/v1/consolidations", {
      key: org.api_key,
      body: {
        subject_id: "s",
        claims: [
          {
            kind: "fact",
            statement: "temporary fact",
            sources: supports(o),
            valid_to: new Date(Date.now() + 60_000).toISOString(),
          },
        ],
      },
    });
    const id = r.json.data.claims[0].claim_id;
    expect((await call("GET", "/v1/memories", { key: org.api_key })).text).toContain(id);
    clock.advance(120_000);
    expect((await call("GET", "/v1/memories", { key: org.api_key })).text).not.toContain(id);
    expect((await call("POST", `/v1/claims/${id}/expire`, { key: org.api_key })).json.data.already_expired).toBe(true);
  });

  it("answers foreign, private-to-another and missing claims with the same 404", async () => {
    const { org, a } = await twoClaims();
    const other = await newOrg();
    const agent = await mintKey(org.api_key, { scopes: ["claims:write", "evidence:read"] });
    const o = await appendOk(org.api_key, obs("s", "p", { visibility: "private" }));
    const [priv] = await consolidateOk(org.api_key, "s", [
      { kind: "fact", statement: "private claim", sources: supports(o) },
    ]);
    const missing = await call("POST", `/v1/claims/claim_${"0".repeat(32)}/revoke`, { key: agent.key, body: {} });
    for (const [key, id] of [
      [other.api_key, a],
      [agent.key, priv],
    ]) {
      for (const action of ["revoke", "expire"]) {
        const r = await call("POST", `/v1/claims/${id}/${action}`, { key, body: {} });
        expectError(r, 404, "NOT_FOUND");
        expect(r.json.error).toEqual(missing.json.error);
      }
      expectError(await call("GET", `/v1/claims/${id}/evidence`, { key }), 404, "NOT_FOUND");
      expectError(
        await call("POST", `/v1/claims/${id}/supersede`, { key, body: { superseded_by: id } }),
        404,
        "NOT_FOUND",
      );
    }
  });
});

describe("evidence", () => {
  it("groups readable sources by relation and only counts the hidden ones", async () => {
    const org = await newOrg();
    const writer = await mintKey(org.api_key, { scopes: ["*"] });
    const reader = await mintKey(org.api_key, { scopes: ["evidence:read"] });
    const sup = await appendOk(writer.key, obs("s", "supporting text"));
    const con = await appendOk(writer.key, obs("s", "contradicting text"));
    const qual = await appendOk(writer.key, obs("s", "qualifying secret", { visibility: "private" }));
    const [claim] = await consolidateOk(writer.key, "s", [
      {
        kind: "fact",
        visibility: "team",
        statement: "x",
        sources: [
          { observation_id: sup, relation: "supports" },
          { observation_id: con, relation: "contradicts" },
          { observation_id: qual, relation: "qualifies" },
        ],
      },
    ]);
    const mine = await call("GET", `/v1/claims/${claim}/evidence`, { key: writer.key });
    expect(mine.json.data.hidden_source_count).toBe(0);
    expect(mine.json.data.qualifying[0]).toMatchObject({ observation_id: qual, content: "qualifying secret" });
    const theirs = await call("GET", `/v1/claims/${claim}/evidence`, { key: reader.key });
    expect(theirs.status).toBe(200);
    expect(theirs.json.data.supporting.map((o: any) => o.observation_id)).toEqual([sup]);
    expect(theirs.json.data.contradicting.map((o: any) => o.observation_id)).toEqual([con]);
    expect(theirs.json.data.qualifying).toEqual([]);
    expect(theirs.json.data.hidden_source_count).toBe(1);
    expect(theirs.text).not.toContain(qual);
    expect(theirs.text).not.toContain("qualifying secret");
    const list = await call("GET", "/v1/memories", {
      key: (await mintKey(org.api_key, { scopes: ["views:compile"] })).key,
    });
    expect(list.text).toContain(claim);
    expect(list.text).not.toContain(qual);
  });
});

describe("memories list", () => {
  it("searches statements lexically and applies filters, defaults and validity before paging", async () => {
    const org = await newOrg();
    const o = await appendOk(org.api_key, obs("s", "x"));
    const ids = await consolidateOk(org.api_key, "billing", [
      { kind: "fact", statement: "the zebra service owns billing", sources: supports(o) },
      { kind: "decision", statement: "zebra deploys weekly", sources: supports(o) },
      { kind: "fact", statement: "unrelated giraffe", sources: supports(o) },
    ]);
    const q = await call("GET", "/v1/memories?q=zebra", { key: org.api_key });
    expect(q.status).toBe(200);
    expect(q.json.data.items.map((c: any) => c.claim_id).sort()).toEqual([ids[0], ids[1]].sort());
    expect(q.json.data).toHaveProperty("has_more", false);
    expect(q.json.data).toHaveProperty("next_cursor", null);
    expect(q.json.data).not.toHaveProperty("total");
    const kind = await call("GET", "/v1/memories?q=zebra&kind=decision", { key: org.api_key });
    expect(kind.json.data.items.map((c: any) => c.claim_id)).toEqual([ids[1]]);
    await call("POST", `/v1/claims/${ids[1]}/revoke`, { key: org.api_key, body: {} });
    const after = await call("GET", "/v1/memories?q=zebra", { key: org.api_key });
    expect(after.json.data.items.map((c: any) => c.claim_id)).toEqual([ids[0]]);
    const revoked = await call("GET", "/v1/memories?status=revoked", { key: org.api_key });
    expect(revoked.json.data.items.map((c: any) => c.claim_id)).toEqual([ids[1]]);
    expect((await call("GET", "/v1/memories?subject_id=nobody", { key: org.api_key })).json.data.items).toEqual([]);
    expect((await call("GET", "/v1/memories?q=%22%29%20OR%20*", { key: org.api_key })).status).toBe(200);
  });

  it("pages with an opaque cursor, with and without a query, and validates limit", async () => {
    const org = await newOrg();
    const o = await appendOk(org.api_key, obs("s", "x"));
    const ids = await consolidateOk(
      org.api_key,
      "s",
      Array.from({ length: 7 }, (_, i) => ({ kind: "fact", statement: `walrus fact ${i}`, sources: supports(o) })),
    );
    for (const base of ["/v1/memories?limit=3", "/v1/memories?q=walrus&limit=3"]) {
      const seen: string[] = [];
      let url = base;
      for (;;) {
        const r = await call("GET", url, { key: org.api_key });
        expect(r.status).toBe(200);
        seen.push(...r.json.data.items.map((c: any) => c.claim_id));
        if (!r.json.data.has_more) break;
        url = `${base}&after=${r.json.data.next_cursor}`;
      }
      expect(seen.sort()).toEqual([...ids].sort());
    }
    for (const bad of [
      "limit=0",
      "limit=101",
      "limit=abc",
      "status=gone",
      "kind=opinion",
      "visibility=public",
      "after=%%%",
    ])
      expectError(await call("GET", `/v1/memories?${bad}`, { key: org.api_key }), 400, "VALIDATION_ERROR");
  });

  it("never shows another principal's private claims, nor lets them fill a page", async () => {
    const org = await newOrg();
    const a = await mintKey(org.api_key, { scopes: ["*"] });
    const b = await mintKey(org.api_key, { scopes: ["*"] });
    const o = await appendOk(a.key, obs("s", "x", { visibility: "private" }));
    await consolidateOk(
      a.key,
      "s",
      Array.from({ length: 5 }, (_, i) => ({ kind: "fact", statement: `okapi secret ${i}`, sources: supports(o) })),
    );
    const ot = await appendOk(b.key, obs("s", "y"));
    const [visible] = await consolidateOk(b.key, "s", [
      { kind: "fact", statement: "okapi public", sources: supports(ot) },
    ]);
    const r = await call("GET", "/v1/memories?q=okapi&limit=1", { key: b.key });
    expect(r.json.data.items.map((c: any) => c.claim_id)).toEqual([visible]);
    expect(r.json.data.has_more).toBe(false);
    expect((await call("GET", "/v1/memories?q=okapi", { key: a.key })).json.data.items).toHaveLength(6);
  });

  it("uses indexes for the hot queries the code runs", async () => {
    const org = await newOrg();
    // Statements are captured from the real code paths (route handlers and record readers), then explained.
    const plans = await inOrg(org.org_id, (o) => {
      const ran: [string, unknown[]][] = [];
      // A statement as text and values, whether written with the sql tag or positionally.
      const note = ([query, ...args]: Parameters<Db["all"]>) =>
        ran.push(query instanceof Sql ? [query.text, [...query.values]] : [query, args]);
      const db = new (class extends Db {
        override all<T>(...query: Parameters<Db["all"]>): T[] {
          note(query);
          return super.all<T>(...query);
        }
        override first<T>(...query: Parameters<Db["first"]>): T | null {
          note(query);
          return super.first<T>(...query);
        }
      })(o.db.sql);
      const caller: Caller = {
        principalId: "prn_x",
        keyId: "key_x",
        scopes: ["*"],
        maxTrust: "verified",
        role: "owner",
        grants: [],
        workspaces: {},
      };
      const explain = (run: () => unknown) => {
        ran.length = 0;
        run();
        expect(ran.length).toBeGreaterThan(0);
        return ran
          .map(([sql, args]) =>
            o.db
              .all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, ...args)
              .map((r) => r.detail)
              .join(" | "),
          )
          .join(" || ");
      };
      const handler = (routes: readonly any[], path: string) =>
        routes.find((r) => r.method === "GET" && r.path === path).handler;
      const memories = handler(claimRoutes, "/v1/memories");
      return {
        bySubject: explain(() => memories({ db, caller, query: { subject_id: "s", limit: 25 } })),
        search: explain(() => memories({ db, caller, query: { q: "x", limit: 25 } })),
        evidence: explain(() => evidenceOf(db, caller, "c")),
        claim: explain(() => getClaim(db, "c")),
        events: explain(() =>
          handler(eventRoutes, "/v1/events")({ db, caller, query: { kind: "claim.revoked", limit: 50 } }),
        ),
      };
    });
    expect(plans.bySubject).toContain("USING INDEX claims_by_subject");
    expect(plans.search).toMatch(/VIRTUAL TABLE INDEX/);
    expect(plans.search).toContain("INTEGER PRIMARY KEY");
    expect(plans.evidence).toMatch(/USING (INDEX sqlite_autoindex_claim_sources|PRIMARY KEY)/);
    expect(plans.evidence).toMatch(/SEARCH o USING INDEX sqlite_autoindex_observations_1/);
    expect(plans.claim).toContain("USING INDEX sqlite_autoindex_claims_1");
    expect(plans.events).toContain("USING INDEX events_by_kind");
    for (const p of Object.values(plans)) expect(p).not.toMatch(/SCAN (claims|observations|events)\b(?! USING)/);
  });
});

describe("context compile, read and feedback", () => {
  async function seeded() {
    const org = await newOrg();
    const o = await appendOk(org.api_key, obs("s", "x", { trust: "high" }));
    const ids = await consolidateOk(org.api_key, "deploy", [
      { kind: "fact", statement: "deploys happen on tuesday afternoons", sources: supports(o) },
      { kind: "fact", statement: "the billing service is written in rust", sources: supports(o) },
      { kind: "instruction", statement: "always run the tuesday deploy checklist first", sources: supports(o) },
    ]);
    return { org, ids };
  }

  it("ranks matching claims into the budget, records the run, reports degraded", async () => {
    holdBackgroundDrain(); // nothing indexes the claims between the two compiles: both rank lexically
    const { org, ids } = await seeded();
    const r = await call("POST", "/v1/context/compile", {
      key: org.api_key,
      body: { query: "tuesday deploy", token_budget: 1000 },
    });
    expect(r.status).toBe(201);
    expect(r.json.meta.degraded).toEqual({ vectors: true, model: true });
    const d = r.json.data;
    expect(d.context_id).toMatch(/^ctx_[0-9a-f]{32}$/);
    expect(d.items.map((i: any) => i.claim_id)).toContain(ids[0]);
    expect(d.items.map((i: any) => i.claim_id)).toContain(ids[2]);
    expect(d.items.map((i: any) => i.claim_id)).not.toContain(ids[1]);
    for (const i of d.items)
      expect(Object.keys(i).sort()).toEqual(["claim_id", "kind", "score", "statement", "status", "tokens", "trust"]);
    expect(d.tokens_used).toBe(d.items.reduce((n: number, i: any) => n + i.tokens, 0));
    expect(d.token_budget).toBe(1000);
    const again = await call("POST", "/v1/context/compile", {
      key: org.api_key,
      body: { query: "tuesday deploy", token_budget: 1000 },
    });
    expect(again.json.data.items).toEqual(d.items);
    const read = await call("GET", `/v1/context/${d.context_id}`, { key: org.api_key });
    expect(read.status).toBe(200);
    expect(read.json.data.items.map((i: any) => i.claim_id)).toEqual(d.items.map((i: any) => i.claim_id));
  });

  it("never exceeds the token budget or max_items, and validates the request", async () => {
    const { org } = await seeded();
    const tiny = await call("POST", "/v1/context/compile", {
      key: org.api_key,
      body: { query: "tuesday", token_budget: 10 },
    });
    expect(tiny.json.data.tokens_used).toBeLessThanOrEqual(10);
    const one = await call("POST", "/v1/context/compile", {
      key: org.api_key,
      body: { subject_id: "deploy", max_items: 1 },
    });
    expect(one.json.data.items).toHaveLength(1);
    for (const body of [
      { token_budget: 0 },
      { token_budget: 32_001 },
      { max_items: 201 },
      { kinds: ["opinion"] },
      { query: 5 },
      { token_budget: 1.5 },
    ])
      expectError(await call("POST", "/v1/context/compile", { key: org.api_key, body }), 400, "VALIDATION_ERROR");
  });

  it("leaves superseded, revoked and expired claims out of the pack", async () => {
    const { org, ids } = await seeded();
    const o = await appendOk(org.api_key, obs("s", "y"));
    const [replacement] = await consolidateOk(org.api_key, "deploy", [
      { kind: "fact", statement: "deploys moved to wednesday", sources: supports(o) },
    ]);
    await call("POST", `/v1/claims/${ids[0]}/supersede`, { key: org.api_key, body: { superseded_by: replacement } });
    await call("POST", `/v1/claims/${ids[1]}/revoke`, { key: org.api_key, body: {} });
    await call("POST", `/v1/claims/${ids[2]}/expire`, { key: org.api_key, body: {} });
    clock.advance(10);
    const r = await call("POST", "/v1/context/compile", {
      key: org.api_key,
      body: { subject_id: "deploy", token_budget: 5000 },
    });
    expect(r.json.data.items.map((i: any) => i.claim_id)).toEqual([replacement]);
  });

  it("filters by kind and never packs claims the caller cannot read", async () => {
    const { org, ids } = await seeded();
    const other = await mintKey(org.api_key, { scopes: ["*"] });
    const po = await appendOk(org.api_key, obs("s", "p", { visibility: "private" }));
    const [priv] = await consolidateOk(org.api_key, "deploy", [
      { kind: "fact", statement: "tuesday secret", sources: supports(po) },
    ]);
    const r = await call("POST", "/v1/context/compile", { key: other.key, body: { query: "tuesday" } });
    expect(r.json.data.items.map((i: any) => i.claim_id)).not.toContain(priv);
    const k = await call("POST", "/v1/context/compile", {
      key: org.api_key,
      body: { query: "tuesday", kinds: ["instruction"] },
    });
    expect(k.json.data.items.map((i: any) => i.claim_id)).toEqual([ids[2]]);
  });

  it("moves claims up and down with feedback", async () => {
    const org = await newOrg();
    const o = await appendOk(org.api_key, obs("s", "x"));
    const [a, b] = await consolidateOk(org.api_key, "s", [
      { kind: "fact", statement: "heron alpha", sources: supports(o) },
      { kind: "fact", statement: "heron beta", sources: supports(o) },
    ]);
    const first = await call("POST", "/v1/context/compile", { key: org.api_key, body: { query: "heron" } });
    const top = first.json.data.items[0].claim_id;
    const bottom = top === a ? b : a;
    const ctx = first.json.data.context_id;
    expect(
      (
        await call("POST", `/v1/context/${ctx}/feedback`, {
          key: org.api_key,
          body: { outcome: "harmful", claim_id: top },
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await call("POST", `/v1/context/${ctx}/feedback`, {
          key: org.api_key,
          body: { outcome: "useful", claim_id: bottom },
        })
      ).status,
    ).toBe(201);
    const second = await call("POST", "/v1/context/compile", { key: org.api_key, body: { query: "heron" } });
    expect(second.json.data.items[0].claim_id).toBe(bottom);
  });

  it("records feedback on a run or an item, validates it, and deduplicates client_mutation_id per organization", async () => {
    const { org, ids } = await seeded();
    const run = await call("POST", "/v1/context/compile", { key: org.api_key, body: { query: "tuesday" } });
    const ctx = run.json.data.context_id;
    const fb = await call("POST", `/v1/context/${ctx}/feedback`, {
      key: org.api_key,
      body: { outcome: "used", client_mutation_id: "m1" },
    });
    expect(fb.status).toBe(201);
    expect(fb.json.data).toMatchObject({ context_id: ctx, claim_id: null, outcome: "used" });
    expect(fb.json.data.feedback_id).toMatch(/^fb_[0-9a-f]{32}$/);
    expectError(
      await call("POST", `/v1/context/${ctx}/feedback`, {
        key: org.api_key,
        body: { outcome: "used", client_mutation_id: "m1" },
      }),
      409,
      "CONFLICT",
    );
    expectError(
      await call("POST", `/v1/context/${ctx}/feedback`, { key: org.api_key, body: { outcome: "great" } }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(
      await call("POST", `/v1/context/${ctx}/feedback`, {
        key: org.api_key,
        body: { outcome: "used", claim_id: ids[1] },
      }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(await call("POST", `/v1/context/${ctx}/feedback`, { key: org.api_key }), 400, "VALIDATION_ERROR");
    const replay1 = await call("POST", `/v1/context/${ctx}/feedback`, {
      key: org.api_key,
      body: { outcome: "useful" },
      headers: { "idempotency-key": "f1" },
    });
    const replay2 = await call("POST", `/v1/context/${ctx}/feedback`, {
      key: org.api_key,
      body: { outcome: "useful" },
      headers: { "idempotency-key": "f1" },
    });
    expect(replay2.status).toBe(200);
    expect(replay2.json.data.feedback_id).toBe(replay1.json.data.feedback_id);
  });

  it("serves a run only to its compiler (404 for others and other organizations), rechecking visibility", async () => {
    const { org } = await seeded();
    const other = await newOrg();
    const peer = await mintKey(org.api_key, { scopes: ["*"] });
    const run = await call("POST", "/v1/context/compile", { key: org.api_key, body: { query: "tuesday" } });
    const ctx = run.json.data.context_id;
    const missing = await call("GET", `/v1/context/ctx_${"0".repeat(32)}`, { key: peer.key });
    for (const key of [peer.key, other.api_key]) {
      const r = await call("GET", `/v1/context/${ctx}`, { key });
      expectError(r, 404, "NOT_FOUND");
      expect(r.json.error).toEqual(missing.json.error);
      expectError(
        await call("POST", `/v1/context/${ctx}/feedback`, { key, body: { outcome: "used" } }),
        404,
        "NOT_FOUND",
      );
    }
  });
});

describe("events", () => {
  it("pages after an event id, filters by kind, and 404s an unknown id", async () => {
    const org = await newOrg();
    for (let i = 0; i < 3; i++) await appendOk(org.api_key, obs("s", `n${i}`));
    const p1 = await call("GET", "/v1/events?limit=2", { key: org.api_key });
    expect(p1.json.data.events).toHaveLength(2);
    const p2 = await call("GET", `/v1/events?limit=2&after=${p1.json.data.cursor}`, { key: org.api_key });
    expect(p2.json.data.events).toHaveLength(1);
    const p3 = await call("GET", `/v1/events?after=${p2.json.data.cursor}`, { key: org.api_key });
    expect(p3.json.data).toEqual({ events: [], cursor: p2.json.data.cursor });
    const one = await call("GET", `/v1/events/${p2.json.data.events[0].id}`, { key: org.api_key });
    expect(one.json.data).toEqual(p2.json.data.events[0]);
    expectError(await call("GET", `/v1/events/evt_${"0".repeat(32)}`, { key: org.api_key }), 404, "NOT_FOUND");
    for (const bad of ["limit=0", "limit=201", "kind=key.created"])
      expectError(await call("GET", `/v1/events?${bad}`, { key: org.api_key }), 400, "VALIDATION_ERROR");
  });

  it("hides events about another principal's private records", async () => {
    const org = await newOrg();
    const a = await mintKey(org.api_key, { scopes: ["*"] });
    const b = await mintKey(org.api_key, { scopes: ["*"] });
    const id = await appendOk(a.key, obs("s", "x", { visibility: "private" }));
    expect((await call("GET", "/v1/events", { key: b.key })).text).not.toContain(id);
    expect((await call("GET", "/v1/events", { key: a.key })).text).toContain(id);
  });
});

describe("memories search query words", () => {
  it("a memories search with an emoji skin-tone modifier or a newer emoji still finds the plain words", async () => {
    const org = await newOrg();
    const [claim] = await consolidateOk(org.api_key, "emoji", [
      {
        kind: "fact",
        statement: "Great work on the billing robot",
        sources: supports(await appendOk(org.api_key, obs("emoji", "great work on the billing robot"))),
      },
    ]);
    for (const q of ["great work", "great work 👍🏽", "billing robot🤖"]) {
      const r = await call("GET", `/v1/memories?q=${encodeURIComponent(q)}`, { key: org.api_key });
      expect(r.status, r.text).toBe(200);
      expect(
        r.json.data.items.map((c: { claim_id: string }) => c.claim_id),
        q,
      ).toEqual([claim]);
    }
  });
});

describe("record ownership outbox", () => {
  it("registers created project, observation and claim ids before the write answers", async () => {
    const { registryOwners } = await import("./helpers");
    const org = await newOrg();
    const p = await call("POST", "/v1/projects/resolve", { key: org.api_key, body: { reference: "r", create: true } });
    const o = await appendOk(org.api_key, obs("s", "x", { project_id: p.json.data.project_id }));
    const [c] = await consolidateOk(org.api_key, "s", [{ kind: "fact", statement: "x", sources: supports(o) }]);
    const ids = [p.json.data.project_id, o, c];
    expect(await registryOwners(ids)).toEqual(Object.fromEntries(ids.map((id) => [id, org.org_id])));
    expect(
      await inOrg(
        org.org_id,
        (x) => x.db.first<{ n: number }>("SELECT count(*) AS n FROM outbox WHERE topic = 'record_owner'")!.n,
      ),
    ).toBe(0);
    // All three live in the organization's own registry shard (one warm shard per organization's writes).
    const { registryShardOf } = await import("../src/registry/shards");
    expect(ids.map(registryShardOf)).toEqual(ids.map(() => registryShardOf(org.org_id)));
  });

  it("concurrent writes all register their ids before answering", async () => {
    const { registryOwners } = await import("./helpers");
    const org = await newOrg();
    const ids = await Promise.all(
      Array.from({ length: 6 }, (_, i) => appendOk(org.api_key, obs("s", `concurrent ${i}`))),
    );
    expect(await registryOwners(ids)).toEqual(Object.fromEntries(ids.map((id) => [id, org.org_id])));
    expect(
      await inOrg(
        org.org_id,
        (x) => x.db.first<{ n: number }>("SELECT count(*) AS n FROM outbox WHERE topic = 'record_owner'")!.n,
      ),
    ).toBe(0);
  });

  it("answers no request while a registration is under way, so a read cannot show an unregistered id", async () => {
    const { registryOwners } = await import("./helpers");
    const org = await newOrg();
    // The real registry behind a gate this test opens.
    let called!: () => void;
    const registering = new Promise<void>((r) => {
      called = r;
    });
    let open!: () => void;
    const gate = new Promise<void>((r) => {
      open = r;
    });
    await inOrg(org.org_id, (x) => {
      const real = x.deps.registry;
      x.deps = {
        ...x.deps,
        registry: {
          ...real,
          register: async (orgId, ids, at) => {
            called();
            await gate;
            return real.register(orgId, ids, at);
          },
        },
      };
    });
    // The organization's first append: the reserve is empty, so its id is registered after the commit.
    const append = appendOk(org.api_key, obs("s", "held"));
    await registering;
    let answered = false;
    const events = call("GET", "/v1/events", { key: org.api_key }).then((r) => {
      answered = true;
      return r;
    });
    await Promise.race([events, new Promise((r) => setTimeout(r, 200))]);
    expect(answered).toBe(false);
    open();
    const id = await append;
    expect((await events).text).toContain(id);
    expect(await registryOwners([id])).toEqual({ [id]: org.org_id });
  });

  it("hands out ids registered ahead of use: a write then needs no registry call and queues no outbox row", async () => {
    const { failingRegistry, registryOwners } = await import("./helpers");
    const org = await newOrg();
    await appendOk(org.api_key, obs("s", "first write: the reserve is empty, so it tops it up"));
    await inOrg(org.org_id, (x) => (x as unknown as { toppingUp: Promise<void> | null }).toppingUp);
    const stock = () =>
      inOrg(org.org_id, (x) =>
        x.db.all<{ record_id: string; prefix: string }>("SELECT record_id, prefix FROM reserved_record_ids"),
      );
    // Only the prefix the write used is stocked.
    const rows = await stock();
    expect(new Set(rows.map((r) => r.prefix))).toEqual(new Set(["obs_"]));
    const reserved = rows.map((r) => r.record_id);
    expect(reserved.length).toBeGreaterThan(0);
    expect(Object.values(await registryOwners(reserved))).toEqual(reserved.map(() => org.org_id));
    // With the registry down, the write still answers with an id the registry already gives to this organization.
    await inOrg(org.org_id, (x) => {
      x.deps = { ...x.deps, registry: failingRegistry };
    });
    const o = await appendOk(org.api_key, obs("s", "second write"));
    expect(reserved).toContain(o);
    expect(await registryOwners([o])).toEqual({ [o]: org.org_id });
    expect(
      await inOrg(
        org.org_id,
        (x) => x.db.first<{ n: number }>("SELECT count(*) AS n FROM outbox WHERE topic = 'record_owner'")!.n,
      ),
    ).toBe(0);
    // The taken id left the reserve with the write's commit.
    expect((await stock()).map((r) => r.record_id)).not.toContain(o);
    expect(
      await inOrg(
        org.org_id,
        (x) => x.db.first<{ n: number }>("SELECT count(*) AS n FROM reserved_record_ids WHERE record_id = ?", o)!.n,
      ),
    ).toBe(0);
  });

  it("tops the reserve up again once writes have spent it below the low-water mark, counting it in SQL only then", async () => {
    const org = await newOrg();
    await appendOk(org.api_key, obs("s", "first write stocks the reserve"));
    const settled = () => inOrg(org.org_id, (x) => (x as unknown as { toppingUp: Promise<void> | null }).toppingUp);
    await settled();
    const stock = () =>
      inOrg(
        org.org_id,
        (x) => x.db.first<{ n: number }>("SELECT count(*) AS n FROM reserved_record_ids WHERE prefix = 'obs_'")!.n,
      );
    const full = await stock();
    expect(full).toBe(RESERVE_BATCH);
    // Count the reserve's SQL counts from here on.
    const counts = await inOrg(org.org_id, (x) => {
      const seen = { n: 0 };
      const all = x.db.all.bind(x.db);
      x.db.all = ((q: string, ...a: unknown[]) => {
        if (/GROUP BY prefix/.test(q)) seen.n++;
        return all(q, ...a);
      }) as typeof x.db.all;
      (x as unknown as { seen: typeof seen }).seen = seen;
      return seen.n;
    });
    expect(counts).toBe(0);
    // Spend the stock down to the mark: only the first write after the top-up counts it (once).
    for (let i = 0; i < full - LOW_WATER; i++) await appendOk(org.api_key, obs("s", `spend ${i}`));
    expect(await inOrg(org.org_id, (x) => (x as unknown as { seen: { n: number } }).seen.n)).toBe(1);
    expect(await stock()).toBe(LOW_WATER);
    // One more takes it below: that write counts, finds it low and tops it up.
    await appendOk(org.api_key, obs("s", "below the mark"));
    await settled();
    expect(await inOrg(org.org_id, (x) => (x as unknown as { seen: { n: number } }).seen.n)).toBe(2);
    expect(await stock()).toBe(LOW_WATER - 1 + RESERVE_BATCH);
  });

  it("leaves the ids in the outbox when the registry fails, and the alarm registers them later", async () => {
    const { runDurableObjectAlarm } = await import("cloudflare:test");
    const { failingRegistry, holdBackgroundDrain, orgStub, registryOwners } = await import("./helpers");
    // Only the alarm run below carries the outbox: one of its own could run with the failing registry.
    holdBackgroundDrain();
    const org = await newOrg();
    const working = await inOrg(org.org_id, (x) => {
      const before = x.deps;
      x.deps = { ...before, registry: failingRegistry };
      return before;
    });
    const o = await appendOk(org.api_key, obs("s", "x"));
    expect(await registryOwners([o])).toEqual({});
    expect(
      await inOrg(org.org_id, (x) =>
        x.db.all<{ payload: string }>("SELECT payload FROM outbox WHERE topic = 'record_owner'").map((r) => r.payload),
      ),
    ).toEqual([o]);
    await inOrg(org.org_id, (x) => {
      x.deps = working;
    });
    expect(await runDurableObjectAlarm(orgStub(org.org_id) as unknown as DurableObjectStub)).toBe(true);
    expect(await registryOwners([o])).toEqual({ [o]: org.org_id });
    expect(
      await inOrg(
        org.org_id,
        (x) => x.db.first<{ n: number }>("SELECT count(*) AS n FROM outbox WHERE topic = 'record_owner'")!.n,
      ),
    ).toBe(0);
  });
});

describe("Idempotency-Key across principals", () => {
  it("never replays one principal's response to another", async () => {
    const org = await newOrg();
    const a = await mintKey(org.api_key, { scopes: ["*"] });
    const b = await mintKey(org.api_key, { scopes: ["*"] });
    const body = obs("s", "same body", { visibility: "private" });
    expect((await append(a.key, body, { "idempotency-key": "shared" })).status).toBe(201);
    const other = await append(b.key, body, { "idempotency-key": "shared" });
    expectError(other, 409, "CONFLICT");
    expect(other.text).not.toContain("obs_");
  });
});
