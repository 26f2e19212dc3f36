// Governance: policies, claim approvals, channels, knowledge releases, channel compile (DESIGN part 2).
import { afterEach, describe, expect, it } from "vitest";
import { MAX_CREATION_DEPTH, dutyRefusal } from "../src/access/duty";
import { dutyFacts } from "../src/domains/governance/store";
import { clock } from "../src/http/clock";
import type { Caller } from "../src/org/request";
import { appendOk, call, consolidateOk, expectError, inOrg, mintKey, newOrg, obs, supports } from "./helpers";

afterEach(() => clock.reset());

const zero = "0".repeat(32);
type Org = Awaited<ReturnType<typeof newOrg>>;

async function ownerId(org: Org): Promise<string> {
  return (await call("GET", "/v1/principal", { key: org.api_key })).json.data.principal_id;
}

/** A claim about a fresh subject whose one supporting observation has `trust`. */
let n = 0;
async function claimOf(
  key: string,
  statement: string,
  opts: { trust?: string; visibility?: string; valid_to?: string } = {},
) {
  const subject = `gov-${n++}`;
  const o = await appendOk(
    key,
    obs(subject, statement, { trust: opts.trust ?? "verified", visibility: opts.visibility ?? "team" }),
  );
  const [id] = await consolidateOk(key, subject, [
    {
      kind: "fact",
      statement,
      visibility: opts.visibility ?? "team",
      ...(opts.valid_to ? { valid_to: opts.valid_to } : {}),
      sources: supports(o),
    },
  ]);
  return id;
}

async function policy(key: string, type: string, rules: unknown, status = "active") {
  const r = await call("POST", "/v1/policies", { key, body: { type, name: `${type}-${n++}`, rules, status } });
  expect(r.status, r.text).toBe(201);
  return r.json.data as { policy_id: string; version: number; status: string };
}

async function channelFor(key: string, gatewayId: string, extra: Record<string, unknown> = {}) {
  const r = await call("POST", "/v1/channels", {
    key,
    body: {
      name: `chan-${n++}`,
      audiences: ["public", "partners"],
      min_trust: "medium",
      gateway_principal_id: gatewayId,
      ...extra,
    },
  });
  expect(r.status, r.text).toBe(201);
  return r.json.data as { channel_id: string; version: number; status: string };
}

async function release(key: string, claimId: string, channelId: string) {
  const r = await call("POST", "/v1/knowledge-releases", { key, body: { claim_id: claimId, channel_id: channelId } });
  expect(r.status, r.text).toBe(201);
  return r.json.data.release_id as string;
}

const moveRelease = (key: string, id: string, action: "approve" | "activate" | "revoke") =>
  call("POST", `/v1/knowledge-releases/${id}/${action}`, { key, body: {} });

async function activeRelease(key: string, claimId: string, channelId: string) {
  const id = await release(key, claimId, channelId);
  for (const a of ["approve", "activate"] as const) expect((await moveRelease(key, id, a)).status).toBe(200);
  return id;
}

const compileChannel = (key: string, channelId: string, body: Record<string, unknown> = {}) =>
  call("POST", `/v1/channels/${channelId}/context/compile`, { key, body });

describe("policies", () => {
  it("are typed, versioned with history, changed only with the current expected_version, retired for good", async () => {
    const org = await newOrg();
    const p = await call("POST", "/v1/policies", {
      key: org.api_key,
      body: { type: "approval", name: "four eyes", rules: { separation_of_duty: true } },
    });
    expect(p.status).toBe(201);
    expect(p.json.data).toMatchObject({
      type: "approval",
      name: "four eyes",
      rules: { separation_of_duty: true },
      status: "draft",
      version: 1,
    });
    expect(p.json.data.policy_id).toMatch(/^pol_[0-9a-f]{32}$/);
    const path = `/v1/policies/${p.json.data.policy_id}`;
    const stale = await call("PATCH", path, { key: org.api_key, body: { expected_version: 3, status: "active" } });
    expectError(stale, 409, "CONFLICT");
    expect(stale.json.error.message).toContain("version 1");
    const wrongShape = await call("PATCH", path, {
      key: org.api_key,
      body: { expected_version: 1, rules: { separation_of_duty: true, require_approved_claim: true } },
    });
    expectError(wrongShape, 400, "VALIDATION_ERROR");
    expect(wrongShape.json.error.message).toContain('"rules');
    expectError(
      await call("PATCH", path, { key: org.api_key, body: { expected_version: 1 } }),
      400,
      "VALIDATION_ERROR",
    );
    const on = await call("PATCH", path, {
      key: org.api_key,
      body: { expected_version: 1, status: "active", rules: { separation_of_duty: false } },
    });
    expect(on.json.data).toMatchObject({ status: "active", version: 2, rules: { separation_of_duty: false } });
    const off = await call("PATCH", path, { key: org.api_key, body: { expected_version: 2, status: "retired" } });
    expect(off.json.data).toMatchObject({ status: "retired", version: 3 });
    expectError(
      await call("PATCH", path, { key: org.api_key, body: { expected_version: 3, status: "active" } }),
      400,
      "VALIDATION_ERROR",
    );
    const history = await inOrg(org.org_id, (o) =>
      o.db.all<{ version: number; status: string; rules: string }>(
        "SELECT version, status, rules FROM policy_versions WHERE policy_id = ? ORDER BY version",
        p.json.data.policy_id,
      ),
    );
    expect(history.map((h) => [h.version, h.status, JSON.parse(h.rules).separation_of_duty])).toEqual([
      [1, "draft", true],
      [2, "active", false],
      [3, "retired", false],
    ]);
    const audit = await call("GET", "/v1/audit?action=policy.changed", { key: org.api_key });
    expect(audit.json.data.entries.length).toBe(2);
    expect((await call("GET", "/v1/events", { key: org.api_key })).json.data.events).toEqual([]);
  });

  it("allow one active policy per type, naming the active one on conflict", async () => {
    const org = await newOrg();
    const first = await policy(org.api_key, "release", { separation_of_duty: true, require_approved_claim: false });
    const second = await call("POST", "/v1/policies", {
      key: org.api_key,
      body: {
        type: "release",
        name: "other",
        rules: { separation_of_duty: false, require_approved_claim: true },
        status: "active",
      },
    });
    expectError(second, 409, "CONFLICT");
    expect(second.json.error.message).toContain(first.policy_id);
    const draft = await policy(
      org.api_key,
      "release",
      { separation_of_duty: false, require_approved_claim: true },
      "draft",
    );
    const activate = await call("PATCH", `/v1/policies/${draft.policy_id}`, {
      key: org.api_key,
      body: { expected_version: 1, status: "active" },
    });
    expectError(activate, 409, "CONFLICT");
    expect(activate.json.error.message).toContain(first.policy_id);
    await policy(org.api_key, "approval", { separation_of_duty: true });
    expect(
      (
        await call("PATCH", `/v1/policies/${first.policy_id}`, {
          key: org.api_key,
          body: { expected_version: 1, status: "draft" },
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await call("PATCH", `/v1/policies/${draft.policy_id}`, {
          key: org.api_key,
          body: { expected_version: 1, status: "active" },
        })
      ).status,
    ).toBe(200);
    const active = await call("GET", "/v1/policies?status=active", { key: org.api_key });
    expect(active.json.data.policies.map((p: any) => p.type).sort()).toEqual(["approval", "release"]);
    const releases = await call("GET", "/v1/policies?type=release&limit=1", { key: org.api_key });
    expect(releases.json.data.policies).toHaveLength(1);
    expect(releases.json.data.has_more).toBe(true);
    const next = await call("GET", `/v1/policies?type=release&limit=1&after=${releases.json.data.next_cursor}`, {
      key: org.api_key,
    });
    expect(next.json.data.policies[0].policy_id).not.toBe(releases.json.data.policies[0].policy_id);
  });

  it("validate every field, including retention rules, and need owner or admin to create", async () => {
    const org = await newOrg();
    const bad: unknown[] = [
      { type: "nonsense", name: "x", rules: {} },
      { type: "approval", name: "", rules: { separation_of_duty: true } },
      { type: "approval", name: "x", rules: { separation_of_duty: "yes" } },
      { type: "approval", name: "x", rules: { separation_of_duty: true, extra: 1 } },
      { type: "release", name: "x", rules: { separation_of_duty: true } },
      { type: "approval", name: "x", rules: { separation_of_duty: true }, status: "retired" },
      { type: "retention", name: "x", rules: { rules: [] } },
      { type: "retention", name: "x", rules: { rules: [{ record_type: "claim", max_age_days: 0 }] } },
      { type: "retention", name: "x", rules: { rules: [{ record_type: "claim", max_age_days: 36501 }] } },
      { type: "retention", name: "x", rules: { rules: [{ record_type: "claim", max_age_days: 30, kinds: ["note"] }] } },
      { type: "retention", name: "x", rules: { rules: [{ record_type: "file", max_age_days: 30 }] } },
      { type: "approval", name: "x", rules: { separation_of_duty: true }, org_id: "org_x" },
    ];
    for (const body of bad)
      expectError(await call("POST", "/v1/policies", { key: org.api_key, body }), 400, "VALIDATION_ERROR");
    const unknownType = await call("POST", "/v1/policies", { key: org.api_key, body: bad[0] });
    expect(unknownType.json.error.message).toContain('"type"');
    expect(unknownType.json.error.message).toContain("retention");
    const badKind = await call("POST", "/v1/policies", { key: org.api_key, body: bad[9] });
    expect(badKind.json.error.message).toContain('"rules.rules.0.kinds.0"');
    const retention = await policy(
      org.api_key,
      "retention",
      { rules: [{ record_type: "observation", max_age_days: 90, kinds: ["note"], visibility: "private" }] },
      "draft",
    );
    expect(retention.version).toBe(1);
    expectError(
      await call("POST", "/v1/policies", {
        key: org.api_key,
        body: {
          type: "retention",
          name: `retention-${n - 1}`,
          rules: { rules: [{ record_type: "claim", max_age_days: 1 }] },
        },
      }),
      409,
      "CONFLICT",
    );
    const member = await mintKey(org.api_key, { scopes: ["*"] });
    const r = await call("POST", "/v1/policies", {
      key: member.key,
      body: { type: "approval", name: "m", rules: { separation_of_duty: false } },
    });
    expectError(r, 403, "FORBIDDEN");
    expectError(
      await call("PATCH", `/v1/policies/${retention.policy_id}`, {
        key: member.key,
        body: { expected_version: 1, status: "retired" },
      }),
      403,
      "FORBIDDEN",
    );
    const reader = await mintKey(org.api_key, { scopes: ["governance:read"] });
    expect((await call("GET", "/v1/policies", { key: reader.key })).json.data.policies).toHaveLength(1);
    const noScope = await mintKey(org.api_key, { scopes: ["events:read"] });
    expectError(await call("GET", "/v1/policies", { key: noScope.key }), 403, "FORBIDDEN");
  });
});

describe("claim approvals", () => {
  it("pin the current claim version with the evidence the submitter could see", async () => {
    const org = await newOrg();
    const alice = await mintKey(org.api_key, { scopes: ["*"], max_trust: "verified" });
    const bob = await mintKey(org.api_key, { scopes: ["*"] });
    const pub = await appendOk(alice.key, obs("ap", "public evidence"));
    const priv = await appendOk(alice.key, obs("ap", "private evidence", { visibility: "private" }));
    const [claim] = await consolidateOk(alice.key, "ap", [
      {
        kind: "fact",
        statement: "a team claim",
        visibility: "team",
        sources: [
          { observation_id: pub, relation: "supports" },
          { observation_id: priv, relation: "qualifies" },
        ],
      },
    ]);
    const byBob = await call("POST", "/v1/claim-approvals", {
      key: bob.key,
      body: { claim_id: claim, note: "please" },
    });
    expect(byBob.status).toBe(201);
    expect(byBob.json.data).toMatchObject({
      claim_id: claim,
      claim_version: 1,
      status: "pending",
      note: "please",
      submitted_by: bob.principal_id,
      evidence: { observation_ids: [pub], hidden_source_count: 1 },
    });
    expect(byBob.json.data.approval_id).toMatch(/^apr_[0-9a-f]{32}$/);
    expectError(
      await call("POST", "/v1/claim-approvals", { key: alice.key, body: { claim_id: claim } }),
      409,
      "CONFLICT",
    );
    // What alice sees of bob's submission is still what bob could see, never more.
    const seen = await call("GET", `/v1/claim-approvals?claim_id=${claim}`, { key: alice.key });
    expect(seen.json.data.approvals[0].evidence).toEqual({ observation_ids: [pub], hidden_source_count: 1 });
    // A new claim version can be submitted again.
    expect((await call("POST", `/v1/claims/${claim}/expire`, { key: alice.key, body: {} })).status).toBe(200);
    expectError(
      await call("POST", "/v1/claim-approvals", { key: alice.key, body: { claim_id: claim } }),
      400,
      "VALIDATION_ERROR",
    );
    const revoked = await claimOf(alice.key, "to revoke");
    await call("POST", `/v1/claims/${revoked}/revoke`, { key: alice.key, body: {} });
    expectError(
      await call("POST", "/v1/claim-approvals", { key: alice.key, body: { claim_id: revoked } }),
      400,
      "VALIDATION_ERROR",
    );
    for (const body of [
      {},
      { claim_id: "" },
      { claim_id: claim, note: "x".repeat(2001) },
      { claim_id: claim, extra: true },
    ])
      expectError(await call("POST", "/v1/claim-approvals", { key: alice.key, body }), 400, "VALIDATION_ERROR");
  });

  it("refuse hidden, missing and foreign claims identically", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const alice = await mintKey(org.api_key, { scopes: ["*"] });
    const bob = await mintKey(org.api_key, { scopes: ["*"] });
    const hidden = await claimOf(alice.key, "alice only", { trust: "medium", visibility: "private" });
    const foreign = await claimOf(other.api_key, "elsewhere");
    const answers = await Promise.all(
      [hidden, foreign, `claim_${zero}`].map((claim_id) =>
        call("POST", "/v1/claim-approvals", { key: bob.key, body: { claim_id } }),
      ),
    );
    for (const r of answers) expectError(r, 400, "UNRESOLVED_REFERENCE");
    expect(new Set(answers.map((r) => r.json.error.message.replace(/claim_[0-9a-f]{32}/, "ID"))).size).toBe(1);
    // Alice's approval of her private claim is invisible to bob: not listed, and deciding it is 404.
    const mine = await call("POST", "/v1/claim-approvals", { key: alice.key, body: { claim_id: hidden } });
    expect(mine.status).toBe(201);
    expect((await call("GET", "/v1/claim-approvals", { key: bob.key })).json.data.approvals).toEqual([]);
    expect((await call("GET", "/v1/claim-approvals", { key: alice.key })).json.data.approvals).toHaveLength(1);
    const decide = (key: string, id: string) =>
      call("POST", `/v1/claim-approvals/${id}/decide`, { key, body: { decision: "approved" } });
    const invisible = await decide(bob.key, mine.json.data.approval_id);
    const missing = await decide(bob.key, `apr_${zero}`);
    const fromOther = await decide(other.api_key, mine.json.data.approval_id);
    for (const r of [invisible, missing, fromOther]) expectError(r, 404, "NOT_FOUND");
    expect(invisible.json.error).toEqual(missing.json.error);
    expect(fromOther.json.error).toEqual(missing.json.error);
  });

  it("are decided once, refuse stale versions, and enforce separation of duty from the active policy", async () => {
    const org = await newOrg();
    const author = await mintKey(org.api_key, { scopes: ["*"], max_trust: "verified" });
    const submitter = await mintKey(org.api_key, { scopes: ["*"] });
    const third = await mintKey(org.api_key, { scopes: ["*"] });
    const submit = async (key: string, claimId: string) => {
      const r = await call("POST", "/v1/claim-approvals", { key, body: { claim_id: claimId } });
      expect(r.status, r.text).toBe(201);
      return `/v1/claim-approvals/${r.json.data.approval_id}/decide`;
    };
    // No policy: self-approval is allowed.
    const c1 = await claimOf(author.key, "first");
    const p1 = await submit(author.key, c1);
    const self = await call("POST", p1, { key: author.key, body: { decision: "rejected", note: "not yet" } });
    expect(self.json.data).toMatchObject({
      status: "rejected",
      decided_by: author.principal_id,
      decision_note: "not yet",
    });
    expect(self.json.data.decided_at).toBeTruthy();
    expectError(await call("POST", p1, { key: third.key, body: { decision: "approved" } }), 400, "VALIDATION_ERROR");
    expectError(await call("POST", p1, { key: third.key, body: { decision: "maybe" } }), 400, "VALIDATION_ERROR");
    // With separation of duty on, neither the submitter nor the claim's author may decide.
    const sod = await policy(org.api_key, "approval", { separation_of_duty: true });
    const c2 = await claimOf(author.key, "second");
    const p2 = await submit(submitter.key, c2);
    expectError(await call("POST", p2, { key: submitter.key, body: { decision: "approved" } }), 403, "FORBIDDEN");
    expectError(await call("POST", p2, { key: author.key, body: { decision: "approved" } }), 403, "FORBIDDEN");
    expect((await call("POST", p2, { key: third.key, body: { decision: "approved" } })).json.data.status).toBe(
      "approved",
    );
    // A claim that changed since submission: 409, for approve and reject alike.
    const c3 = await claimOf(author.key, "third");
    const p3 = await submit(submitter.key, c3);
    await call("POST", `/v1/claims/${c3}/expire`, { key: author.key, body: {} });
    expectError(await call("POST", p3, { key: third.key, body: { decision: "approved" } }), 409, "CONFLICT");
    expectError(await call("POST", p3, { key: third.key, body: { decision: "rejected" } }), 409, "CONFLICT");
    // Retiring the policy lifts the rule.
    await call("PATCH", `/v1/policies/${sod.policy_id}`, {
      key: org.api_key,
      body: { expected_version: 1, status: "retired" },
    });
    const c4 = await claimOf(author.key, "fourth");
    const p4 = await submit(author.key, c4);
    expect((await call("POST", p4, { key: author.key, body: { decision: "approved" } })).status).toBe(200);
    const approvedList = await call("GET", "/v1/claim-approvals?status=approved", { key: org.api_key });
    expect(approvedList.json.data.approvals.map((a: any) => a.claim_id).sort()).toEqual([c2, c4].sort());
    expect(
      (await call("GET", "/v1/events", { key: org.api_key })).json.data.events.some(
        (e: any) => e.resource_type === "claim_approval",
      ),
    ).toBe(false);
    const audit = await call("GET", "/v1/audit?action=claim_approval.approved", { key: org.api_key });
    expect(audit.json.data.entries.length).toBe(2);
  });
});

describe("channels", () => {
  it("bind one non-human gateway, validate, and change status only with the current version", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const gw = await mintKey(org.api_key, { scopes: ["channel:compile"] });
    const ch = await call("POST", "/v1/channels", {
      key: org.api_key,
      body: { name: "public", audiences: ["web"], min_trust: "high", gateway_principal_id: gw.principal_id },
    });
    expect(ch.status).toBe(201);
    expect(ch.json.data).toMatchObject({
      name: "public",
      audiences: ["web"],
      min_trust: "high",
      gateway_principal_id: gw.principal_id,
      status: "active",
      version: 1,
    });
    expect(ch.json.data.channel_id).toMatch(/^chn_[0-9a-f]{32}$/);
    const gw2 = await mintKey(org.api_key, { scopes: ["channel:compile"] });
    const body = (extra: Record<string, unknown>) => ({
      name: `c${n++}`,
      audiences: ["a"],
      min_trust: "low",
      gateway_principal_id: gw2.principal_id,
      ...extra,
    });
    for (const bad of [
      body({ audiences: [] }),
      body({ audiences: Array.from({ length: 21 }, (_, i) => `a${i}`) }),
      body({ audiences: [""] }),
      body({ min_trust: "absolute" }),
      body({ name: "" }),
      body({ gateway_principal_id: undefined }),
      body({ extra: 1 }),
    ])
      expectError(await call("POST", "/v1/channels", { key: org.api_key, body: bad }), 400, "VALIDATION_ERROR");
    const enumMessage = await call("POST", "/v1/channels", { key: org.api_key, body: body({ min_trust: "absolute" }) });
    expect(enumMessage.json.error.message).toContain("verified");
    const foreignGw = await mintKey(other.api_key, { scopes: ["channel:compile"] });
    for (const id of [`prn_${zero}`, foreignGw.principal_id])
      expectError(
        await call("POST", "/v1/channels", { key: org.api_key, body: body({ gateway_principal_id: id }) }),
        400,
        "UNRESOLVED_REFERENCE",
      );
    expectError(
      await call("POST", "/v1/channels", {
        key: org.api_key,
        body: body({ gateway_principal_id: await ownerId(org) }),
      }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(
      await call("POST", "/v1/channels", { key: org.api_key, body: body({ gateway_principal_id: gw.principal_id }) }),
      409,
      "CONFLICT",
    );
    expectError(
      await call("POST", "/v1/channels", { key: org.api_key, body: body({ name: "public" }) }),
      409,
      "CONFLICT",
    );

    const path = `/v1/channels/${ch.json.data.channel_id}`;
    expectError(
      await call("PATCH", path, { key: org.api_key, body: { status: "paused", expected_version: 2 } }),
      409,
      "CONFLICT",
    );
    expectError(
      await call("PATCH", path, { key: org.api_key, body: { status: "closed", expected_version: 1 } }),
      400,
      "VALIDATION_ERROR",
    );
    expect(
      (await call("PATCH", path, { key: org.api_key, body: { status: "paused", expected_version: 1 } })).json.data,
    ).toMatchObject({ status: "paused", version: 2 });
    expect(
      (await call("PATCH", path, { key: org.api_key, body: { status: "active", expected_version: 2 } })).json.data,
    ).toMatchObject({ status: "active", version: 3 });
    expect(
      (await call("PATCH", path, { key: org.api_key, body: { status: "disabled", expected_version: 3 } })).json.data,
    ).toMatchObject({ status: "disabled", version: 4 });
    expectError(
      await call("PATCH", path, { key: org.api_key, body: { status: "active", expected_version: 4 } }),
      400,
      "VALIDATION_ERROR",
    );
    // A disabled channel no longer holds its gateway.
    expect(
      (await call("POST", "/v1/channels", { key: org.api_key, body: body({ gateway_principal_id: gw.principal_id }) }))
        .status,
    ).toBe(201);
    const list = await call("GET", "/v1/channels?status=disabled", { key: org.api_key });
    expect(list.json.data.channels.map((c: any) => c.channel_id)).toEqual([ch.json.data.channel_id]);
    expectError(
      await call("PATCH", path, { key: other.api_key, body: { status: "paused", expected_version: 4 } }),
      404,
      "NOT_FOUND",
    );
    expect((await call("GET", "/v1/events", { key: org.api_key })).json.data.events).toEqual([]);
  });
});

/** A key of a new principal holding `role` in the organization. */
async function withRole(ownerKey: string, role: "admin" | "member", extra: Record<string, unknown> = {}) {
  const k = await mintKey(ownerKey, { scopes: ["*"], ...extra });
  if (role !== "member") {
    const m = await call("POST", "/v1/memberships", { key: ownerKey, body: { principal_id: k.principal_id, role } });
    expect(m.status, m.text).toBe(201);
  }
  return k;
}

describe("shared channels and their releases", () => {
  it("a channel is changed, and its releases approved, activated and revoked, only by its creator or an owner/admin", async () => {
    const org = await newOrg();
    const alice = await withRole(org.api_key, "member", { max_trust: "verified" });
    const bob = await withRole(org.api_key, "member", { max_trust: "verified" });
    const admin = await withRole(org.api_key, "admin");
    const gw = await mintKey(org.api_key, { scopes: ["channel:compile"] });
    const owners = await channelFor(org.api_key, gw.principal_id);
    const path = `/v1/channels/${owners.channel_id}`;
    // A member cannot disable (finally) or pause the owner's channel; nothing changes.
    for (const status of ["disabled", "paused"]) {
      const r = await call("PATCH", path, { key: alice.key, body: { status, expected_version: 1 } });
      expectError(r, 403, "FORBIDDEN");
      expect(r.json.error.message).toBe("Only the channel's creator or an owner or admin may change it.");
    }
    const listed = (await call("GET", "/v1/channels", { key: org.api_key })).json.data.channels.find(
      (c: any) => c.channel_id === owners.channel_id,
    );
    expect(listed).toMatchObject({ status: "active", version: 1 });
    // A member drafts a release of the owner's verified claim into the owner's channel, but cannot publish it.
    const claim = await claimOf(org.api_key, "the owner's verified answer");
    const drafted = await release(alice.key, claim, owners.channel_id);
    for (const action of ["approve", "activate", "revoke"] as const) {
      const r = await moveRelease(alice.key, drafted, action);
      expectError(r, 403, "FORBIDDEN");
      expect(r.json.error.message).toBe(`Only the channel's creator or an owner or admin may ${action} its releases.`);
    }
    expect((await moveRelease(admin.key, drafted, "approve")).json.data).toMatchObject({
      status: "approved",
      approved_by: admin.principal_id,
    });
    expectError(await moveRelease(alice.key, drafted, "activate"), 403, "FORBIDDEN");
    expectError(await moveRelease(bob.key, drafted, "activate"), 403, "FORBIDDEN");
    expect((await moveRelease(org.api_key, drafted, "activate")).json.data.status).toBe("active");
    expectError(await moveRelease(alice.key, drafted, "revoke"), 403, "FORBIDDEN");
    const published = (await call("GET", "/v1/events?kind=release.published", { key: org.api_key })).json.data.events;
    expect(published.map((e: any) => e.resource_id)).toEqual([drafted]);
    expect((await moveRelease(admin.key, drafted, "revoke")).json.data.status).toBe("revoked");
    // A member's own channel: the member manages it and what it publishes; another member does not; an admin does.
    const gw2 = await mintKey(alice.key, { scopes: ["channel:compile"] });
    const mine = await channelFor(alice.key, gw2.principal_id);
    expectError(
      await call("PATCH", `/v1/channels/${mine.channel_id}`, {
        key: bob.key,
        body: { status: "paused", expected_version: 1 },
      }),
      403,
      "FORBIDDEN",
    );
    expect(
      (
        await call("PATCH", `/v1/channels/${mine.channel_id}`, {
          key: alice.key,
          body: { status: "paused", expected_version: 1 },
        })
      ).json.data,
    ).toMatchObject({ status: "paused", version: 2 });
    expect(
      (
        await call("PATCH", `/v1/channels/${mine.channel_id}`, {
          key: admin.key,
          body: { status: "active", expected_version: 2 },
        })
      ).json.data,
    ).toMatchObject({ status: "active", version: 3 });
    const bobs = await release(bob.key, await claimOf(bob.key, "bob's verified answer"), mine.channel_id);
    expectError(await moveRelease(bob.key, bobs, "approve"), 403, "FORBIDDEN");
    for (const action of ["approve", "activate"] as const)
      expect((await moveRelease(alice.key, bobs, action)).json.data.status).not.toBe("draft");
    // Refusals wrote nothing: the audit holds only the moves that happened.
    const audit = await call("GET", "/v1/audit?limit=500", { key: org.api_key });
    const actions = audit.json.data.entries.map((e: any) => e.action);
    expect(actions.filter((a: string) => a === "channel.changed")).toHaveLength(2);
    expect(actions.filter((a: string) => a.startsWith("release.") && a !== "release.created").sort()).toEqual([
      "release.activated",
      "release.activated",
      "release.approved",
      "release.approved",
      "release.revoked",
    ]);
  });
});

describe("knowledge releases", () => {
  it("move draft -> approved -> active -> revoked with metadata-only events", async () => {
    const org = await newOrg();
    const gw = await mintKey(org.api_key, { scopes: ["channel:compile"] });
    const ch = await channelFor(org.api_key, gw.principal_id);
    const claim = await claimOf(org.api_key, "the sky is blue over the harbour");
    const created = await call("POST", "/v1/knowledge-releases", {
      key: org.api_key,
      body: { claim_id: claim, channel_id: ch.channel_id, claim_version: 1 },
    });
    expect(created.status).toBe(201);
    const rel = created.json.data;
    expect(rel.release_id).toMatch(/^rel_[0-9a-f]{32}$/);
    expect(rel).toMatchObject({
      channel_id: ch.channel_id,
      claim_id: claim,
      claim_version: 1,
      status: "draft",
      hidden_source_count: 0,
      snapshot: { kind: "fact", statement: "the sky is blue over the harbour", trust: "verified", valid_to: null },
    });
    expect(rel.snapshot.evidence).toHaveLength(1);
    expect(rel.snapshot.evidence[0].content_hash).toMatch(/^sha256:/);
    expectError(await moveRelease(org.api_key, rel.release_id, "activate"), 400, "VALIDATION_ERROR");
    const approved = await moveRelease(org.api_key, rel.release_id, "approve");
    expect(approved.json.data).toMatchObject({ status: "approved", approved_by: await ownerId(org) });
    expectError(await moveRelease(org.api_key, rel.release_id, "approve"), 400, "VALIDATION_ERROR");
    const active = await moveRelease(org.api_key, rel.release_id, "activate");
    expect(active.json.data.status).toBe("active");
    expect(active.json.data.activated_at).toBeTruthy();
    expectError(await moveRelease(org.api_key, rel.release_id, "activate"), 400, "VALIDATION_ERROR");
    const revoked = await moveRelease(org.api_key, rel.release_id, "revoke");
    expect(revoked.json.data.status).toBe("revoked");
    expectError(await moveRelease(org.api_key, rel.release_id, "revoke"), 400, "VALIDATION_ERROR");
    expectError(await moveRelease(org.api_key, rel.release_id, "approve"), 400, "VALIDATION_ERROR");
    const events = (await call("GET", "/v1/events", { key: org.api_key })).json.data.events.filter((e: any) =>
      e.kind.startsWith("release."),
    );
    expect(events.map((e: any) => [e.kind, e.resource_type, e.resource_id])).toEqual([
      ["release.published", "release", rel.release_id],
      ["release.revoked", "release", rel.release_id],
    ]);
    for (const e of events)
      expect(e.payload).toEqual({
        release_id: rel.release_id,
        channel_id: ch.channel_id,
        claim_id: claim,
        claim_version: 1,
      });
    // Drafts and approved releases can be revoked too (each emits release.revoked).
    const draft = await release(org.api_key, claim, ch.channel_id);
    expect((await moveRelease(org.api_key, draft, "revoke")).json.data.status).toBe("revoked");
    const second = await release(org.api_key, claim, ch.channel_id);
    await moveRelease(org.api_key, second, "approve");
    expect((await moveRelease(org.api_key, second, "revoke")).json.data.status).toBe("revoked");
    const audit = await call("GET", "/v1/audit?action=release.created", { key: org.api_key });
    expect(audit.json.data.entries).toHaveLength(3);
    const list = await call("GET", `/v1/knowledge-releases?channel_id=${ch.channel_id}&status=revoked&limit=2`, {
      key: org.api_key,
    });
    expect(list.json.data.releases.map((r: any) => r.release_id)).toEqual([rel.release_id, draft]);
    const rest = await call(
      "GET",
      `/v1/knowledge-releases?channel_id=${ch.channel_id}&status=revoked&after=${list.json.data.next_cursor}`,
      { key: org.api_key },
    );
    expect(rest.json.data.releases.map((r: any) => r.release_id)).toEqual([second]);
  });

  it("refuse ineligible claims at create, reason by reason", async () => {
    const org = await newOrg();
    const alice = await mintKey(org.api_key, { scopes: ["*"], max_trust: "verified" });
    const gw = await mintKey(org.api_key, { scopes: ["channel:compile"] });
    const ch = await channelFor(org.api_key, gw.principal_id, { min_trust: "high" });
    const create = (claim_id: string, extra: Record<string, unknown> = {}) =>
      call("POST", "/v1/knowledge-releases", {
        key: alice.key,
        body: { claim_id, channel_id: ch.channel_id, ...extra },
      });
    const refused = async (claim_id: string, reason: string, status = 400, code = "VALIDATION_ERROR") => {
      const r = await create(claim_id);
      expectError(r, status, code);
      expect(r.json.error.message).toContain(reason);
    };
    const revoked = await claimOf(alice.key, "revoked one");
    await call("POST", `/v1/claims/${revoked}/revoke`, { key: alice.key, body: {} });
    await refused(revoked, "not_active");
    const expiring = await claimOf(alice.key, "expiring one", {
      valid_to: new Date(Date.now() + 60_000).toISOString(),
    });
    clock.advance(120_000);
    await refused(expiring, "expired");
    clock.reset();
    await refused(await claimOf(alice.key, "private one", { visibility: "private" }), "not_team");
    await refused(await claimOf(alice.key, "medium one", { trust: "medium" }), "source_below_min_trust");
    await refused(await claimOf(alice.key, "high one", { trust: "high" }), "not_verified");
    const fine = await claimOf(alice.key, "verified one");
    expectError(await create(fine, { claim_version: 2 }), 409, "CONFLICT");
    const policyRow = await policy(org.api_key, "release", { separation_of_duty: false, require_approved_claim: true });
    await refused(fine, "not_approved");
    const apr = (await call("POST", "/v1/claim-approvals", { key: alice.key, body: { claim_id: fine } })).json.data
      .approval_id;
    await call("POST", `/v1/claim-approvals/${apr}/decide`, { key: alice.key, body: { decision: "approved" } });
    expect((await create(fine)).status).toBe(201);
    await call("PATCH", `/v1/policies/${policyRow.policy_id}`, {
      key: org.api_key,
      body: { expected_version: 1, status: "retired" },
    });
    // References: hidden, missing and foreign answer identically.
    const other = await newOrg();
    const bob = await mintKey(org.api_key, { scopes: ["*"] });
    const hidden = await claimOf(alice.key, "alice's private", { visibility: "private" });
    for (const claim_id of [hidden, `claim_${zero}`, await claimOf(other.api_key, "theirs")])
      expectError(
        await call("POST", "/v1/knowledge-releases", { key: bob.key, body: { claim_id, channel_id: ch.channel_id } }),
        400,
        "UNRESOLVED_REFERENCE",
      );
    const theirGw = await mintKey(other.api_key, { scopes: ["channel:compile"] });
    const theirChannel = await channelFor(other.api_key, theirGw.principal_id);
    for (const channel_id of [`chn_${zero}`, theirChannel.channel_id])
      expectError(await create(fine, { channel_id }), 400, "UNRESOLVED_REFERENCE");
    for (const body of [
      { channel_id: ch.channel_id },
      { claim_id: fine },
      { claim_id: fine, channel_id: ch.channel_id, claim_version: 0 },
    ])
      expectError(await call("POST", "/v1/knowledge-releases", { key: alice.key, body }), 400, "VALIDATION_ERROR");
  });

  it("recheck eligibility at approve and activate (409), one active release per claim and channel", async () => {
    const org = await newOrg();
    const gw = await mintKey(org.api_key, { scopes: ["channel:compile"] });
    const ch = await channelFor(org.api_key, gw.principal_id);
    const a = await claimOf(org.api_key, "changes before approval");
    const relA = await release(org.api_key, a, ch.channel_id);
    await call("POST", `/v1/claims/${a}/expire`, { key: org.api_key, body: {} });
    const staleApprove = await moveRelease(org.api_key, relA, "approve");
    expectError(staleApprove, 409, "CONFLICT");
    expect(staleApprove.json.error.message).toContain("stale_version");
    const b = await claimOf(org.api_key, "changes before activation");
    const relB = await release(org.api_key, b, ch.channel_id);
    await moveRelease(org.api_key, relB, "approve");
    await call("POST", `/v1/claims/${b}/supersede`, {
      key: org.api_key,
      body: { superseded_by: await claimOf(org.api_key, "newer") },
    });
    expectError(await moveRelease(org.api_key, relB, "activate"), 409, "CONFLICT");
    // The approval requirement is eligibility too: switched on after approval, activation is refused.
    const c = await claimOf(org.api_key, "needs approval later");
    const relC = await release(org.api_key, c, ch.channel_id);
    await moveRelease(org.api_key, relC, "approve");
    const req = await policy(org.api_key, "release", { separation_of_duty: false, require_approved_claim: true });
    const notApproved = await moveRelease(org.api_key, relC, "activate");
    expectError(notApproved, 409, "CONFLICT");
    expect(notApproved.json.error.message).toContain("not_approved");
    await call("PATCH", `/v1/policies/${req.policy_id}`, {
      key: org.api_key,
      body: { expected_version: 1, status: "retired" },
    });
    await moveRelease(org.api_key, relC, "activate");
    const again = await release(org.api_key, c, ch.channel_id);
    await moveRelease(org.api_key, again, "approve");
    expectError(await moveRelease(org.api_key, again, "activate"), 409, "CONFLICT");
    await moveRelease(org.api_key, relC, "revoke");
    expect((await moveRelease(org.api_key, again, "activate")).json.data.status).toBe("active");
  });

  it("separation of duty: with the release policy on, the creator may not approve (activation is not covered)", async () => {
    const org = await newOrg();
    // Both manage the channel (admins), so only separation of duty stands between the creator and approval.
    const creator = await withRole(org.api_key, "admin", { max_trust: "verified" });
    const approver = await withRole(org.api_key, "admin");
    const gw = await mintKey(org.api_key, { scopes: ["channel:compile"] });
    const ch = await channelFor(org.api_key, gw.principal_id);
    await policy(org.api_key, "release", { separation_of_duty: true, require_approved_claim: false });
    const id = await release(creator.key, await claimOf(creator.key, "four eyes"), ch.channel_id);
    const self = await moveRelease(creator.key, id, "approve");
    expectError(self, 403, "FORBIDDEN");
    expect(self.json.error.message).toContain("Separation of duty");
    expect((await moveRelease(approver.key, id, "approve")).json.data.approved_by).toBe(approver.principal_id);
    expect((await moveRelease(creator.key, id, "activate")).json.data.status).toBe("active");
  });

  it("list snapshot evidence only as far as the caller may read it", async () => {
    const org = await newOrg();
    const alice = await mintKey(org.api_key, { scopes: ["*"], max_trust: "verified" });
    const bob = await mintKey(org.api_key, { scopes: ["*"] });
    const gw = await mintKey(org.api_key, { scopes: ["channel:compile"] });
    const ch = await channelFor(org.api_key, gw.principal_id);
    const pub = await appendOk(alice.key, obs("ev", "public", { trust: "verified" }));
    const priv = await appendOk(alice.key, obs("ev", "private", { trust: "verified", visibility: "private" }));
    const [claim] = await consolidateOk(alice.key, "ev", [
      {
        kind: "fact",
        statement: "released with private evidence",
        visibility: "team",
        sources: [
          { observation_id: pub, relation: "supports" },
          { observation_id: priv, relation: "supports" },
        ],
      },
    ]);
    const id = await release(alice.key, claim, ch.channel_id);
    const mine = (await call("GET", "/v1/knowledge-releases", { key: alice.key })).json.data.releases[0];
    expect(mine.snapshot.evidence.map((e: any) => e.observation_id)).toEqual([pub, priv]);
    const bobs = await call("GET", "/v1/knowledge-releases", { key: bob.key });
    expect(bobs.json.data.releases[0]).toMatchObject({ release_id: id, hidden_source_count: 1 });
    expect(bobs.json.data.releases[0].snapshot.evidence.map((e: any) => e.observation_id)).toEqual([pub]);
    expect(bobs.text).not.toContain(priv);
  });
});

describe("channel compile", () => {
  it("serves active, still-eligible snapshots to the gateway only, ranked like compile, recording no run", async () => {
    const org = await newOrg();
    const gw = await mintKey(org.api_key, { scopes: ["channel:compile"] });
    const ch = await channelFor(org.api_key, gw.principal_id);
    const statements = [
      "the harbour ferry leaves at noon",
      "the ferry ticket office opens at nine",
      "lighthouse tours run on sundays",
    ];
    const claims: string[] = [];
    for (const s of statements) claims.push(await claimOf(org.api_key, s));
    const releases: string[] = [];
    for (const c of claims) releases.push(await activeRelease(org.api_key, c, ch.channel_id));
    const draftOnly = await claimOf(org.api_key, "ferry draft never served");
    await release(org.api_key, draftOnly, ch.channel_id);
    const r = await compileChannel(gw.key, ch.channel_id, { query: "when does the ferry leave", audience: "public" });
    expect(r.status, r.text).toBe(200);
    expect(r.json.meta.degraded).toEqual({ vectors: true, model: true });
    expect(r.json.data.channel_id).toBe(ch.channel_id);
    const items = r.json.data.items;
    expect(items.map((i: any) => i.release_id)).toEqual([releases[0], releases[1]]);
    expect(items[0]).toMatchObject({ claim_id: claims[0], statement: statements[0], kind: "fact", trust: "verified" });
    expect(items[0].score).toBeGreaterThan(items[1].score);
    expect(r.json.data.tokens_used).toBe(items.reduce((s: number, i: any) => s + i.tokens, 0));
    // The same scoring as compile: the same question orders the same claims the same way (compile may
    // also pack a vector hit once the background job indexed these claims; channel compile has none).
    const canonical = await call("POST", "/v1/context/compile", {
      key: org.api_key,
      body: { query: "when does the ferry leave" },
    });
    expect(
      canonical.json.data.items
        .map((i: any) => i.claim_id)
        .filter((id: string) => claims.includes(id))
        .slice(0, 2),
    ).toEqual([claims[0], claims[1]]);
    // Without a query every served snapshot is a candidate; the budget and max_items bound the pack.
    expect((await compileChannel(gw.key, ch.channel_id)).json.data.items).toHaveLength(3);
    expect((await compileChannel(gw.key, ch.channel_id, { max_items: 1 })).json.data.items).toHaveLength(1);
    const tight = await compileChannel(gw.key, ch.channel_id, { token_budget: 9 });
    expect(tight.json.data.tokens_used).toBeLessThanOrEqual(9);
    expect(tight.json.data.items.length).toBeLessThan(3);
    const runs = await inOrg(org.org_id, (o) =>
      o.db.first<{ n: number }>("SELECT count(*) AS n FROM context_runs WHERE actor_id = ?", gw.principal_id),
    );
    expect(runs!.n).toBe(0);
    for (const body of [{ token_budget: 0 }, { max_items: 201 }, { query: 5 }, { extra: true }])
      expectError(await compileChannel(gw.key, ch.channel_id, body), 400, "VALIDATION_ERROR");
  });

  it("rechecks eligibility of every active release at compile time", async () => {
    const org = await newOrg();
    const gw = await mintKey(org.api_key, { scopes: ["channel:compile"] });
    const ch = await channelFor(org.api_key, gw.principal_id);
    const keep = await claimOf(org.api_key, "kept answer");
    const gone = await claimOf(org.api_key, "withdrawn answer");
    const later = await claimOf(org.api_key, "approval answer");
    const [relKeep, relGone, relLater] = [
      await activeRelease(org.api_key, keep, ch.channel_id),
      await activeRelease(org.api_key, gone, ch.channel_id),
      await activeRelease(org.api_key, later, ch.channel_id),
    ];
    const served = async () =>
      (await compileChannel(gw.key, ch.channel_id)).json.data.items.map((i: any) => i.release_id).sort();
    expect(await served()).toEqual([relKeep, relGone, relLater].sort());
    await call("POST", `/v1/claims/${gone}/revoke`, { key: org.api_key, body: {} });
    expect(await served()).toEqual([relKeep, relLater].sort());
    // Requiring approved claims applies to releases already active.
    await policy(org.api_key, "release", { separation_of_duty: false, require_approved_claim: true });
    const apr = (await call("POST", "/v1/claim-approvals", { key: org.api_key, body: { claim_id: keep } })).json.data
      .approval_id;
    await call("POST", `/v1/claim-approvals/${apr}/decide`, { key: org.api_key, body: { decision: "approved" } });
    expect(await served()).toEqual([relKeep]);
    // The release row still says active: history is untouched, only serving changes.
    const list = await call("GET", `/v1/knowledge-releases?status=active`, { key: org.api_key });
    expect(list.json.data.releases.map((r: any) => r.release_id)).toContain(relGone);
  });

  it("refuses other principals, paused and disabled channels, and audiences not in the channel", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const gw = await mintKey(org.api_key, { scopes: ["channel:compile"] });
    const intruder = await mintKey(org.api_key, { scopes: ["channel:compile"] });
    const ch = await channelFor(org.api_key, gw.principal_id);
    const bad = await compileChannel(gw.key, ch.channel_id, { audience: "staff" });
    expectError(bad, 400, "VALIDATION_ERROR");
    expect(bad.json.error.message).toContain('"audience"');
    expect((await compileChannel(gw.key, ch.channel_id, { audience: "partners" })).status).toBe(200);
    expectError(await compileChannel(intruder.key, ch.channel_id), 403, "FORBIDDEN");
    expectError(await compileChannel(org.api_key, ch.channel_id), 403, "FORBIDDEN");
    const noScope = await mintKey(org.api_key, { scopes: ["releases:read"], principal_id: gw.principal_id });
    expectError(await compileChannel(noScope.key, ch.channel_id), 403, "FORBIDDEN");
    const missing = await compileChannel(gw.key, `chn_${zero}`);
    const foreign = await compileChannel(other.api_key, ch.channel_id);
    for (const r of [missing, foreign]) expectError(r, 404, "NOT_FOUND");
    expect(foreign.json.error).toEqual(missing.json.error);
    const path = `/v1/channels/${ch.channel_id}`;
    await call("PATCH", path, { key: org.api_key, body: { status: "paused", expected_version: 1 } });
    expectError(await compileChannel(gw.key, ch.channel_id), 403, "FORBIDDEN");
    await call("PATCH", path, { key: org.api_key, body: { status: "active", expected_version: 2 } });
    expect((await compileChannel(gw.key, ch.channel_id)).status).toBe(200);
    await call("PATCH", path, { key: org.api_key, body: { status: "disabled", expected_version: 3 } });
    const disabled = await compileChannel(gw.key, ch.channel_id);
    expectError(disabled, 403, "FORBIDDEN");
    expect(disabled.json.error.message).toContain("disabled");
  });
});

// ---- what a caller who may not retrieve a release's claim sees of it ------------------------------

/** A workspace with `alice` (verified ceiling) as a member, its project, and `bob`, an organization member outside it. */
async function workspaceSetup(org: Org) {
  const alice = await mintKey(org.api_key, { scopes: ["*"], max_trust: "verified" });
  const bob = await mintKey(org.api_key, { scopes: ["*"], max_trust: "verified" });
  const w = (await call("POST", "/v1/workspaces", { key: org.api_key, body: { name: `w-${n++}` } })).json.data
    .workspace_id as string;
  const m = await call("POST", "/v1/memberships", {
    key: org.api_key,
    body: { principal_id: alice.principal_id, role: "member", workspace_id: w },
  });
  expect(m.status, m.text).toBe(201);
  const p = await call("POST", "/v1/projects/resolve", {
    key: alice.key,
    body: { reference: `wp-${n++}`, create: true, workspace_id: w },
  });
  expect(p.status, p.text).toBe(201);
  return { alice, bob, workspace: w, project: p.json.data.project_id as string };
}

/** A verified team claim in a workspace's project. */
async function workspaceClaim(key: string, project: string, statement: string) {
  const subject = `gov-ws-${n++}`;
  const o = await appendOk(key, obs(subject, statement, { trust: "verified", project_id: project }));
  const r = await call("POST", "/v1/consolidations", {
    key,
    body: {
      subject_id: subject,
      project_id: project,
      claims: [{ kind: "fact", statement, visibility: "team", sources: supports(o) }],
    },
  });
  expect(r.status, r.text).toBe(201);
  return r.json.data.claims[0].claim_id as string;
}

/**
 * A release of a claim written straight into the table, as one drafted before workspace claims became
 * ineligible would be (the API no longer drafts one): the list and the moves must hide it all the same.
 */
async function legacyRelease(org: Org, claimId: string, channelId: string, createdBy: string, status = "draft") {
  const id = `rel_${crypto.randomUUID().replaceAll("-", "")}`;
  await inOrg(org.org_id, (o) => {
    const c = o.db.first<{ subject_id: string; statement: string; version: number }>(
      "SELECT subject_id, statement, version FROM claims WHERE claim_id = ?",
      claimId,
    )!;
    o.db.run(
      `INSERT INTO knowledge_releases (release_id, channel_id, claim_id, claim_version, status, snapshot, created_by, created_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      id,
      channelId,
      claimId,
      c.version,
      status,
      JSON.stringify({
        subject_id: c.subject_id,
        kind: "fact",
        statement: c.statement,
        trust: "verified",
        valid_to: null,
        evidence: [],
      }),
      createdBy,
      clock.nowIso(),
    );
  });
  return id;
}

/** Everything the organization recorded: audit entries and events, to show a refused request wrote nothing. */
const history = async (org: Org) => ({
  audit: (await call("GET", "/v1/audit?limit=200", { key: org.api_key })).json.data.entries.map((e: any) => e.id),
  events: (await call("GET", "/v1/events?limit=200", { key: org.api_key })).json.data.events.map((e: any) => e.id),
});

describe("releases of claims the caller may not retrieve", () => {
  it("are not listed: no statement, no row, and has_more and cursors count only listed releases", async () => {
    const org = await newOrg();
    const { alice, bob, project } = await workspaceSetup(org);
    const gw = await mintKey(org.api_key, { scopes: ["channel:compile"] });
    const ch = await channelFor(org.api_key, gw.principal_id);
    const secret = "the workspace merger closes on friday";
    const hidden = await workspaceClaim(alice.key, project, secret);
    const hiddenDraft = await legacyRelease(org, hidden, ch.channel_id, alice.principal_id);
    const open = await release(alice.key, await claimOf(alice.key, "the office opens at nine"), ch.channel_id);
    const hiddenRevoked = await legacyRelease(org, hidden, ch.channel_id, alice.principal_id, "revoked");
    const list = (key: string, query = "") => call("GET", `/v1/knowledge-releases${query}`, { key });
    const ids = (r: Awaited<ReturnType<typeof list>>) => r.json.data.releases.map((x: any) => x.release_id);
    // Bob, outside the workspace: only the open release, and no page boundary betrays the others.
    for (const query of ["", "?limit=1", "?status=draft", "?status=revoked", `?channel_id=${ch.channel_id}`]) {
      const r = await list(bob.key, query);
      expect(r.status, r.text).toBe(200);
      expect(ids(r), query).toEqual(query === "?status=revoked" ? [] : [open]);
      expect(r.json.data.has_more, query).toBe(false);
      expect(r.json.data.next_cursor, query).toBeNull();
      for (const leak of [secret, hidden, hiddenDraft, hiddenRevoked]) expect(r.text, query).not.toContain(leak);
    }
    // Members of the workspace and organization admins see all three, paged as before.
    for (const key of [alice.key, org.api_key]) {
      expect(ids(await list(key))).toEqual([hiddenDraft, open, hiddenRevoked]);
      const first = await list(key, "?limit=1");
      expect([ids(first), first.json.data.has_more]).toEqual([[hiddenDraft], true]);
      expect(ids(await list(key, `?after=${first.json.data.next_cursor}`))).toEqual([open, hiddenRevoked]);
    }
  }, 120_000); // many requests: slow when the whole suite shares the machine, not a timed test

  it("cannot be moved: approve, activate and revoke answer exactly as for a missing release and write nothing", async () => {
    const org = await newOrg();
    const { alice, bob, project } = await workspaceSetup(org);
    const gw = await mintKey(org.api_key, { scopes: ["channel:compile"] });
    const ch = await channelFor(org.api_key, gw.principal_id);
    const secret = "the workspace budget is nine million";
    const claim = await workspaceClaim(alice.key, project, secret);
    const draft = await legacyRelease(org, claim, ch.channel_id, alice.principal_id);
    const approved = await legacyRelease(org, claim, ch.channel_id, alice.principal_id, "approved");
    const before = await history(org);
    const rows = () => inOrg(org.org_id, (o) => o.db.all("SELECT * FROM knowledge_releases ORDER BY seq"));
    const rowsBefore = await rows();
    /** The whole answer apart from its request id. */
    const answer = (r: Awaited<ReturnType<typeof call>>) =>
      `${r.status} ${r.text.replaceAll(r.json.meta.request_id, "req_")}`;
    for (const [id, action] of [
      [draft, "approve"],
      [approved, "activate"],
      [draft, "revoke"],
      [approved, "revoke"],
    ] as const) {
      const invisible = await moveRelease(bob.key, id, action);
      const missing = await moveRelease(bob.key, `rel_${zero}`, action);
      expectError(invisible, 404, "NOT_FOUND");
      expect(answer(invisible), `${action} ${id}`).toBe(answer(missing));
      expect(invisible.text).not.toContain(secret);
    }
    expect(await rows()).toEqual(rowsBefore);
    expect(await history(org)).toEqual(before);
    // The channel's manager still acts on it (revoking is how a legacy release is withdrawn); the
    // workspace's member who drafted it reads it but does not manage the channel.
    expectError(await moveRelease(alice.key, draft, "revoke"), 403, "FORBIDDEN");
    const revoked = await moveRelease(org.api_key, draft, "revoke");
    expect(revoked.status, revoked.text).toBe(200);
    expect(revoked.json.data.status).toBe("revoked");
  }, 120_000); // many requests: slow when the whole suite shares the machine, not a timed test
});

describe("claims of a workspace's project", () => {
  it("are not eligible for a channel, whose audience is outside every workspace: refused at create, approve, activate, never served", async () => {
    const org = await newOrg();
    const { alice, project } = await workspaceSetup(org);
    const gw = await mintKey(org.api_key, { scopes: ["channel:compile"] });
    const ch = await channelFor(org.api_key, gw.principal_id);
    const secret = "the workspace roadmap slips to march";
    const claim = await workspaceClaim(alice.key, project, secret);
    for (const key of [alice.key, org.api_key]) {
      const r = await call("POST", "/v1/knowledge-releases", {
        key,
        body: { claim_id: claim, channel_id: ch.channel_id },
      });
      expectError(r, 400, "VALIDATION_ERROR");
      expect(r.json.error.message).toContain("workspace_scoped");
    }
    // Releases drafted before the rule: approve and activate are refused (409), compile serves none.
    const draft = await legacyRelease(org, claim, ch.channel_id, alice.principal_id);
    const approved = await legacyRelease(org, claim, ch.channel_id, alice.principal_id, "approved");
    const active = await legacyRelease(org, claim, ch.channel_id, alice.principal_id, "active");
    for (const [id, action] of [
      [draft, "approve"],
      [approved, "activate"],
    ] as const) {
      const r = await moveRelease(org.api_key, id, action);
      expectError(r, 409, "CONFLICT");
      expect(r.json.error.message).toContain("workspace_scoped");
    }
    const open = await activeRelease(org.api_key, await claimOf(org.api_key, "the roadmap is public"), ch.channel_id);
    const served = await compileChannel(gw.key, ch.channel_id);
    expect(served.json.data.items.map((i: any) => i.release_id)).toEqual([open]);
    expect(served.text).not.toContain(secret);
    expect(served.text).not.toContain(active);
  }, 120_000); // many requests: slow when the whole suite shares the machine, not a timed test
});

describe("separation of duty by proxy: principals a member created count as that member", () => {
  it("refuses the submitter's and author's creations (direct and transitive), their creators and siblings; an unrelated principal decides", async () => {
    const org = await newOrg();
    const mint = (key: string) => mintKey(key, { scopes: ["*"], max_trust: "verified" });
    // owner -> a -> { p -> q, p2 };  owner -> u, v (unrelated to a's tree)
    const a = await mint(org.api_key);
    const p = await mint(a.key);
    const q = await mint(p.key);
    const p2 = await mint(a.key);
    const u = await mint(org.api_key);
    const v = await mint(org.api_key);
    await policy(org.api_key, "approval", { separation_of_duty: true });
    const submit = async (key: string, claimId: string) => {
      const r = await call("POST", "/v1/claim-approvals", { key, body: { claim_id: claimId } });
      expect(r.status, r.text).toBe(201);
      return `/v1/claim-approvals/${r.json.data.approval_id}/decide`;
    };
    const refusedBy = async (path: string, keys: string[]) => {
      const before = await history(org);
      for (const key of keys) {
        const r = await call("POST", path, { key, body: { decision: "approved" } });
        expectError(r, 403, "FORBIDDEN");
        expect(r.json.error.message).toContain("one actor");
      }
      expect(await history(org)).toEqual(before);
    };
    // Submitted by a (claim by v): a's creations decide for a.
    const bySubmitter = await submit(a.key, await claimOf(v.key, "submitted by the creator"));
    await refusedBy(bySubmitter, [p.key, q.key, p2.key]);
    expect((await call("POST", bySubmitter, { key: u.key, body: { decision: "approved" } })).json.data.decided_by).toBe(
      u.principal_id,
    );
    // Authored by q (submitted by v): q's creator, its creator's creator and a sibling branch are q's actor too.
    const byAuthor = await submit(v.key, await claimOf(q.key, "authored by a grandchild"));
    await refusedBy(byAuthor, [p.key, a.key, p2.key]);
    expect((await call("POST", byAuthor, { key: u.key, body: { decision: "rejected" } })).json.data.status).toBe(
      "rejected",
    );
    // A link from the owner is not followed: the owner (who created a) may decide a's approval.
    const ownersCreation = await submit(a.key, await claimOf(a.key, "authored and submitted by a"));
    expect((await call("POST", ownersCreation, { key: org.api_key, body: { decision: "approved" } })).status).toBe(200);

    // Release approval: the release creator's tree may not approve, even in a channel it manages (its
    // creator's); an unrelated principal managing the channel may.
    await policy(org.api_key, "release", { separation_of_duty: true, require_approved_claim: false });
    const channelOf = async (key: string) =>
      (await channelFor(key, (await mintKey(org.api_key, { scopes: ["channel:compile"] })).principal_id)).channel_id;
    const claimByQ = await claimOf(q.key, "released by a grandchild");
    const claimByA = await claimOf(a.key, "released by the creator");
    const drafts: [approver: string, release: string][] = [];
    for (const [drafter, claim, approvers] of [
      [q.key, claimByQ, [a.key, p.key, p2.key]],
      [a.key, claimByA, [p.key, q.key]],
    ] as const)
      for (const approver of approvers)
        drafts.push([approver, await release(drafter, claim, await channelOf(approver))]);
    const before = await history(org);
    for (const [approver, id] of drafts) {
      const r = await moveRelease(approver, id, "approve");
      expectError(r, 403, "FORBIDDEN");
      expect(r.json.error.message).toContain("one actor");
    }
    expect(await history(org)).toEqual(before);
    const unrelated = await channelOf(u.key);
    for (const [drafter, claim] of [
      [q.key, claimByQ],
      [a.key, claimByA],
    ]) {
      const id = await release(drafter, claim, unrelated);
      expect((await moveRelease(u.key, id, "approve")).json.data.approved_by).toBe(u.principal_id);
    }
  }, 120_000); // many requests: slow when the whole suite shares the machine, not a timed test

  it("walks a bounded creation chain: a chain too long to clear, or a loop, is refused", async () => {
    const org = await newOrg();
    await policy(org.api_key, "release", { separation_of_duty: true, require_approved_claim: false });
    const refusal = (me: string, creator: string) =>
      inOrg(org.org_id, (o) =>
        dutyRefusal(dutyFacts(o.db), { principalId: me } as Caller, { act: "approve_release", created_by: creator }),
      );
    const principal = (id: string, createdBy: string | null, role = "member") =>
      inOrg(org.org_id, (o) =>
        o.db.run(
          "INSERT INTO principals (principal_id, kind, display_name, role, created_at, created_by) VALUES (?, 'agent', 'x', ?, ?, ?)",
          id,
          role,
          clock.nowIso(),
          createdBy,
        ),
      );
    const chain: string[] = [];
    for (let i = 0; i <= MAX_CREATION_DEPTH + 1; i++) {
      chain.push(`prn_chain${i}`);
      await principal(chain[i], i ? chain[i - 1] : null);
    }
    await principal("prn_unrelated", null);
    // Within the bound: the top of the chain and a principal MAX_CREATION_DEPTH links below are one actor.
    expect(await refusal(chain[MAX_CREATION_DEPTH], chain[0])).toContain("one actor");
    expect(await refusal(chain[MAX_CREATION_DEPTH], "prn_unrelated")).toBeNull();
    // One link more: the actor cannot be established, so it is refused, even against an unrelated creator.
    expect(await refusal(chain[MAX_CREATION_DEPTH + 1], "prn_unrelated")).toContain(
      `longer than ${MAX_CREATION_DEPTH}`,
    );
    // An admin link cuts the chain: below it, principals are their own actors again.
    await principal("prn_admin", chain[3], "admin");
    await principal("prn_below_admin", "prn_admin");
    expect(await refusal("prn_below_admin", chain[0])).toBeNull();
    expect(await refusal("prn_below_admin", "prn_admin")).toBeNull();
    // A loop no route can write still ends, refused.
    await principal("prn_loop_a", "prn_loop_b");
    await principal("prn_loop_b", "prn_loop_a");
    expect(await refusal("prn_loop_a", "prn_unrelated")).toContain(`longer than ${MAX_CREATION_DEPTH}`);
  });
});
