import { describe, expect, it } from "vitest";
import { sign } from "../src/domains/federation/signing";
import { clock } from "../src/http/clock";
import { appendOk, call, consolidateOk, expectError, inOrg, mintKey, newOrg, obs, supports } from "./helpers";

const DAY = 86_400_000;
let n = 0;
const unique = (p: string) => `${p}${n++}x${Math.random().toString(36).slice(2, 8)}`;

async function retentionPolicy(
  key: string,
  rules: unknown[] = [
    { record_type: "observation", max_age_days: 365 },
    { record_type: "claim", max_age_days: 365 },
  ],
) {
  const p = await call("POST", "/v1/policies", {
    key,
    body: { type: "retention", name: unique("ret"), status: "active", rules: { rules } },
  });
  expect(p.status, p.text).toBe(201);
  return p.json.data as { policy_id: string; version: number };
}

const apply = async (key: string, body: Record<string, unknown> = {}) => {
  const r = await call("POST", "/v1/retention/apply", { key, body });
  expect(r.status, r.text).toBe(200);
  return r.json.data as {
    policy_id: string;
    policy_version: number;
    examined: number;
    excluded: number;
    held: number;
    next_after: string | null;
    done: boolean;
  };
};

async function applyAll(key: string, limit = 500) {
  const total = { examined: 0, excluded: 0, held: 0, pages: 0 };
  let after: string | undefined;
  for (let i = 0; i < 100; i++) {
    const r = await apply(key, { limit, ...(after ? { after } : {}) });
    total.examined += r.examined;
    total.excluded += r.excluded;
    total.held += r.held;
    total.pages++;
    if (r.done) return total;
    after = r.next_after!;
  }
  throw new Error("retention apply never finished");
}

const hold = async (key: string, target_type: string, target_id: string) => {
  const r = await call("POST", "/v1/legal-holds", { key, body: { target_type, target_id, reason: "litigation" } });
  expect(r.status, r.text).toBe(201);
  return r.json.data.hold_id as string;
};

/** Ids of observations and claims retention has excluded. */
const excludedIds = (orgId: string) =>
  inOrg(orgId, (o) =>
    o.db
      .all<{ id: string }>(
        "SELECT observation_id AS id FROM observations WHERE retention_excluded_at IS NOT NULL UNION SELECT claim_id FROM claims WHERE retention_excluded_at IS NOT NULL",
      )
      .map((r) => r.id)
      .sort(),
  );
const purge = (key: string, id: string) => call("DELETE", `/v1/observations/${id}`, { key });
const claimVersion = (orgId: string, id: string) =>
  inOrg(orgId, (o) =>
    o.db.first<{ version: number; retention_excluded_at: string | null }>(
      "SELECT version, retention_excluded_at FROM claims WHERE claim_id = ?",
      id,
    )!,
  );

describe("legal holds", () => {
  it("a hold on a claim covers its sources; a hold on an observation covers its claims; neither goes further", async () => {
    const org = await newOrg();
    const k = org.api_key;
    const s = unique("s");
    const o1 = await appendOk(k, obs(s, "first source"));
    const o2 = await appendOk(k, obs(s, "unrelated"));
    const [c1] = await consolidateOk(k, s, [{ kind: "fact", statement: "held by claim", sources: supports(o1) }]);
    // Another claim on the same source: a hold on c1 does not reach it (coverage is not transitive).
    const [c2] = await consolidateOk(k, s, [{ kind: "fact", statement: "sibling", sources: supports(o1) }]);
    const o3 = await appendOk(k, obs(s, "held observation"));
    await consolidateOk(k, s, [{ kind: "fact", statement: "dependent of a held observation", sources: supports(o3) }]);
    await hold(k, "claim", c1);
    await hold(k, "observation", o3);

    // Purge: o1 (source of the held claim) and o3 (held directly) are refused and unchanged.
    for (const id of [o1, o3]) {
      const r = await purge(k, id);
      expectError(r, 409, "CONFLICT");
      expect(r.json.error.message).toBe("An active legal hold blocks this purge.");
      expect(
        await inOrg(
          org.org_id,
          (o) =>
            o.db.first<{ p: string | null }>("SELECT purged_at AS p FROM observations WHERE observation_id = ?", id)!.p,
        ),
      ).toBeNull();
    }
    expect(
      await inOrg(
        org.org_id,
        (o) => o.db.first<{ n: number }>("SELECT count(*) AS n FROM audit_log WHERE action = 'observation.purged'")!.n,
      ),
    ).toBe(0);
    expect((await purge(k, o2)).status).toBe(200);

    // Retention: c1, o1 (hold on c1), o3, c3 (hold on o3) are held; c2 is not.
    clock.advance(400 * DAY);
    await retentionPolicy(k);
    const total = await applyAll(k);
    expect(total).toMatchObject({ examined: 6, held: 4, excluded: 2 }); // o2 (purged) and c2
    expect(await excludedIds(org.org_id)).toEqual([o2, c2].sort());
  });

  it("purge is refused only while the hold is active; release is idempotent and audited without an event", async () => {
    const org = await newOrg();
    const o = await appendOk(org.api_key, obs("s", "evidence"));
    const h = await hold(org.api_key, "observation", o);
    expectError(await purge(org.api_key, o), 409, "CONFLICT");
    const r1 = await call("POST", `/v1/legal-holds/${h}/release`, { key: org.api_key });
    expect(r1.status, r1.text).toBe(200);
    expect(r1.json.data).toMatchObject({ hold_id: h, status: "released", already_released: false });
    const r2 = await call("POST", `/v1/legal-holds/${h}/release`, { key: org.api_key, body: {} });
    expect(r2.json.data).toMatchObject({ status: "released", already_released: true });
    expect((await purge(org.api_key, o)).status).toBe(200);
    const rows = await inOrg(org.org_id, (s) => ({
      audit: s.db
        .all<{ action: string }>("SELECT action FROM audit_log WHERE resource_type = 'legal_hold' ORDER BY seq")
        .map((a) => a.action),
      events: s.db.first<{ n: number }>("SELECT count(*) AS n FROM events WHERE resource_type = 'legal_hold'")!.n,
    }));
    expect(rows).toEqual({ audit: ["legal_hold.created", "legal_hold.released", "legal_hold.released"], events: 0 });
  });

  it("validates the body and resolves the target like any read (hidden, foreign, missing: one 400)", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const writer = await mintKey(org.api_key, { scopes: ["*"] });
    const hidden = await appendOk(writer.key, obs("s", "private", { visibility: "private" }));
    const theirs = await appendOk(other.api_key, obs("s", "theirs"));
    const post = (body: unknown) => call("POST", "/v1/legal-holds", { key: org.api_key, body });
    const e1 = await post({ target_type: "project", target_id: hidden, reason: "r" });
    expectError(e1, 400, "VALIDATION_ERROR");
    expect(e1.json.error.message).toContain("target_type");
    expectError(await post({ target_type: "observation", target_id: hidden, reason: "" }), 400, "VALIDATION_ERROR");
    expectError(
      await post({ target_type: "observation", target_id: hidden, reason: "x".repeat(1001) }),
      400,
      "VALIDATION_ERROR",
    );
    const answers = await Promise.all(
      [hidden, theirs, `obs_${"0".repeat(32)}`].map((id) =>
        post({ target_type: "observation", target_id: id, reason: "r" }),
      ),
    );
    for (const r of answers) expectError(r, 400, "UNRESOLVED_REFERENCE");
    expect(
      new Set(answers.map((r, i) => r.json.error.message.replace([hidden, theirs, `obs_${"0".repeat(32)}`][i], "ID")))
        .size,
    ).toBe(1);
  });

  it("creating a hold restores what retention excluded, in the same write, bumping claim versions", async () => {
    const org = await newOrg();
    const k = org.api_key;
    const s = unique("s");
    const word = unique("restorable");
    const o = await appendOk(k, obs(s, `${word} evidence`));
    const [c] = await consolidateOk(k, s, [{ kind: "fact", statement: `${word} claim`, sources: supports(o) }]);
    clock.advance(400 * DAY);
    await retentionPolicy(k);
    expect((await applyAll(k)).excluded).toBe(2);
    expect(await claimVersion(org.org_id, c)).toMatchObject({ version: 2 });
    expectError(await call("GET", `/v1/claims/${c}/evidence`, { key: k }), 404, "NOT_FOUND");
    // The hold's target may be an excluded record: that is how it comes back.
    await hold(k, "observation", o);
    const v = await claimVersion(org.org_id, c);
    expect(v).toEqual({ version: 3, retention_excluded_at: null });
    const ev = await call("GET", `/v1/claims/${c}/evidence`, { key: k });
    expect(ev.status).toBe(200);
    expect(ev.json.data.supporting.map((x: { observation_id: string }) => x.observation_id)).toEqual([o]);
    expect((await call("GET", `/v1/memories?q=${word}`, { key: k })).text).toContain(c);
    // Held now: a new run leaves them alone.
    expect(await applyAll(k)).toMatchObject({ examined: 2, held: 2, excluded: 0 });
  });
});

describe("retention apply", () => {
  it("needs an active retention policy, validates its body, and is for owners and admins", async () => {
    const org = await newOrg();
    const none = await call("POST", "/v1/retention/apply", { key: org.api_key });
    expectError(none, 400, "VALIDATION_ERROR");
    expect(none.json.error.message).toContain("no active retention policy");
    await retentionPolicy(org.api_key);
    for (const body of [
      { limit: 0 },
      { limit: 501 },
      { limit: 1.5 },
      { dry_run: "yes" },
      { after: "not-a-cursor" },
      { extra: 1 },
    ])
      expectError(await call("POST", "/v1/retention/apply", { key: org.api_key, body }), 400, "VALIDATION_ERROR");
  });

  it("dry run counts without changing anything; a real run is resumable over several pages", async () => {
    const org = await newOrg();
    const k = org.api_key;
    const s = unique("s");
    const old: string[] = [];
    const claims: string[] = [];
    for (let i = 0; i < 4; i++) {
      const o = await appendOk(k, obs(s, `old ${i}`));
      old.push(o);
      claims.push(
        ...(await consolidateOk(k, s, [{ kind: "fact", statement: `old claim ${i}`, sources: supports(o) }])),
      );
    }
    clock.advance(400 * DAY);
    const young = await appendOk(k, obs(s, "young"));
    const policy = await retentionPolicy(k);

    const dry = await apply(k, { dry_run: true, limit: 500 });
    expect(dry).toMatchObject({
      policy_id: policy.policy_id,
      policy_version: 1,
      examined: 8,
      excluded: 8,
      held: 0,
      done: true,
      next_after: null,
    });
    expect(await claimVersion(org.org_id, claims[0])).toEqual({ version: 1, retention_excluded_at: null });
    expect(await excludedIds(org.org_id)).toEqual([]);

    // Pages of 3: observations, then claims; each page resumes after the previous one.
    const pages: { examined: number; done: boolean }[] = [];
    let after: string | undefined;
    for (;;) {
      const r = await apply(k, { limit: 3, ...(after ? { after } : {}) });
      pages.push({ examined: r.examined, done: r.done });
      if (r.done) break;
      expect(r.next_after).toBeTruthy();
      after = r.next_after!;
    }
    expect(pages.map((p) => p.examined).reduce((a, b) => a + b)).toBe(8);
    expect(pages.length).toBeGreaterThanOrEqual(3);
    expect(await excludedIds(org.org_id)).toEqual([...old, ...claims].sort());
    for (const id of claims) expect(await claimVersion(org.org_id, id)).toMatchObject({ version: 2 });
    expect((await call("GET", `/v1/subjects/${s}/references`, { key: k })).text).toContain(young);
    // Nothing is deleted.
    expect(
      await inOrg(
        org.org_id,
        (o) => o.db.first<{ n: number }>("SELECT count(*) AS n FROM observations WHERE content IS NOT NULL")!.n,
      ),
    ).toBe(5);
    // A second run finds nothing left to examine; runs are audited, never evented.
    expect(await apply(k)).toMatchObject({ examined: 0, excluded: 0, done: true });
    const trail = await inOrg(org.org_id, (o) => ({
      dry: o.db.first<{ n: number }>("SELECT count(*) AS n FROM audit_log WHERE action = 'retention.dry_run'")!.n,
      events: o.db.first<{ n: number }>(
        "SELECT count(*) AS n FROM events WHERE kind NOT IN ('observation.appended', 'claim.materialized')",
      )!.n,
    }));
    expect(trail).toEqual({ dry: 1, events: 0 });
  });

  it("applies a rule's kinds and visibility", async () => {
    const org = await newOrg();
    const k = org.api_key;
    const note = await appendOk(k, obs("s", "a note"));
    const priv = await appendOk(k, obs("s", "a private note", { visibility: "private" }));
    const decision = await appendOk(k, obs("s", "an event", { kind: "event" }));
    clock.advance(40 * DAY);
    await retentionPolicy(k, [{ record_type: "observation", max_age_days: 30, kinds: ["note"], visibility: "team" }]);
    expect(await applyAll(k)).toMatchObject({ examined: 1, excluded: 1 });
    expect(await excludedIds(org.org_id)).toEqual([note]);
    expect([priv, decision]).toHaveLength(2);
  });

  it("excluded records leave every read path, before search and pagination", async () => {
    const org = await newOrg();
    const owner = org.api_key;
    const alice = await mintKey(owner, { scopes: ["*"], max_trust: "verified" });
    const word = unique("bygone");
    const oldSubject = unique("old");
    const freshSubject = unique("fresh");
    const ox = await appendOk(alice.key, obs(oldSubject, `${word} evidence`, { trust: "verified" }));
    const [cx] = await consolidateOk(alice.key, oldSubject, [
      { kind: "fact", statement: `${word} claim`, sources: supports(ox) },
    ]);
    // Federation peers pull what crosses: one before, one after (each starts from the beginning).
    const peer = async () => {
      const p = await call("POST", "/v1/federation/peers", {
        key: owner,
        body: {
          endpoint: `https://${unique("p")}.example.com`,
          shared_secret: "federation-shared-secret-0123",
          direction: "pull",
        },
      });
      for (const resource_type of ["observation", "claim"])
        expect(
          (
            await call("POST", `/v1/federation/peers/${p.json.data.peer_id}/filters`, {
              key: owner,
              body: { resource_type },
            })
          ).status,
        ).toBe(201);
      return p.json.data.peer_id as string;
    };
    const gw = await mintKey(owner, { scopes: ["channel:compile"] });
    const channel = (
      await call("POST", "/v1/channels", {
        key: owner,
        body: { name: "c", audiences: ["a"], min_trust: "low", gateway_principal_id: gw.principal_id },
      })
    ).json.data.channel_id;
    const rel = (
      await call("POST", "/v1/knowledge-releases", { key: owner, body: { claim_id: cx, channel_id: channel } })
    ).json.data.release_id;
    for (const m of ["approve", "activate"])
      expect((await call("POST", `/v1/knowledge-releases/${rel}/${m}`, { key: owner, body: {} })).status).toBe(200);
    const contextId = (await call("POST", "/v1/context/compile", { key: owner, body: { query: word } })).json.data
      .context_id;

    clock.advance(400 * DAY);
    const fresh = await appendOk(alice.key, obs(freshSubject, `${word} fresh evidence`));
    const [cfresh] = await consolidateOk(alice.key, freshSubject, [
      { kind: "fact", statement: `fresh ${word}`, sources: [...supports(ox), ...supports(fresh)] },
    ]);
    const mcp = (name: string, args: unknown) =>
      call("POST", "/mcp", {
        key: owner,
        raw: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-06-18",
        },
      });
    const has = async (r: Promise<{ status: number; text: string }>, ...ids: string[]) => {
      const x = await r;
      expect(x.status, x.text).toBeLessThan(300);
      return ids.some((id) => x.text.includes(id));
    };
    const get = (path: string) => call("GET", path, { key: owner });
    // [read path, does it show the old records?]
    const paths: [string, () => Promise<boolean>][] = [
      ["memories list", () => has(get(`/v1/memories?subject_id=${oldSubject}`), cx)],
      ["memories search", () => has(get(`/v1/memories?q=${word}`), cx)],
      ["claim evidence", async () => (await get(`/v1/claims/${cx}/evidence`)).status === 200],
      [
        "evidence of a fresh claim (counted as hidden)",
        async () => {
          const r = await get(`/v1/claims/${cfresh}/evidence`);
          expect(r.json.data.hidden_source_count + r.json.data.supporting.length).toBe(2);
          return r.text.includes(ox);
        },
      ],
      ["compile", () => has(call("POST", "/v1/context/compile", { key: owner, body: { query: word } }), cx)],
      ["context read", () => has(get(`/v1/context/${contextId}`), cx)],
      ["export", () => has(get("/v1/export"), cx, ox)],
      ["subjects directory", () => has(get("/v1/subjects"), oldSubject)],
      // A subject with no retrievable record left answers like an unknown one.
      [
        "subject references",
        async () => {
          const r = await get(`/v1/subjects/${oldSubject}/references`);
          if (r.status === 404) return false;
          return has(Promise.resolve(r), cx, ox);
        },
      ],
      ["MCP svc_search", () => has(mcp("svc_search", { query: word }), cx)],
      ["MCP svc_recall", () => has(mcp("svc_recall", { query: word }), cx)],
      [
        "channel compile",
        () => has(call("POST", `/v1/channels/${channel}/context/compile`, { key: gw.key, body: { query: word } }), cx),
      ],
      // The release's snapshot is a copy of the claim: listed only while the claim may be retrieved.
      ["release list", () => has(get("/v1/knowledge-releases"), cx, rel)],
      [
        "federation pull",
        async () => {
          const raw = JSON.stringify({ peer_id: await peer(), sent_at: clock.nowIso(), include_memory: true });
          const headers = {
            "content-type": "application/json",
            "x-svc-peer-signature": sign("federation-shared-secret-0123", raw),
          };
          return has(call("POST", "/v1/federation/pull", { key: owner, raw, headers }), cx, ox);
        },
      ],
    ];
    for (const [name, shows] of paths) expect(await shows(), `${name} before retention`).toBe(true);
    await retentionPolicy(owner);
    expect((await applyAll(owner)).excluded).toBe(2);
    for (const [name, shows] of paths) expect(await shows(), `${name} after retention`).toBe(false);
    // The fresh claim is still there, its excluded source hidden.
    const ev = await get(`/v1/claims/${cfresh}/evidence`);
    expect(ev.json.data.hidden_source_count).toBe(1);
    // A new release of the excluded claim cannot even name it.
    const again = await call("POST", "/v1/knowledge-releases", {
      key: owner,
      body: { claim_id: cx, channel_id: channel },
    });
    expectError(again, 400, "UNRESOLVED_REFERENCE");
    // But its release stays revocable (else a later hold would put it back in service unstoppably);
    // approving or activating it is not.
    expectError(
      await call("POST", `/v1/knowledge-releases/${rel}/approve`, { key: owner, body: {} }),
      404,
      "NOT_FOUND",
    );
    const revoked = await call("POST", `/v1/knowledge-releases/${rel}/revoke`, { key: owner, body: {} });
    expect(revoked.status, revoked.text).toBe(200);
  }, 60_000);
});

describe("identity mappings", () => {
  it("versions per external identity: posting replaces, delete retires, history is kept and audited", async () => {
    const org = await newOrg();
    const k = org.api_key;
    const post = (body: unknown) => call("POST", "/v1/identity-mappings", { key: k, body });
    const m1 = await post({ external_system: "slack", external_id: "U1", subject_id: "alice" });
    expect(m1.status, m1.text).toBe(201);
    expect(m1.json.data).toMatchObject({ version: 1, status: "active", subject_id: "alice" });
    expect(m1.json.data.mapping_id).toMatch(/^map_[0-9a-f]{32}$/);
    const m2 = (await post({ external_system: "slack", external_id: "U1", subject_id: "alice-2" })).json.data;
    const other = (await post({ external_system: "email", external_id: "U1", subject_id: "alice" })).json.data;
    expect([m2.version, other.version]).toEqual([2, 1]);
    const list = async (qs: string) =>
      (await call("GET", `/v1/identity-mappings?${qs}`, { key: k })).json.data.mappings.map((m: any) => [
        m.mapping_id,
        m.status,
      ]);
    expect(await list("external_system=slack&external_id=U1")).toEqual([
      [m1.json.data.mapping_id, "retired"],
      [m2.mapping_id, "active"],
    ]);
    expect(await list("subject_id=alice")).toEqual([
      [m1.json.data.mapping_id, "retired"],
      [other.mapping_id, "active"],
    ]);
    const d1 = await call("DELETE", `/v1/identity-mappings/${m2.mapping_id}`, { key: k });
    expect(d1.json.data).toMatchObject({ status: "retired", already_retired: false });
    expect((await call("DELETE", `/v1/identity-mappings/${m2.mapping_id}`, { key: k })).json.data.already_retired).toBe(
      true,
    );
    expect(await list("external_system=slack&status=active")).toEqual([]);
    // After every version is retired, the next one still continues the history.
    expect((await post({ external_system: "slack", external_id: "U1", subject_id: "alice-3" })).json.data.version).toBe(
      3,
    );
    const p = await call("GET", "/v1/identity-mappings?limit=2", { key: k });
    expect(p.json.data.has_more).toBe(true);
    const p2 = await call("GET", `/v1/identity-mappings?limit=2&after=${p.json.data.next_cursor}`, { key: k });
    expect(p2.json.data.mappings.length).toBe(2);
    const trail = await inOrg(org.org_id, (o) => ({
      audit: o.db
        .all<{ action: string }>("SELECT action FROM audit_log WHERE resource_type = 'identity_mapping' ORDER BY seq")
        .map((a) => a.action),
      events: o.db.first<{ n: number }>("SELECT count(*) AS n FROM events")!.n,
    }));
    expect(trail).toEqual({
      audit: [
        "identity_mapping.created",
        "identity_mapping.retired",
        "identity_mapping.created",
        "identity_mapping.created",
        "identity_mapping.retired",
        "identity_mapping.retired",
        "identity_mapping.created",
      ],
      events: 0,
    });
  });

  it("validates fields and filters, and keeps organizations apart", async () => {
    const org = await newOrg();
    const other = await newOrg();
    for (const body of [
      { external_system: "", external_id: "x", subject_id: "s" },
      { external_system: "x".repeat(65), external_id: "x", subject_id: "s" },
      { external_system: "s", external_id: "x".repeat(257), subject_id: "s" },
      { external_system: "s", external_id: "x" },
    ])
      expectError(await call("POST", "/v1/identity-mappings", { key: org.api_key, body }), 400, "VALIDATION_ERROR");
    const bad = await call("GET", "/v1/identity-mappings?status=gone", { key: org.api_key });
    expectError(bad, 400, "VALIDATION_ERROR");
    expect(bad.json.error.message).toContain("active");
    const mine = (
      await call("POST", "/v1/identity-mappings", {
        key: org.api_key,
        body: { external_system: "crm", external_id: "42", subject_id: "s" },
      })
    ).json.data;
    const theirs = (
      await call("POST", "/v1/identity-mappings", {
        key: other.api_key,
        body: { external_system: "crm", external_id: "42", subject_id: "t" },
      })
    ).json.data;
    expect(theirs.version).toBe(1);
    expect((await call("GET", "/v1/identity-mappings", { key: other.api_key })).text).not.toContain(mine.mapping_id);
    const foreign = await call("DELETE", `/v1/identity-mappings/${mine.mapping_id}`, { key: other.api_key });
    const missing = await call("DELETE", `/v1/identity-mappings/map_${"0".repeat(32)}`, { key: other.api_key });
    for (const r of [foreign, missing]) expectError(r, 404, "NOT_FOUND");
    expect(foreign.json.error).toEqual(missing.json.error);
    expect(
      (await call("GET", "/v1/identity-mappings?status=active", { key: org.api_key })).json.data.mappings[0].status,
    ).toBe("active");
  });
});

describe("release eligibility", () => {
  it("names retention exclusion as its own reason (exclusion also bumps the version, so a pinned release is stale too)", async () => {
    const { ineligibility } = await import("../src/domains/governance/eligibility");
    const facts = {
      claim_id: "c",
      version: 2,
      status: "active",
      valid_to: null,
      visibility: "team",
      project_id: null,
      workspace_id: null,
      trust: "verified",
      author_id: "p",
      retention_excluded_at: null as string | null,
      supporting_trusts: ["verified"],
    };
    const ctx = (f: typeof facts) => ({ facts: new Map([["c", f]]), approved: null, now: clock.nowIso() });
    expect(ineligibility(ctx(facts), { claim_id: "c", claim_version: 2 }, "low")).toBeNull();
    expect(
      ineligibility(
        ctx({ ...facts, retention_excluded_at: clock.nowIso() }),
        { claim_id: "c", claim_version: 2 },
        "low",
      ),
    ).toBe("retention_excluded");
  });
});

describe("governance records follow the one predicate", () => {
  it("answers an approval of a retention-excluded claim exactly like a missing one", async () => {
    const org = await newOrg();
    const o = await appendOk(org.api_key, obs(unique("s"), "aging evidence"));
    const [claim] = await consolidateOk(org.api_key, "s", [
      { kind: "fact", statement: "aging claim", sources: supports(o) },
    ]);
    const submitted = await call("POST", "/v1/claim-approvals", { key: org.api_key, body: { claim_id: claim } });
    expect(submitted.status, submitted.text).toBe(201);
    clock.advance(400 * DAY);
    try {
      await retentionPolicy(org.api_key);
      expect((await applyAll(org.api_key)).excluded).toBeGreaterThan(0);
      const decide = (id: string) =>
        call("POST", `/v1/claim-approvals/${id}/decide`, { key: org.api_key, body: { decision: "approved" } });
      const excluded = await decide(submitted.json.data.approval_id);
      const missing = await decide(`apr_${"0".repeat(32)}`);
      expectError(excluded, 404, "NOT_FOUND");
      expect(excluded.json.error).toEqual(missing.json.error);
    } finally {
      clock.advance(-400 * DAY);
    }
  });
});
