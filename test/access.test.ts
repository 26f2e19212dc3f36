import { describe, expect, it } from "vitest";
import { sign } from "../src/domains/federation/signing";
import { appendOk, call, consolidateOk, expectError, inOrg, mintKey, newOrg, obs, supports } from "./helpers";

/** A key holding every scope for a new principal with `role`. */
async function principalWithRole(ownerKey: string, role: "admin" | "member" | "reader" | "owner") {
  const k = await mintKey(ownerKey, { scopes: ["*"] });
  if (role !== "member") {
    const m = await call("POST", "/v1/memberships", { key: ownerKey, body: { principal_id: k.principal_id, role } });
    expect(m.status, m.text).toBe(201);
  }
  return k;
}

/**
 * Each case's record, asked for with a foreign organization's key (and with a key it is invisible to,
 * when given), answers exactly as a missing id asked for by `own`: 404 with the same error.
 */
async function expectSame404(cases: [string, string, string, unknown, string, string?][], foreignKey: string) {
  for (const [method, path, missingPath, body, own, invisibleTo] of cases) {
    const missing = await call(method, missingPath, { key: own, body });
    const answers = [await call(method, path, { key: foreignKey, body }), missing];
    if (invisibleTo) answers.push(await call(method, path, { key: invisibleTo, body }));
    for (const r of answers) {
      expectError(r, 404, "NOT_FOUND");
      expect(JSON.stringify(r.json.error), `${method} ${path}`).toBe(JSON.stringify(missing.json.error));
    }
  }
}

describe("workspaces", () => {
  it("creates with a unique name, lists, validates, and makes the creator its owner", async () => {
    const org = await newOrg();
    const w = await call("POST", "/v1/workspaces", { key: org.api_key, body: { name: "research" } });
    expect(w.status).toBe(201);
    expect(w.json.data.workspace_id).toMatch(/^wsp_[0-9a-f]{32}$/);
    expectError(
      await call("POST", "/v1/workspaces", { key: org.api_key, body: { name: "research" } }),
      409,
      "CONFLICT",
    );
    expectError(
      await call("POST", "/v1/workspaces", { key: org.api_key, body: { name: "" } }),
      400,
      "VALIDATION_ERROR",
    );
    const list = await call("GET", "/v1/workspaces", { key: org.api_key });
    expect(list.json.data.workspaces.map((x: any) => x.name)).toEqual(["research"]);
    const members = await call("GET", `/v1/memberships?workspace_id=${w.json.data.workspace_id}`, { key: org.api_key });
    expect(members.json.data.memberships).toHaveLength(1);
    expect(members.json.data.memberships[0].role).toBe("owner");
    const other = await newOrg();
    expect((await call("POST", "/v1/workspaces", { key: other.api_key, body: { name: "research" } })).status).toBe(201);
  });
});

describe("memberships", () => {
  it("changes the organization role, effective on the next request", async () => {
    const org = await newOrg();
    const k = await mintKey(org.api_key, { scopes: ["*"] });
    expect(await appendOk(k.key, obs("s", "as member"))).toMatch(/^obs_[0-9a-f]{32}$/);
    const m = await call("POST", "/v1/memberships", {
      key: org.api_key,
      body: { principal_id: k.principal_id, role: "reader" },
    });
    expect(m.status).toBe(201);
    expect(m.json.data).toMatchObject({ principal_id: k.principal_id, role: "reader", workspace_id: null });
    expect((await call("GET", "/v1/principal", { key: k.key })).json.data.role).toBe("reader");
    const denied = await call("POST", "/v1/observations", { key: k.key, body: obs("s", "as reader") });
    expectError(denied, 403, "FORBIDDEN");
    expect((await call("GET", "/v1/memories", { key: k.key })).status).toBe(200);
    expect((await call("POST", "/v1/context/compile", { key: k.key, body: {} })).status).toBe(201);
    const dir = await call("GET", "/v1/principals", { key: org.api_key });
    const entry = dir.json.data.principals.find((p: any) => p.principal_id === k.principal_id);
    expect(entry.role).toBe("reader");
    expect(entry.memberships).toEqual([
      { membership_id: m.json.data.membership_id, workspace_id: null, role: "reader" },
    ]);
  });

  it("lets only owners and admins change memberships, and only owners touch the owner role", async () => {
    const org = await newOrg();
    const admin = await principalWithRole(org.api_key, "admin");
    const member = await principalWithRole(org.api_key, "member");
    const target = await mintKey(org.api_key, { scopes: ["observations:write"] });
    expectError(
      await call("POST", "/v1/memberships", {
        key: member.key,
        body: { principal_id: target.principal_id, role: "reader" },
      }),
      403,
      "FORBIDDEN",
    );
    expect(
      (
        await call("POST", "/v1/memberships", {
          key: admin.key,
          body: { principal_id: target.principal_id, role: "reader" },
        })
      ).status,
    ).toBe(201);
    expectError(
      await call("POST", "/v1/memberships", {
        key: admin.key,
        body: { principal_id: target.principal_id, role: "owner" },
      }),
      403,
      "FORBIDDEN",
    );
    const owner = (await call("GET", "/v1/principal", { key: org.api_key })).json.data.principal_id;
    expectError(
      await call("POST", "/v1/memberships", { key: admin.key, body: { principal_id: owner, role: "member" } }),
      403,
      "FORBIDDEN",
    );
    for (const body of [
      { principal_id: target.principal_id, role: "boss" },
      { role: "member" },
      { principal_id: target.principal_id, role: "member", extra: 1 },
    ])
      expectError(await call("POST", "/v1/memberships", { key: org.api_key, body }), 400, "VALIDATION_ERROR");
    expectError(
      await call("POST", "/v1/memberships", {
        key: org.api_key,
        body: { principal_id: "prn_" + "0".repeat(32), role: "member" },
      }),
      400,
      "UNRESOLVED_REFERENCE",
    );
    expectError(
      await call("POST", "/v1/memberships", {
        key: org.api_key,
        body: { principal_id: target.principal_id, role: "member", workspace_id: "wsp_" + "0".repeat(32) },
      }),
      400,
      "UNRESOLVED_REFERENCE",
    );
  });

  it("attaches to workspaces once, filters by workspace, and removes softly", async () => {
    const org = await newOrg();
    const k = await mintKey(org.api_key, { scopes: ["*"] });
    const w = (await call("POST", "/v1/workspaces", { key: org.api_key, body: { name: "ops" } })).json.data
      .workspace_id;
    const m = await call("POST", "/v1/memberships", {
      key: org.api_key,
      body: { principal_id: k.principal_id, role: "member", workspace_id: w },
    });
    expect(m.status).toBe(201);
    expectError(
      await call("POST", "/v1/memberships", {
        key: org.api_key,
        body: { principal_id: k.principal_id, role: "admin", workspace_id: w },
      }),
      409,
      "CONFLICT",
    );
    const listed = await call("GET", `/v1/memberships?workspace_id=${w}`, { key: org.api_key });
    expect(listed.json.data.memberships.map((x: any) => x.principal_id)).toContain(k.principal_id);
    const d = await call("DELETE", `/v1/memberships/${m.json.data.membership_id}`, { key: org.api_key });
    expect(d.status).toBe(200);
    expect((await call("GET", `/v1/memberships?workspace_id=${w}`, { key: org.api_key })).text).not.toContain(
      m.json.data.membership_id,
    );
    expectError(
      await call("DELETE", `/v1/memberships/${m.json.data.membership_id}`, { key: org.api_key }),
      404,
      "NOT_FOUND",
    );
    const kept = await inOrg(org.org_id, (o) =>
      o.db.first<{ removed_at: string | null }>(
        "SELECT removed_at FROM memberships WHERE membership_id = ?",
        m.json.data.membership_id,
      ),
    );
    expect(kept?.removed_at).not.toBeNull();
    // The principal is still in the organization.
    expect((await call("GET", "/v1/principal", { key: k.key })).status).toBe(200);
  });

  it("removing the organization membership removes the principal and revokes its keys", async () => {
    const org = await newOrg();
    const k = await mintKey(org.api_key, { scopes: ["*"] });
    const mine = (await call("GET", "/v1/memberships", { key: org.api_key })).json.data.memberships.find(
      (m: any) => m.principal_id === k.principal_id,
    );
    const d = await call("DELETE", `/v1/memberships/${mine.membership_id}`, { key: org.api_key });
    expect(d.json.data).toMatchObject({ removed: true, keys_revoked: 1 });
    expectError(await call("GET", "/v1/principal", { key: k.key }), 401, "UNAUTHENTICATED");
    expect((await call("GET", "/v1/principals", { key: org.api_key })).text).not.toContain(k.principal_id);
    const audit = await inOrg(org.org_id, (o) =>
      o.db.all<{ action: string }>("SELECT action FROM audit_log WHERE resource_id = ?", mine.membership_id),
    );
    expect(audit.map((a) => a.action)).toEqual(["membership.removed"]);
  });

  it("never removes or demotes the last owner", async () => {
    const org = await newOrg();
    const ownerId = (await call("GET", "/v1/principal", { key: org.api_key })).json.data.principal_id;
    const own = (await call("GET", "/v1/memberships", { key: org.api_key })).json.data.memberships.find(
      (m: any) => m.principal_id === ownerId,
    );
    expectError(await call("DELETE", `/v1/memberships/${own.membership_id}`, { key: org.api_key }), 409, "CONFLICT");
    expectError(
      await call("POST", "/v1/memberships", { key: org.api_key, body: { principal_id: ownerId, role: "admin" } }),
      409,
      "CONFLICT",
    );
    const second = await principalWithRole(org.api_key, "owner");
    expect((await call("GET", "/v1/principal", { key: second.key })).json.data.role).toBe("owner");
    expect(
      (await call("POST", "/v1/memberships", { key: org.api_key, body: { principal_id: ownerId, role: "admin" } }))
        .status,
    ).toBe(201);
  });
});

describe("grants", () => {
  async function privateWorld() {
    const org = await newOrg();
    const alice = await mintKey(org.api_key, { scopes: ["*"] });
    const bob = await mintKey(org.api_key, { scopes: ["*"] });
    const project = (
      await call("POST", "/v1/projects/resolve", { key: alice.key, body: { reference: "repo:x", create: true } })
    ).json.data.project_id;
    const inSubject = await appendOk(alice.key, obs("alpha", "alpha secret", { visibility: "private" }));
    const inProject = await appendOk(
      alice.key,
      obs("beta", "beta secret", { visibility: "private", project_id: project }),
    );
    const [alphaClaim] = await consolidateOk(alice.key, "alpha", [
      { kind: "fact", statement: "alpha private fact", sources: supports(inSubject) },
    ]);
    const beta = await call("POST", "/v1/consolidations", {
      key: alice.key,
      body: {
        subject_id: "beta",
        project_id: project,
        claims: [{ kind: "fact", statement: "beta private fact", sources: supports(inProject) }],
      },
    });
    const betaClaim: string = beta.json.data.claims[0].claim_id;
    return { org, alice, bob, project, inSubject, inProject, alphaClaim, betaClaim };
  }
  const visible = async (key: string) =>
    (await call("GET", "/v1/memories?limit=100", { key })).json.data.items.map((c: any) => c.claim_id);

  it("a subject read grant opens that subject's private records, and revocation closes them on the next request", async () => {
    const w = await privateWorld();
    expect(await visible(w.bob.key)).toEqual([]);
    const g = await call("POST", "/v1/grants", {
      key: w.org.api_key,
      body: { principal_id: w.bob.principal_id, permissions: ["read"], subject: "alpha" },
    });
    expect(g.status).toBe(201);
    expect(g.json.data).toMatchObject({
      principal_id: w.bob.principal_id,
      target: { type: "subject", id: "alpha" },
      permissions: ["read"],
      status: "active",
    });
    expect(g.json.data.grant_id).toMatch(/^grt_[0-9a-f]{32}$/);
    expect(await visible(w.bob.key)).toEqual([w.alphaClaim]);
    const ev = await call("GET", `/v1/claims/${w.alphaClaim}/evidence`, { key: w.bob.key });
    expect(ev.json.data.supporting[0].content).toBe("alpha secret");
    expectError(await call("GET", `/v1/claims/${w.betaClaim}/evidence`, { key: w.bob.key }), 404, "NOT_FOUND");
    const pack = await call("POST", "/v1/context/compile", { key: w.bob.key, body: { query: "private fact" } });
    expect(pack.json.data.items.map((i: any) => i.claim_id)).toEqual([w.alphaClaim]);
    const r = await call("DELETE", `/v1/grants/${g.json.data.grant_id}`, { key: w.org.api_key });
    expect(r.json.data).toMatchObject({ status: "revoked", already_revoked: false });
    expect(await visible(w.bob.key)).toEqual([]);
    const listed = await call("GET", "/v1/grants", { key: w.org.api_key });
    expect(listed.json.data.grants.map((x: any) => x.status)).toEqual(["revoked"]);
  });

  it("project grants, including explicit project: null for unscoped memory, and organization grants", async () => {
    const w = await privateWorld();
    await call("POST", "/v1/grants", {
      key: w.org.api_key,
      body: { principal_id: w.bob.principal_id, permissions: ["read"], project: w.project },
    });
    expect(await visible(w.bob.key)).toEqual([w.betaClaim]);
    const carol = await mintKey(w.org.api_key, { scopes: ["*"] });
    await call("POST", "/v1/grants", {
      key: w.org.api_key,
      body: { principal_id: carol.principal_id, permissions: ["read"], project: null },
    });
    expect(await visible(carol.key)).toEqual([w.alphaClaim]);
    const dave = await mintKey(w.org.api_key, { scopes: ["*"] });
    await call("POST", "/v1/grants", {
      key: w.org.api_key,
      body: { principal_id: dave.principal_id, permissions: ["read"], organization: true },
    });
    expect((await visible(dave.key)).sort()).toEqual([w.alphaClaim, w.betaClaim].sort());
  });

  it("delegates only authority the caller holds; validates targets without revealing them", async () => {
    const w = await privateWorld();
    const noGrant = await call("POST", "/v1/grants", {
      key: w.bob.key,
      body: { principal_id: w.alice.principal_id, permissions: ["read"], subject: "alpha" },
    });
    expectError(noGrant, 403, "FORBIDDEN");
    await call("POST", "/v1/grants", {
      key: w.org.api_key,
      body: { principal_id: w.bob.principal_id, permissions: ["read"], subject: "alpha" },
    });
    const carol = await mintKey(w.org.api_key, { scopes: ["*"] });
    const reshare = await call("POST", "/v1/grants", {
      key: w.bob.key,
      body: { principal_id: carol.principal_id, permissions: ["read"], subject: "alpha" },
    });
    expect(reshare.status).toBe(201);
    expectError(
      await call("POST", "/v1/grants", {
        key: w.bob.key,
        body: { principal_id: carol.principal_id, permissions: ["read", "write"], subject: "alpha" },
      }),
      403,
      "FORBIDDEN",
    );
    expectError(
      await call("POST", "/v1/grants", {
        key: w.bob.key,
        body: { principal_id: carol.principal_id, permissions: ["read"], subject: "beta" },
      }),
      403,
      "FORBIDDEN",
    );
    for (const body of [
      { principal_id: carol.principal_id, permissions: [], subject: "a" },
      { principal_id: carol.principal_id, permissions: ["fly"], subject: "a" },
      { principal_id: carol.principal_id, permissions: ["read"] },
      { principal_id: carol.principal_id, permissions: ["read"], subject: "a", project: null },
    ])
      expectError(await call("POST", "/v1/grants", { key: w.org.api_key, body }), 400, "VALIDATION_ERROR");
    expectError(
      await call("POST", "/v1/grants", {
        key: w.org.api_key,
        body: { principal_id: carol.principal_id, permissions: ["read"], project: "prj_" + "0".repeat(32) },
      }),
      400,
      "UNRESOLVED_REFERENCE",
    );
    // Grant lists: the grantee and grantor see theirs; a third member sees none; only grantor/admin revoke.
    expect((await call("GET", "/v1/grants", { key: carol.key })).json.data.grants).toHaveLength(1);
    const dave = await mintKey(w.org.api_key, { scopes: ["*"] });
    expect((await call("GET", "/v1/grants", { key: dave.key })).json.data.grants).toEqual([]);
    expectError(await call("DELETE", `/v1/grants/${reshare.json.data.grant_id}`, { key: dave.key }), 404, "NOT_FOUND");
    expectError(await call("DELETE", `/v1/grants/${reshare.json.data.grant_id}`, { key: carol.key }), 403, "FORBIDDEN");
    expect((await call("DELETE", `/v1/grants/${reshare.json.data.grant_id}`, { key: w.bob.key })).status).toBe(200);
  });

  it("an admin delegates write by its role but read only from a read grant of its own", async () => {
    const w = await privateWorld();
    const admin = await principalWithRole(w.org.api_key, "admin");
    // Admins do not read others' private records by role, so they cannot hand that read out either.
    const refused = await call("POST", "/v1/grants", {
      key: admin.key,
      body: { principal_id: w.bob.principal_id, permissions: ["read"], subject: "alpha" },
    });
    expectError(refused, 403, "FORBIDDEN");
    expect(refused.json.error.message).toContain('"read"');
    expect(await visible(w.bob.key)).toEqual([]);
    const write = await call("POST", "/v1/grants", {
      key: admin.key,
      body: { principal_id: w.bob.principal_id, permissions: ["write"], subject: "alpha" },
    });
    expect(write.status, write.text).toBe(201);
    expect(write.json.data.delegated_from).toBeNull();
    const own = await call("POST", "/v1/grants", {
      key: w.org.api_key,
      body: { principal_id: admin.principal_id, permissions: ["read"], organization: true },
    });
    expect(own.status, own.text).toBe(201);
    const reshared = await call("POST", "/v1/grants", {
      key: admin.key,
      body: { principal_id: w.bob.principal_id, permissions: ["read", "write"], subject: "alpha" },
    });
    expect(reshared.status, reshared.text).toBe(201);
    expect(reshared.json.data).toMatchObject({
      permissions: ["read", "write"],
      delegated_from: own.json.data.grant_id,
    });
    expect(await visible(w.bob.key)).toEqual([w.alphaClaim]);
    // The read came from the admin's grant: revoking that grant takes it back.
    const revoked = await call("DELETE", `/v1/grants/${own.json.data.grant_id}`, { key: w.org.api_key });
    expect(revoked.json.data.delegated_revoked).toBe(1);
    expect(await visible(w.bob.key)).toEqual([]);
  });

  it("a write grant lets a reader write inside its target only", async () => {
    const org = await newOrg();
    const reader = await principalWithRole(org.api_key, "reader");
    expectError(await call("POST", "/v1/observations", { key: reader.key, body: obs("gamma", "x") }), 403, "FORBIDDEN");
    await call("POST", "/v1/grants", {
      key: org.api_key,
      body: { principal_id: reader.principal_id, permissions: ["write"], subject: "gamma" },
    });
    expect((await call("POST", "/v1/observations", { key: reader.key, body: obs("gamma", "x") })).status).toBe(201);
    expectError(await call("POST", "/v1/observations", { key: reader.key, body: obs("delta", "x") }), 403, "FORBIDDEN");
    expectError(
      await call("POST", "/v1/checkpoints", {
        key: reader.key,
        body: { subject_id: "gamma", agent_id: "a", kind: "cursor", state: "1", ttl_seconds: 60 },
      }),
      403,
      "FORBIDDEN",
    );
  });
});

describe("directories", () => {
  it("lists only projects and subjects backed by readable records, with bounded references", async () => {
    const org = await newOrg();
    const alice = await mintKey(org.api_key, { scopes: ["*"] });
    const bob = await mintKey(org.api_key, { scopes: ["*"] });
    const pShared = (
      await call("POST", "/v1/projects/resolve", { key: alice.key, body: { reference: "repo:shared", create: true } })
    ).json.data.project_id;
    const pSecret = (
      await call("POST", "/v1/projects/resolve", { key: alice.key, body: { reference: "repo:secret", create: true } })
    ).json.data.project_id;
    await call("POST", "/v1/projects/resolve", { key: alice.key, body: { reference: "repo:empty", create: true } });
    const o1 = await appendOk(alice.key, obs("open-subject", "x", { project_id: pShared }));
    await appendOk(alice.key, obs("hidden-subject", "y", { project_id: pSecret, visibility: "private" }));
    const o3 = await appendOk(alice.key, obs("open-subject", "z"));
    const projects = await call("GET", "/v1/projects", { key: bob.key });
    expect(projects.json.data.projects.map((p: any) => p.reference)).toEqual(["repo:shared"]);
    expect(
      (await call("GET", "/v1/projects", { key: alice.key })).json.data.projects.map((p: any) => p.reference),
    ).toEqual(["repo:shared", "repo:secret"]);
    const refs = await call("GET", `/v1/projects/${pShared}/references`, { key: bob.key });
    expect(refs.json.data.references.map((r: any) => r.id)).toEqual([o1]);
    const unscoped = await call("GET", "/v1/projects/~/references", { key: bob.key });
    expect(unscoped.json.data).toMatchObject({ project_id: null });
    expect(unscoped.json.data.references.map((r: any) => r.id)).toEqual([o3]);
    const hidden = await call("GET", `/v1/projects/${pSecret}/references`, { key: bob.key });
    const missing = await call("GET", `/v1/projects/prj_${"0".repeat(32)}/references`, { key: bob.key });
    expectError(hidden, 404, "NOT_FOUND");
    expect(hidden.json.error).toEqual(missing.json.error);
    const subjects = await call("GET", "/v1/subjects", { key: bob.key });
    expect(subjects.json.data.subjects.map((s: any) => s.subject_id)).toEqual(["open-subject"]);
    const sref = await call("GET", "/v1/subjects/open-subject/references", { key: bob.key });
    expect(sref.json.data.references.map((r: any) => r.id)).toEqual([o1, o3]);
    expect(sref.json.data.namespaced).toEqual(["subject:open-subject", "project:repo:shared"]);
    const hs = await call("GET", "/v1/subjects/hidden-subject/references", { key: bob.key });
    expect(hs.json.error).toEqual((await call("GET", "/v1/subjects/nobody/references", { key: bob.key })).json.error);
    const p1 = await call("GET", "/v1/subjects/open-subject/references?limit=1", { key: bob.key });
    const p2 = await call("GET", `/v1/subjects/open-subject/references?limit=1&after=${p1.json.data.next_cursor}`, {
      key: bob.key,
    });
    expect([...p1.json.data.references, ...p2.json.data.references].map((r: any) => r.id)).toEqual([o1, o3]);
  });
});

describe("access simulation", () => {
  it("is for owners only and explains gates without disclosing content", async () => {
    const org = await newOrg();
    const alice = await mintKey(org.api_key, { scopes: ["*"] });
    const bob = await mintKey(org.api_key, { scopes: ["*"] });
    const admin = await principalWithRole(org.api_key, "admin");
    const o = await appendOk(alice.key, obs("alpha", "very secret", { visibility: "private" }));
    const body = { principal_id: bob.principal_id, action: "read", record_id: o };
    expectError(await call("POST", "/v1/access/simulate", { key: admin.key, body }), 403, "FORBIDDEN");
    const deny = await call("POST", "/v1/access/simulate", { key: org.api_key, body });
    expect(deny.status).toBe(200);
    expect(deny.json.data).toMatchObject({
      decision: "deny",
      gates: { visibility: { passed: false, visibility: "private" }, grant: { passed: false, grant_ids: [] } },
    });
    expect(deny.text).not.toContain("very secret");
    const g = await call("POST", "/v1/grants", {
      key: org.api_key,
      body: { principal_id: bob.principal_id, permissions: ["read"], subject: "alpha" },
    });
    const allow = await call("POST", "/v1/access/simulate", { key: org.api_key, body });
    expect(allow.json.data).toMatchObject({
      decision: "allow",
      gates: { grant: { passed: true, grant_ids: [g.json.data.grant_id] } },
    });
    expectError(
      await call("POST", "/v1/access/simulate", {
        key: org.api_key,
        body: { ...body, record_id: `obs_${"0".repeat(32)}` },
      }),
      404,
      "NOT_FOUND",
    );
    expectError(
      await call("POST", "/v1/access/simulate", { key: org.api_key, body: { ...body, action: "delete" } }),
      400,
      "VALIDATION_ERROR",
    );
    const reader = await principalWithRole(org.api_key, "reader");
    const w = await call("POST", "/v1/access/simulate", {
      key: org.api_key,
      body: { principal_id: reader.principal_id, action: "write", subject: "alpha" },
    });
    expect(w.json.data).toMatchObject({ decision: "deny", gates: { role: { role: "reader", passed: false } } });
  });
});

describe("the same 404 for foreign, invisible and missing records", () => {
  it("holds on every id-taking route", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const alice = await mintKey(org.api_key, { scopes: ["*"] });
    const bob = await mintKey(org.api_key, { scopes: ["*"] });
    const carol = await mintKey(org.api_key, { scopes: ["*"] });
    const o = await appendOk(alice.key, obs("s-private", "x", { visibility: "private" }));
    const [c] = await consolidateOk(alice.key, "s-private", [{ kind: "fact", statement: "x", sources: supports(o) }]);
    const ctx = (await call("POST", "/v1/context/compile", { key: alice.key, body: {} })).json.data.context_id;
    const chk = (
      await call("POST", "/v1/checkpoints", {
        key: alice.key,
        body: { subject_id: "s", agent_id: "a", kind: "cursor", state: "1", ttl_seconds: 600 },
      })
    ).json.data.checkpoint_id;
    const evt = (await call("GET", "/v1/events?kind=observation.appended", { key: alice.key })).json.data.events.find(
      (e: any) => e.resource_id === o,
    ).id;
    const grant = (
      await call("POST", "/v1/grants", {
        key: org.api_key,
        body: { principal_id: carol.principal_id, permissions: ["read"], subject: "zzz" },
      })
    ).json.data.grant_id;
    const project = (
      await call("POST", "/v1/projects/resolve", { key: alice.key, body: { reference: "p", create: true } })
    ).json.data.project_id;
    await appendOk(alice.key, obs("s2", "y", { visibility: "private", project_id: project }));
    const handoff = (
      await call("POST", "/v1/handoffs", { key: alice.key, body: { to_principal_id: carol.principal_id } })
    ).json.data.handoff_id;
    const lease = (
      await call("POST", "/v1/leases", {
        key: alice.key,
        body: { resource_type: "r", resource_id: "held", ttl_seconds: 600 },
      })
    ).json.data.lease_id;
    const workspace = (await call("POST", "/v1/workspaces", { key: org.api_key, body: { name: "w" } })).json.data
      .workspace_id;
    const membership = async () =>
      (
        await call("POST", "/v1/memberships", {
          key: org.api_key,
          body: { principal_id: carol.principal_id, role: "member", workspace_id: workspace },
        })
      ).json.data.membership_id;
    const removed = await membership();
    expect((await call("DELETE", `/v1/memberships/${removed}`, { key: org.api_key })).status).toBe(200);
    const live = await membership();
    const zero = "0".repeat(32);
    const cases: [string, string, string, unknown?][] = [
      ["GET", `/v1/claims/${c}/evidence`, `/v1/claims/claim_${zero}/evidence`],
      ["POST", `/v1/claims/${c}/revoke`, `/v1/claims/claim_${zero}/revoke`, {}],
      ["POST", `/v1/claims/${c}/expire`, `/v1/claims/claim_${zero}/expire`, {}],
      ["POST", `/v1/claims/${c}/supersede`, `/v1/claims/claim_${zero}/supersede`, { superseded_by: c }],
      ["DELETE", `/v1/observations/${o}`, `/v1/observations/obs_${zero}`],
      ["GET", `/v1/context/${ctx}`, `/v1/context/ctx_${zero}`],
      ["POST", `/v1/context/${ctx}/feedback`, `/v1/context/ctx_${zero}/feedback`, { outcome: "used" }],
      ["GET", `/v1/checkpoints/${chk}`, `/v1/checkpoints/chk_${zero}`],
      ["DELETE", `/v1/checkpoints/${chk}`, `/v1/checkpoints/chk_${zero}`],
      ["GET", `/v1/events/${evt}`, `/v1/events/evt_${zero}`],
      ["DELETE", `/v1/keys/${alice.key_id}`, `/v1/keys/key_${zero}`],
      ["DELETE", `/v1/grants/${grant}`, `/v1/grants/grt_${zero}`],
      ["GET", `/v1/projects/${project}/references`, `/v1/projects/prj_${zero}/references`],
      ["GET", "/v1/subjects/s-private/references", "/v1/subjects/nobody-here/references"],
    ];
    /** The whole answer apart from its request id: status, and body byte for byte. */
    const answer = (r: Awaited<ReturnType<typeof call>>) =>
      `${r.status} ${r.text.replaceAll(r.json.meta.request_id, "req_")}`;
    for (const [method, path, missingPath, body] of cases) {
      const foreign = await call(method, path, { key: other.api_key, body });
      const invisible = await call(method, path, { key: bob.key, body });
      const missing = await call(method, missingPath, { key: bob.key, body });
      for (const r of [foreign, invisible, missing]) expectError(r, 404, "NOT_FOUND");
      expect(answer(foreign), `${method} ${path}`).toBe(answer(missing));
      expect(answer(invisible), `${method} ${path}`).toBe(answer(missing));
    }
    // A body focus (the Atlas's evidence_trace claim, neighborhood subject) answers like a path id.
    const focusCases: [Record<string, unknown>, Record<string, unknown>][] = [
      [
        { lens: "evidence_trace", focus_id: c },
        { lens: "evidence_trace", focus_id: `claim_${zero}` },
      ],
      [
        { lens: "neighborhood", subject_id: "s-private" },
        { lens: "neighborhood", subject_id: "nobody-here" },
      ],
    ];
    for (const [body, missingBody] of focusCases) {
      const foreign = await call("POST", "/v1/memory-views/compile", { key: other.api_key, body });
      const invisible = await call("POST", "/v1/memory-views/compile", { key: bob.key, body });
      const missing = await call("POST", "/v1/memory-views/compile", { key: bob.key, body: missingBody });
      for (const r of [foreign, invisible, missing]) expectError(r, 404, "NOT_FOUND");
      expect(answer(foreign), JSON.stringify(body)).toBe(answer(missing));
      expect(answer(invisible), JSON.stringify(body)).toBe(answer(missing));
      expect((await call("POST", "/v1/memory-views/compile", { key: alice.key, body })).status).toBe(200);
    }
    // Records every member of the organization may know exist (SPEC: a handoff's non-recipient gets
    // 400, a lease's non-holder 403; owners and admins reach every lease and membership): a foreign
    // id answers exactly as a missing one, for a caller allowed to act on the route.
    const visibleCases: [string, string, string, string, unknown?][] = [
      [
        "POST",
        `/v1/handoffs/${handoff}/resolve`,
        `/v1/handoffs/hnd_${zero}/resolve`,
        carol.key,
        { status: "accepted" },
      ],
      ["DELETE", `/v1/leases/${lease}`, `/v1/leases/lse_${zero}`, alice.key],
      ["POST", `/v1/leases/${lease}/force-release`, `/v1/leases/lse_${zero}/force-release`, org.api_key],
      ["DELETE", `/v1/memberships/${live}`, `/v1/memberships/mbr_${zero}`, org.api_key],
    ];
    for (const [method, path, missingPath, key, body] of visibleCases) {
      const foreign = await call(method, path, { key: other.api_key, body });
      const missing = await call(method, missingPath, { key, body });
      for (const r of [foreign, missing]) expectError(r, 404, "NOT_FOUND");
      expect(answer(foreign), `${method} ${path}`).toBe(answer(missing));
    }
    // A removed membership is gone: removing it again answers exactly as a missing one.
    expect(answer(await call("DELETE", `/v1/memberships/${removed}`, { key: org.api_key }))).toBe(
      answer(await call("DELETE", `/v1/memberships/mbr_${zero}`, { key: org.api_key })),
    );
    // The records are still there for the callers entitled to them.
    expect(
      (await call("POST", `/v1/handoffs/${handoff}/resolve`, { key: carol.key, body: { status: "accepted" } })).status,
    ).toBe(200);
    expect((await call("POST", `/v1/leases/${lease}/force-release`, { key: org.api_key })).status).toBe(200);
    expect((await call("DELETE", `/v1/memberships/${live}`, { key: org.api_key })).status).toBe(200);
  });

  it("holds for organization-wide records (federation peers): foreign and missing answer alike", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const peer = (
      await call("POST", "/v1/federation/peers", {
        key: org.api_key,
        body: {
          endpoint: "https://uniform.example.com",
          shared_secret: "0123456789abcdef",
          direction: "bidirectional",
        },
      })
    ).json.data.peer_id;
    const zero = `peer_${"0".repeat(32)}`;
    const paths: [string, (id: string) => string, unknown?][] = [
      ["POST", (id) => `/v1/federation/peers/${id}/suspend`],
      ["POST", (id) => `/v1/federation/peers/${id}/filters`, { resource_type: "observation" }],
      ["GET", (id) => `/v1/federation/peers/${id}/filters`],
      ["GET", (id) => `/v1/federation/log?peer_id=${id}`],
    ];
    for (const [method, path, body] of paths) {
      const foreign = await call(method, path(peer), { key: other.api_key, body });
      const missing = await call(method, path(zero), { key: other.api_key, body });
      for (const r of [foreign, missing]) expectError(r, 404, "NOT_FOUND");
      expect(JSON.stringify(foreign.json.error), `${method} ${path(peer)}`).toBe(JSON.stringify(missing.json.error));
    }
    // A body reference: 400 UNRESOLVED_REFERENCE, naming only the id the caller sent.
    for (const path of ["/v1/federation/pull", "/v1/federation/push"]) {
      const send = (id: string) => {
        const raw = JSON.stringify(
          path.endsWith("pull")
            ? { peer_id: id, sent_at: new Date().toISOString() }
            : { peer_id: id, exchange_id: "x", sent_at: new Date().toISOString(), events: [] },
        );
        return call("POST", path, {
          key: other.api_key,
          raw,
          headers: { "content-type": "application/json", "x-svc-peer-signature": sign("0123456789abcdef", raw) },
        });
      };
      const foreign = await send(peer);
      const missing = await send(zero);
      for (const r of [foreign, missing]) expectError(r, 400, "UNRESOLVED_REFERENCE");
      expect(foreign.json.error.message.replace(peer, zero), path).toBe(missing.json.error.message);
    }
  });
});

describe("role matrix on mutating routes", () => {
  it("allows and refuses by role as documented", async () => {
    const org = await newOrg();
    const keys = {
      owner: { key: org.api_key },
      admin: await principalWithRole(org.api_key, "admin"),
      member: await principalWithRole(org.api_key, "member"),
      reader: await principalWithRole(org.api_key, "reader"),
    };
    const anyone = ["owner", "admin", "member"];
    const lease = (
      await call("POST", "/v1/leases", {
        key: keys.member.key,
        body: { resource_type: "r", resource_id: "held", ttl_seconds: 600 },
      })
    ).json.data.lease_id;
    const bobId = (await mintKey(org.api_key, { scopes: ["*"] })).principal_id;
    const fedPeer = (
      await call("POST", "/v1/federation/peers", {
        key: org.api_key,
        body: { endpoint: "https://matrix.example.com", shared_secret: "0123456789abcdef", direction: "pull" },
      })
    ).json.data.peer_id;
    let n = 0;
    // [method, path, body, roles allowed, success status, the headers a signed body needs]
    const matrix: [string, string, () => unknown, string[], number, ((raw: string) => Record<string, string>)?][] = [
      ["POST", "/v1/observations", () => obs("s", `x${n++}`), anyone, 201],
      [
        "POST",
        "/v1/checkpoints",
        () => ({ subject_id: `s${n++}`, agent_id: "a", kind: "cursor", state: "1", ttl_seconds: 60 }),
        anyone,
        201,
      ],
      ["POST", "/v1/leases", () => ({ resource_type: "r", resource_id: `r${n++}`, ttl_seconds: 60 }), anyone, 201],
      ["POST", "/v1/handoffs", () => ({ to_principal_id: bobId }), anyone, 201],
      ["POST", "/v1/keys", () => ({ label: "k", scopes: ["events:read"] }), anyone, 201],
      [
        "POST",
        "/v1/webhooks",
        () => ({ url: "https://hooks.example.com/x", secret: "0123456789abcdef", events: ["*"] }),
        anyone,
        201,
      ],
      ["POST", "/v1/workspaces", () => ({ name: `w${n++}` }), anyone, 201],
      [
        "POST",
        "/v1/operator-accounts",
        () => ({ username: `matrix-${Date.now().toString(36)}-${n++}`, role: "member" }),
        anyone,
        201,
      ],
      ["POST", "/v1/context/compile", () => ({}), [...anyone, "reader"], 201],
      ["POST", "/v1/memory-views/compile", () => ({ lens: "scope_preview" }), [...anyone, "reader"], 200],
      [
        "POST",
        "/v1/memberships",
        () => ({ principal_id: bobId, role: "member", workspace_id: undefined }),
        ["owner", "admin"],
        201,
      ],
      [
        "POST",
        "/v1/grants",
        () => ({ principal_id: bobId, permissions: ["read"], subject: `s${n++}` }),
        ["owner"],
        201,
      ], // an admin only from a read grant of its own
      [
        "POST",
        "/v1/grants",
        () => ({ principal_id: bobId, permissions: ["write", "approve", "admin"], subject: `s${n++}` }),
        ["owner", "admin"],
        201,
      ],
      ["POST", `/v1/leases/${lease}/force-release`, () => undefined, ["owner", "admin"], 200],
      ["GET", "/v1/principals", () => undefined, ["owner", "admin"], 200],
      ["GET", "/v1/audit", () => undefined, ["owner", "admin"], 200],
      ["POST", "/v1/access/simulate", () => ({ principal_id: bobId, action: "read" }), ["owner"], 200],
      [
        "POST",
        "/v1/federation/peers",
        () => ({ endpoint: `https://m${n++}.example.com`, shared_secret: "0123456789abcdef", direction: "pull" }),
        ["owner", "admin"],
        201,
      ],
      [
        "POST",
        `/v1/federation/peers/${fedPeer}/filters`,
        () => ({ resource_type: "observation" }),
        ["owner", "admin"],
        201,
      ],
      [
        "POST",
        "/v1/federation/pull",
        () => ({ peer_id: fedPeer, sent_at: new Date().toISOString() }),
        ["owner", "admin"],
        200, // a member needs a key naming federation:write
        (raw) => ({ "x-svc-peer-signature": sign("0123456789abcdef", raw) }),
      ],
      ["GET", "/v1/models/config", () => undefined, [...anyone, "reader"], 200],
      ["POST", "/v1/models/probe", () => ({ kind: "embedding", text: "role matrix" }), anyone, 200],
      ["POST", "/v1/index/drain", () => ({ limit: 1 }), ["owner", "admin"], 200],
      ["POST", "/v1/index/verify", () => ({ limit: 1 }), ["owner", "admin"], 200],
      ["POST", "/v1/enrichment/drain", () => ({}), ["owner", "admin"], 200],
    ];
    for (const [method, path, body, allowed, success, signed] of matrix)
      for (const [role, k] of Object.entries(keys)) {
        const b = body();
        const r = await call(method, path, { key: k.key, body: b, headers: signed?.(JSON.stringify(b)) });
        if (allowed.includes(role)) expect(r.status, `${role} ${method} ${path}: ${r.text}`).toBe(success);
        else expectError(r, 403, "FORBIDDEN");
      }
  }, 120_000);
});

// The two matrices make a few hundred requests: on the shared 2-core machine they need more than the default 30 s.
describe("role matrix on the remaining mutating routes", () => {
  it("refuses the reader everywhere it would write and allows the other roles as documented", async () => {
    const org = await newOrg();
    const owner = {
      key: org.api_key,
      principal_id: (await call("GET", "/v1/principal", { key: org.api_key })).json.data.principal_id,
    };
    const roles = {
      owner,
      admin: await principalWithRole(org.api_key, "admin"),
      member: await principalWithRole(org.api_key, "member"),
      reader: await principalWithRole(org.api_key, "reader"),
    };
    type Who = { key: string; principal_id: string };
    let n = 0;
    const ownerObservation = () => appendOk(owner.key, obs("matrix", `o${n++}`));
    const ownerClaim = async () =>
      (
        await consolidateOk(owner.key, "matrix", [
          { kind: "fact", statement: `c${n++}`, sources: supports(await ownerObservation()) },
        ])
      )[0];
    const fedPeer = async (direction = "bidirectional") =>
      (
        await call("POST", "/v1/federation/peers", {
          key: owner.key,
          body: { endpoint: `https://m${n++}.example.com`, shared_secret: "0123456789abcdef", direction },
        })
      ).json.data.peer_id;
    const pushPeer = await fedPeer("push");
    // A webhook is managed by its creator or an owner/admin (another member's is missing: test/webhooks.test.ts);
    // each role acts on its own here, the reader (who cannot register one) on the owner's.
    const hook = async (who: Who) =>
      (
        await call("POST", "/v1/webhooks", {
          key: (who === roles.reader ? owner : who).key,
          body: { url: "https://hooks.example.com/m", secret: "0123456789abcdef", events: ["*"] },
        })
      ).json.data.webhook_id;
    // Each row: how to build the request for a caller, which roles succeed (the rest get 403), and the success status.
    const rows: [string, (who: Who) => Promise<[string, string, unknown?]>, string[], number][] = [
      [
        "consolidate",
        async () => [
          "POST",
          "/v1/consolidations",
          {
            subject_id: "matrix",
            claims: [{ kind: "fact", statement: "x", sources: supports(await ownerObservation()) }],
          },
        ],
        ["owner", "admin", "member"],
        201,
      ],
      [
        "revoke",
        async () => ["POST", `/v1/claims/${await ownerClaim()}/revoke`, {}],
        ["owner", "admin", "member"],
        200,
      ],
      [
        "expire",
        async () => ["POST", `/v1/claims/${await ownerClaim()}/expire`, {}],
        ["owner", "admin", "member"],
        200,
      ],
      [
        "supersede",
        async () => ["POST", `/v1/claims/${await ownerClaim()}/supersede`, { superseded_by: await ownerClaim() }],
        ["owner", "admin", "member"],
        200,
      ],
      [
        "purge own",
        async (who) => [
          "DELETE",
          `/v1/observations/${who === roles.reader ? await ownerObservation() : await appendOk(who.key, obs("m", `p${n++}`))}`,
        ],
        ["owner", "admin", "member"],
        200,
      ],
      [
        "purge another's",
        async () => ["DELETE", `/v1/observations/${await ownerObservation()}`],
        ["owner", "admin"],
        200,
      ],
      [
        "feedback",
        async (who) => [
          "POST",
          `/v1/context/${(await call("POST", "/v1/context/compile", { key: who.key, body: {} })).json.data.context_id}/feedback`,
          { outcome: "used" },
        ],
        ["owner", "admin", "member"],
        201,
      ],
      [
        "resolve project",
        async () => ["POST", "/v1/projects/resolve", { reference: `m${n++}`, create: true }],
        ["owner", "admin", "member"],
        201,
      ],
      [
        "delete checkpoint",
        async (who) =>
          who === roles.reader
            ? ["DELETE", `/v1/checkpoints/chk_${"0".repeat(32)}`]
            : [
                "DELETE",
                `/v1/checkpoints/${(await call("POST", "/v1/checkpoints", { key: who.key, body: { subject_id: `c${n++}`, agent_id: "a", kind: "cursor", state: "1", ttl_seconds: 60 } })).json.data.checkpoint_id}`,
              ],
        ["owner", "admin", "member"],
        200,
      ],
      [
        "release lease",
        async (who) =>
          who === roles.reader
            ? ["DELETE", `/v1/leases/lse_${"0".repeat(32)}`]
            : [
                "DELETE",
                `/v1/leases/${(await call("POST", "/v1/leases", { key: who.key, body: { resource_type: "m", resource_id: `l${n++}`, ttl_seconds: 60 } })).json.data.lease_id}`,
              ],
        ["owner", "admin", "member"],
        200,
      ],
      [
        "resolve handoff",
        async (who) => [
          "POST",
          `/v1/handoffs/${(await call("POST", "/v1/handoffs", { key: (who === owner ? roles.admin : owner).key, body: { to_principal_id: who.principal_id } })).json.data.handoff_id}/resolve`,
          { status: "accepted" },
        ],
        ["owner", "admin", "member"],
        200,
      ],
      [
        "pause webhook",
        async (who) => ["POST", `/v1/webhooks/${await hook(who)}/pause`],
        ["owner", "admin", "member"],
        200,
      ],
      [
        "resume webhook",
        async (who) => ["POST", `/v1/webhooks/${await hook(who)}/resume`],
        ["owner", "admin", "member"],
        200,
      ],
      [
        "delete webhook",
        async (who) => ["DELETE", `/v1/webhooks/${await hook(who)}`],
        ["owner", "admin", "member"],
        200,
      ],
      ["drain webhooks", async () => ["POST", "/v1/webhooks/deliver", { limit: 1 }], ["owner", "admin", "member"], 200],
      ["import", async () => ["POST", "/v1/import", undefined], ["owner", "admin", "member"], 201],
      [
        "revoke own key",
        async (who) =>
          who === roles.reader
            ? ["DELETE", `/v1/keys/key_${"0".repeat(32)}`]
            : [
                "DELETE",
                `/v1/keys/${(await call("POST", "/v1/keys", { key: who.key, body: { label: "m", scopes: ["events:read"], principal_id: who.principal_id } })).json.data.key_id}`,
              ],
        ["owner", "admin", "member"],
        200,
      ],
      [
        "revoke a grant",
        async (who) => [
          "DELETE",
          `/v1/grants/${(await call("POST", "/v1/grants", { key: owner.key, body: { principal_id: who.principal_id, permissions: ["read"], subject: `g${n++}` } })).json.data.grant_id}`,
        ],
        ["owner", "admin"],
        200,
      ],
      [
        "suspend a federation peer",
        async () => ["POST", `/v1/federation/peers/${await fedPeer()}/suspend`],
        ["owner", "admin"],
        200,
      ],
      ["federation push", async () => ["POST", "/v1/federation/push", undefined], ["owner", "admin"], 200], // a member needs a key naming federation:write
      [
        "remove a membership",
        async () => {
          const w = (await call("POST", "/v1/workspaces", { key: owner.key, body: { name: `w${n++}` } })).json.data
            .workspace_id;
          const m = await call("POST", "/v1/memberships", {
            key: owner.key,
            body: { principal_id: roles.member.principal_id, role: "member", workspace_id: w },
          });
          return ["DELETE", `/v1/memberships/${m.json.data.membership_id}`];
        },
        ["owner", "admin"],
        200,
      ],
    ];
    for (const [name, build, allowed, success] of rows)
      for (const [role, who] of Object.entries(roles)) {
        const [method, path, body] = await build(who);
        const signed = (raw: string) => ({
          key: who.key,
          raw,
          headers: { "content-type": "application/json", "x-svc-peer-signature": sign("0123456789abcdef", raw) },
        });
        const r =
          name === "federation push"
            ? await call(
                method,
                path,
                signed(
                  JSON.stringify({
                    peer_id: pushPeer,
                    exchange_id: `m${n++}`,
                    sent_at: new Date().toISOString(),
                    events: [],
                  }),
                ),
              )
            : name === "import"
              ? await call(method, path, {
                  key: who.key,
                  raw: JSON.stringify({
                    type: "project",
                    project_id: `prj_${(n++).toString(16).padStart(32, "0")}`,
                    reference: `imp${n}`,
                    created_by: who.principal_id,
                    created_at: "2026-01-01T00:00:00.000Z",
                  }),
                  headers: { "content-type": "application/x-ndjson" },
                })
              : await call(method, path, { key: who.key, body });
        if (allowed.includes(role)) expect(r.status, `${role} ${name}: ${r.text}`).toBe(success);
        else expectError(r, 403, "FORBIDDEN");
      }
  }, 120_000); // ~20 rows × 4 roles of sequential requests: 4 s alone, over 30 s on a loaded 2-core machine
});

describe("claim references to hidden claims", () => {
  it("never show the id of a claim the caller cannot read in disputes or superseded_by", async () => {
    const org = await newOrg();
    const alice = await mintKey(org.api_key, { scopes: ["*"] });
    const bob = await mintKey(org.api_key, { scopes: ["*"] });
    const team = await appendOk(alice.key, obs("s", "team evidence"));
    const priv = await appendOk(alice.key, obs("s", "private evidence", { visibility: "private" }));
    const [old] = await consolidateOk(alice.key, "s", [
      { kind: "fact", statement: "shared old", sources: supports(team) },
    ]);
    const [secret] = await consolidateOk(alice.key, "s", [
      { kind: "fact", statement: "private new", sources: supports(priv) },
    ]);
    const disputing = await call("POST", "/v1/consolidations", {
      key: alice.key,
      body: {
        subject_id: "s",
        claims: [
          {
            kind: "fact",
            statement: "shared dispute",
            visibility: "team",
            sources: [
              { observation_id: team, relation: "supports" },
              { claim_id: old, relation: "contradicts" },
            ],
          },
        ],
      },
    });
    const shared = disputing.json.data.claims[0].claim_id;
    await call("POST", `/v1/claims/${old}/supersede`, { key: alice.key, body: { superseded_by: secret } });
    const seenByAlice = await call("GET", `/v1/claims/${old}/evidence`, { key: alice.key });
    expect(seenByAlice.json.data.claim.superseded_by).toBe(secret);
    const seenByBob = await call("GET", `/v1/claims/${old}/evidence`, { key: bob.key });
    expect(seenByBob.json.data.claim).toMatchObject({ status: "superseded", superseded_by: null });
    for (const r of [
      seenByBob,
      await call("GET", "/v1/memories?status=superseded", { key: bob.key }),
      await call("GET", "/v1/export?type=claims", { key: bob.key }),
      await call("GET", "/v1/events?kind=claim.superseded", { key: bob.key }),
    ])
      expect(r.text).not.toContain(secret);
    expect(
      (await call("GET", "/v1/events?kind=claim.superseded", { key: bob.key })).json.data.events.map(
        (e: any) => e.resource_id,
      ),
    ).toEqual([old]);
    const list = await call("GET", "/v1/memories", { key: bob.key });
    expect(list.json.data.items.find((c: any) => c.claim_id === shared).disputes).toEqual([old]);
  });
});

describe("governance routes: the same 404, the same unresolved reference, and the role matrix", () => {
  const zero = "0".repeat(32);
  async function verifiedClaim(key: string, statement: string, visibility = "team") {
    const subject = `gov-${statement}`;
    const o = await appendOk(key, obs(subject, statement, { trust: "verified", visibility }));
    return (await consolidateOk(key, subject, [{ kind: "fact", statement, visibility, sources: supports(o) }]))[0];
  }

  it("answers foreign, invisible and missing path ids identically on every governance route", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const alice = await mintKey(org.api_key, { scopes: ["*"], max_trust: "verified" });
    const bob = await mintKey(org.api_key, { scopes: ["*"] });
    const gw = await mintKey(org.api_key, { scopes: ["channel:compile"] });
    const policy = (
      await call("POST", "/v1/policies", {
        key: org.api_key,
        body: { type: "approval", name: "p", rules: { separation_of_duty: false } },
      })
    ).json.data.policy_id;
    const hidden = await verifiedClaim(alice.key, "hidden", "private");
    const approval = (await call("POST", "/v1/claim-approvals", { key: alice.key, body: { claim_id: hidden } })).json
      .data.approval_id;
    const channel = (
      await call("POST", "/v1/channels", {
        key: org.api_key,
        body: { name: "c", audiences: ["a"], min_trust: "low", gateway_principal_id: gw.principal_id },
      })
    ).json.data.channel_id;
    const rel = (
      await call("POST", "/v1/knowledge-releases", {
        key: alice.key,
        body: { claim_id: await verifiedClaim(alice.key, "shared"), channel_id: channel },
      })
    ).json.data.release_id;
    // A release of a team claim in a workspace bob is not in, written straight into the table (the API
    // no longer drafts one): bob may not retrieve its claim, so he may not see the release either.
    const w = (await call("POST", "/v1/workspaces", { key: org.api_key, body: { name: "gov-w" } })).json.data
      .workspace_id;
    expect(
      (
        await call("POST", "/v1/memberships", {
          key: org.api_key,
          body: { principal_id: alice.principal_id, role: "member", workspace_id: w },
        })
      ).status,
    ).toBe(201);
    const wp = (
      await call("POST", "/v1/projects/resolve", {
        key: alice.key,
        body: { reference: "gov-wp", create: true, workspace_id: w },
      })
    ).json.data.project_id;
    const wo = await appendOk(alice.key, obs("gov-ws", "workspace only", { trust: "verified", project_id: wp }));
    const wc = (
      await call("POST", "/v1/consolidations", {
        key: alice.key,
        body: {
          subject_id: "gov-ws",
          project_id: wp,
          claims: [{ kind: "fact", statement: "workspace only", visibility: "team", sources: supports(wo) }],
        },
      })
    ).json.data.claims[0].claim_id;
    const wrel = `rel_${"1".repeat(32)}`;
    await inOrg(org.org_id, (o) =>
      o.db.run(
        `INSERT INTO knowledge_releases (release_id, channel_id, claim_id, claim_version, status, snapshot, created_by, created_at)
      VALUES (?, ?, ?, 1, 'draft', '{"subject_id":"gov-ws","kind":"fact","statement":"workspace only","trust":"verified","valid_to":null,"evidence":[]}', ?, ?)`,
        wrel,
        channel,
        wc,
        alice.principal_id,
        new Date().toISOString(),
      ),
    );
    // [method, path, missing path, body, the key of this organization that asks for the missing id, a key to which the record is invisible]
    const cases: [string, string, string, unknown, string, string?][] = [
      [
        "PATCH",
        `/v1/policies/${policy}`,
        `/v1/policies/pol_${zero}`,
        { expected_version: 1, status: "retired" },
        org.api_key,
      ],
      [
        "POST",
        `/v1/claim-approvals/${approval}/decide`,
        `/v1/claim-approvals/apr_${zero}/decide`,
        { decision: "approved" },
        bob.key,
        bob.key,
      ],
      [
        "PATCH",
        `/v1/channels/${channel}`,
        `/v1/channels/chn_${zero}`,
        { status: "paused", expected_version: 1 },
        bob.key,
      ],
      ["POST", `/v1/knowledge-releases/${rel}/approve`, `/v1/knowledge-releases/rel_${zero}/approve`, {}, bob.key],
      ["POST", `/v1/knowledge-releases/${rel}/activate`, `/v1/knowledge-releases/rel_${zero}/activate`, {}, bob.key],
      ["POST", `/v1/knowledge-releases/${rel}/revoke`, `/v1/knowledge-releases/rel_${zero}/revoke`, {}, bob.key],
      [
        "POST",
        `/v1/knowledge-releases/${wrel}/approve`,
        `/v1/knowledge-releases/rel_${zero}/approve`,
        {},
        bob.key,
        bob.key,
      ],
      [
        "POST",
        `/v1/knowledge-releases/${wrel}/activate`,
        `/v1/knowledge-releases/rel_${zero}/activate`,
        {},
        bob.key,
        bob.key,
      ],
      [
        "POST",
        `/v1/knowledge-releases/${wrel}/revoke`,
        `/v1/knowledge-releases/rel_${zero}/revoke`,
        {},
        bob.key,
        bob.key,
      ],
      ["POST", `/v1/channels/${channel}/context/compile`, `/v1/channels/chn_${zero}/context/compile`, {}, gw.key],
    ];
    await expectSame404(cases, other.api_key);
    // Body references: hidden, missing and foreign records are one 400 UNRESOLVED_REFERENCE.
    const theirClaim = await verifiedClaim(other.api_key, "theirs");
    const theirGw = await mintKey(other.api_key, { scopes: ["channel:compile"] });
    const theirChannel = (
      await call("POST", "/v1/channels", {
        key: other.api_key,
        body: { name: "c", audiences: ["a"], min_trust: "low", gateway_principal_id: theirGw.principal_id },
      })
    ).json.data.channel_id;
    const shared = await verifiedClaim(org.api_key, "shared-2");
    const refs: [string, (id: string) => unknown, string[]][] = [
      ["/v1/claim-approvals", (id) => ({ claim_id: id }), [hidden, theirClaim, `claim_${zero}`]],
      [
        "/v1/knowledge-releases",
        (id) => ({ claim_id: id, channel_id: channel }),
        [hidden, theirClaim, `claim_${zero}`],
      ],
      ["/v1/knowledge-releases", (id) => ({ claim_id: shared, channel_id: id }), [theirChannel, `chn_${zero}`]],
      [
        "/v1/channels",
        (id) => ({ name: `n${id}`, audiences: ["a"], min_trust: "low", gateway_principal_id: id }),
        [theirGw.principal_id, `prn_${zero}`],
      ],
    ];
    for (const [path, body, ids] of refs) {
      const answers = await Promise.all(ids.map((id) => call("POST", path, { key: bob.key, body: body(id) })));
      for (const r of answers) expectError(r, 400, "UNRESOLVED_REFERENCE");
      expect(new Set(answers.map((r, i) => r.json.error.message.replace(ids[i], "ID"))).size, path).toBe(1);
    }
  }, 120_000); // many requests: slow when the whole suite shares the machine, not a timed test

  it("allows and refuses each governance route by role", async () => {
    const org = await newOrg();
    const roles = {
      owner: await principalWithRole(org.api_key, "owner"),
      admin: await principalWithRole(org.api_key, "admin"),
      member: await principalWithRole(org.api_key, "member"),
      reader: await principalWithRole(org.api_key, "reader"),
    };
    const gw = await mintKey(org.api_key, { scopes: ["channel:compile"] });
    const channel = (
      await call("POST", "/v1/channels", {
        key: org.api_key,
        body: { name: "shared", audiences: ["a"], min_trust: "low", gateway_principal_id: gw.principal_id },
      })
    ).json.data.channel_id;
    let n = 0;
    const claim = () => verifiedClaim(org.api_key, `m${n++}`);
    const releaseIn = async (...moves: string[]) => {
      const id = (
        await call("POST", "/v1/knowledge-releases", {
          key: org.api_key,
          body: { claim_id: await claim(), channel_id: channel },
        })
      ).json.data.release_id;
      for (const m of moves) await call("POST", `/v1/knowledge-releases/${id}/${m}`, { key: org.api_key, body: {} });
      return id;
    };
    type Who = { key: string; principal_id: string };
    const writers = ["owner", "admin", "member"];
    const everyone = [...writers, "reader"];
    const rows: [string, (who: Who) => Promise<[string, string, unknown?]>, string[]][] = [
      [
        "create policy",
        async () => [
          "POST",
          "/v1/policies",
          { type: "approval", name: `p${n++}`, rules: { separation_of_duty: false } },
        ],
        ["owner", "admin"],
      ],
      [
        "change policy",
        async () => {
          const p = (
            await call("POST", "/v1/policies", {
              key: org.api_key,
              body: {
                type: "retention",
                name: `r${n++}`,
                rules: { rules: [{ record_type: "claim", max_age_days: 9 }] },
              },
            })
          ).json.data.policy_id;
          return ["PATCH", `/v1/policies/${p}`, { expected_version: 1, status: "retired" }];
        },
        ["owner", "admin"],
      ],
      ["list policies", async () => ["GET", "/v1/policies"], everyone],
      ["submit approval", async () => ["POST", "/v1/claim-approvals", { claim_id: await claim() }], writers],
      [
        "decide approval",
        async () => {
          const a = (await call("POST", "/v1/claim-approvals", { key: org.api_key, body: { claim_id: await claim() } }))
            .json.data.approval_id;
          return ["POST", `/v1/claim-approvals/${a}/decide`, { decision: "approved" }];
        },
        writers,
      ],
      ["list approvals", async () => ["GET", "/v1/claim-approvals"], everyone],
      [
        "create channel",
        async () => [
          "POST",
          "/v1/channels",
          {
            name: `c${n++}`,
            audiences: ["a"],
            min_trust: "low",
            gateway_principal_id: (await mintKey(org.api_key, { scopes: ["channel:compile"] })).principal_id,
          },
        ],
        writers,
      ],
      [
        "change channel",
        async () => {
          const g = await mintKey(org.api_key, { scopes: ["channel:compile"] });
          const c = (
            await call("POST", "/v1/channels", {
              key: org.api_key,
              body: { name: `c${n++}`, audiences: ["a"], min_trust: "low", gateway_principal_id: g.principal_id },
            })
          ).json.data.channel_id;
          return ["PATCH", `/v1/channels/${c}`, { status: "paused", expected_version: 1 }];
        },
        ["owner", "admin"],
      ], // the channel is the owner's: its creator or an owner/admin manages it
      ["list channels", async () => ["GET", "/v1/channels"], everyone],
      [
        "create release",
        async () => ["POST", "/v1/knowledge-releases", { claim_id: await claim(), channel_id: channel }],
        writers,
      ],
      [
        "approve release",
        async () => ["POST", `/v1/knowledge-releases/${await releaseIn()}/approve`, {}],
        ["owner", "admin"],
      ],
      [
        "activate release",
        async () => ["POST", `/v1/knowledge-releases/${await releaseIn("approve")}/activate`, {}],
        ["owner", "admin"],
      ],
      [
        "revoke release",
        async () => ["POST", `/v1/knowledge-releases/${await releaseIn("approve", "activate")}/revoke`, {}],
        ["owner", "admin"],
      ],
      ["list releases", async () => ["GET", "/v1/knowledge-releases"], everyone],
      // A read-only POST: any role may compile the channel it is the gateway of.
      [
        "channel compile",
        async (who) => {
          const c = (
            await call("POST", "/v1/channels", {
              key: org.api_key,
              body: { name: `g${n++}`, audiences: ["a"], min_trust: "low", gateway_principal_id: who.principal_id },
            })
          ).json.data.channel_id;
          return ["POST", `/v1/channels/${c}/context/compile`, {}];
        },
        everyone,
      ],
    ];
    for (const [name, build, allowed] of rows)
      for (const [role, who] of Object.entries(roles)) {
        const [method, path, body] = await build(who);
        const r = await call(method, path, { key: who.key, body });
        if (allowed.includes(role)) expect(r.status, `${role} ${name}: ${r.text}`).toBeLessThan(300);
        else expectError(r, 403, "FORBIDDEN");
      }
  }, 300_000); // many requests per role: slow when the whole suite shares the machine, not a timed test
});

describe("legal holds, retention and identity mappings: the same 404, the same unresolved reference, and the role matrix", () => {
  const zero = "0".repeat(32);

  it("answers foreign, invisible and missing ids identically", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const writer = await mintKey(org.api_key, { scopes: ["*"] });
    const admin = await principalWithRole(org.api_key, "admin");
    const hidden = await appendOk(writer.key, obs("s", "private", { visibility: "private" }));
    // A hold on a record the admin cannot read: the hold answers the admin like a missing one.
    const hold = await call("POST", "/v1/legal-holds", {
      key: writer.key,
      body: { target_type: "observation", target_id: hidden, reason: "r" },
    });
    expectError(hold, 403, "FORBIDDEN"); // a member may not place holds
    const wAdmin = await principalWithRole(org.api_key, "admin");
    const held = (
      await call("POST", "/v1/legal-holds", {
        key: wAdmin.key,
        body: {
          target_type: "observation",
          target_id: await appendOk(wAdmin.key, obs("s", "p", { visibility: "private" })),
          reason: "r",
        },
      })
    ).json.data.hold_id;
    const mapping = (
      await call("POST", "/v1/identity-mappings", {
        key: org.api_key,
        body: { external_system: "slack", external_id: "U1", subject_id: "s" },
      })
    ).json.data.mapping_id;
    // [method, path, missing path, body, key that asks for the missing id, key to which the record is invisible]
    const cases: [string, string, string, unknown, string, string?][] = [
      ["POST", `/v1/legal-holds/${held}/release`, `/v1/legal-holds/hold_${zero}/release`, {}, admin.key, admin.key],
      ["DELETE", `/v1/identity-mappings/${mapping}`, `/v1/identity-mappings/map_${zero}`, undefined, org.api_key],
    ];
    await expectSame404(cases, other.api_key);
    // Body references: hidden, foreign and missing targets are one 400 UNRESOLVED_REFERENCE.
    const theirs = await appendOk(other.api_key, obs("s", "theirs"));
    const theirClaim = (
      await consolidateOk(other.api_key, "s", [{ kind: "fact", statement: "t", sources: supports(theirs) }])
    )[0];
    const refs: [string, string[]][] = [
      ["observation", [hidden, theirs, `obs_${zero}`]],
      ["claim", [theirClaim, `claim_${zero}`]],
    ];
    for (const [target_type, ids] of refs) {
      const answers = await Promise.all(
        ids.map((id) =>
          call("POST", "/v1/legal-holds", { key: admin.key, body: { target_type, target_id: id, reason: "r" } }),
        ),
      );
      for (const r of answers) expectError(r, 400, "UNRESOLVED_REFERENCE");
      expect(new Set(answers.map((r, i) => r.json.error.message.replace(ids[i], "ID"))).size, target_type).toBe(1);
    }
  }, 120_000); // many requests: slow when the whole suite shares the machine, not a timed test

  it("allows and refuses each route by role", async () => {
    const org = await newOrg();
    const roles = {
      owner: await principalWithRole(org.api_key, "owner"),
      admin: await principalWithRole(org.api_key, "admin"),
      member: await principalWithRole(org.api_key, "member"),
      reader: await principalWithRole(org.api_key, "reader"),
    };
    const p = await call("POST", "/v1/policies", {
      key: org.api_key,
      body: {
        type: "retention",
        name: "r",
        status: "active",
        rules: { rules: [{ record_type: "claim", max_age_days: 9 }] },
      },
    });
    expect(p.status, p.text).toBe(201);
    let n = 0;
    const team = () => appendOk(org.api_key, obs("matrix", `o${n++}`));
    const writers = ["owner", "admin", "member"];
    const rows: [string, () => Promise<[string, string, unknown?]>, string[]][] = [
      [
        "place hold",
        async () => ["POST", "/v1/legal-holds", { target_type: "observation", target_id: await team(), reason: "r" }],
        ["owner", "admin"],
      ],
      [
        "release hold",
        async () => {
          const h = (
            await call("POST", "/v1/legal-holds", {
              key: org.api_key,
              body: { target_type: "observation", target_id: await team(), reason: "r" },
            })
          ).json.data.hold_id;
          return ["POST", `/v1/legal-holds/${h}/release`, {}];
        },
        ["owner", "admin"],
      ],
      ["apply retention", async () => ["POST", "/v1/retention/apply", { dry_run: true }], ["owner", "admin"]],
      [
        "map identity",
        async () => [
          "POST",
          "/v1/identity-mappings",
          { external_system: "crm", external_id: `e${n++}`, subject_id: "s" },
        ],
        writers,
      ],
      ["list mappings", async () => ["GET", "/v1/identity-mappings"], [...writers, "reader"]],
      [
        "retire mapping",
        async () => {
          const m = (
            await call("POST", "/v1/identity-mappings", {
              key: org.api_key,
              body: { external_system: "crm", external_id: `e${n++}`, subject_id: "s" },
            })
          ).json.data.mapping_id;
          return ["DELETE", `/v1/identity-mappings/${m}`];
        },
        writers,
      ],
    ];
    for (const [name, build, allowed] of rows)
      for (const [role, who] of Object.entries(roles)) {
        const [method, path, body] = await build();
        const r = await call(method, path, { key: who.key, body });
        if (allowed.includes(role)) expect(r.status, `${role} ${name}: ${r.text}`).toBeLessThan(300);
        else expectError(r, 403, "FORBIDDEN");
      }
  }, 120_000);
});
