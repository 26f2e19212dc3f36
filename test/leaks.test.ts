// Nothing leaks across principals or workspaces through a write check, an import answer, a cursor,
// a project reference or a stored score: each case here answers for a hidden record exactly as for a
// missing one (or for a foreign one, where the contract names that answer).
import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { contentHash } from "../src/domains/memory/store";
import { appendOk, call, consolidateOk, expectError, inOrg, mintKey, newOrg, obs, orgStub, supports } from "./helpers";

type Key = Awaited<ReturnType<typeof mintKey>>;

async function member(ownerKey: string, workspaceId: string, role: "reader" | "member" | "admin") {
  const k = await mintKey(ownerKey, { scopes: ["*"] });
  const m = await call("POST", "/v1/memberships", {
    key: ownerKey,
    body: { principal_id: k.principal_id, role, workspace_id: workspaceId },
  });
  expect(m.status, m.text).toBe(201);
  return k;
}

/**
 * An organization with workspace W and its project P (reference "repo:w-secret"), a team observation
 * and claim T in P written by W's member, and principals around it: `wreader` (organization member,
 * workspace reader), `granted` (organization member holding only a read grant on P), `outsider`
 * (organization member outside W).
 */
async function workspaceFixture() {
  const org = await newOrg();
  const w = (await call("POST", "/v1/workspaces", { key: org.api_key, body: { name: "w" } })).json.data
    .workspace_id as string;
  const p = await call("POST", "/v1/projects/resolve", {
    key: org.api_key,
    body: { reference: "repo:w-secret", create: true, workspace_id: w },
  });
  expect(p.status, p.text).toBe(201);
  const projectId = p.json.data.project_id as string;
  const wmember = await member(org.api_key, w, "member");
  const wreader = await member(org.api_key, w, "reader");
  const granted = await mintKey(org.api_key, { scopes: ["*"] });
  const g = await call("POST", "/v1/grants", {
    key: org.api_key,
    body: { principal_id: granted.principal_id, permissions: ["read"], project: projectId },
  });
  expect(g.status, g.text).toBe(201);
  const outsider = await mintKey(org.api_key, { scopes: ["*"] });
  const evidence = await appendOk(wmember.key, obs("s", "workspace evidence", { project_id: projectId }));
  const [claim] = await call("POST", "/v1/consolidations", {
    key: wmember.key,
    body: {
      subject_id: "s",
      project_id: projectId,
      claims: [{ kind: "fact", statement: "workspace claim", sources: supports(evidence) }],
    },
  }).then((r) => {
    expect(r.status, r.text).toBe(201);
    return r.json.data.claims.map((c: { claim_id: string }) => c.claim_id);
  });
  return { org, w, projectId, wmember, wreader, granted, outsider, evidence, claim: claim as string };
}

const claimRow = (orgId: string, id: string) =>
  inOrg(orgId, (o) =>
    o.db.first<{ status: string; version: number }>("SELECT status, version FROM claims WHERE claim_id = ?", id),
  );

describe("disputing a claim takes a write over the disputed claim's workspace", () => {
  it("403s a workspace reader and a read-grant holder (the claim unchanged); a workspace member may", async () => {
    const f = await workspaceFixture();
    const dispute = (k: Key, own: string) =>
      call("POST", "/v1/consolidations", {
        key: k.key,
        body: {
          subject_id: "s",
          claims: [
            {
              kind: "fact",
              statement: "it is not so",
              sources: [
                { observation_id: own, relation: "supports" },
                { claim_id: f.claim, relation: "contradicts" },
              ],
            },
          ],
        },
      });
    for (const k of [f.wreader, f.granted]) {
      // Both read the claim (so the 403 confirms nothing hidden) and may write unscoped memory of their own.
      expect((await call("GET", `/v1/claims/${f.claim}/evidence`, { key: k.key })).status).toBe(200);
      const own = await appendOk(k.key, obs("s", "my own evidence"));
      const r = await dispute(k, own);
      expectError(r, 403, "FORBIDDEN");
      expect(await claimRow(f.org.org_id, f.claim)).toEqual({ status: "active", version: 1 });
    }
    // An outsider cannot read the claim: it is unresolved, exactly like a missing one.
    const own = await appendOk(f.outsider.key, obs("s", "outsider evidence"));
    const hidden = await dispute(f.outsider, own);
    expectError(hidden, 400, "UNRESOLVED_REFERENCE");
    const missingId = "claim_" + "0".repeat(32);
    const missing = await call("POST", "/v1/consolidations", {
      key: f.outsider.key,
      body: {
        subject_id: "s",
        claims: [
          {
            kind: "fact",
            statement: "it is not so",
            sources: [
              { observation_id: own, relation: "supports" },
              { claim_id: missingId, relation: "contradicts" },
            ],
          },
        ],
      },
    });
    expect(hidden.json.error.message.replace(f.claim, "ID")).toBe(missing.json.error.message.replace(missingId, "ID"));
    // A member of the workspace disputes it.
    const mine = await appendOk(f.wmember.key, obs("s", "member evidence"));
    expect((await dispute(f.wmember, mine)).status).toBe(201);
    expect(await claimRow(f.org.org_id, f.claim)).toEqual({ status: "disputed", version: 2 });
  });
});

/** The error of `r` with `id` written as ID, to compare answers about different ids. */
const errorOf = (r: { json: any }, id: string) => JSON.stringify(r.json.error).replaceAll(id, "ID");

describe("a project of a workspace the caller cannot read answers like a missing one", () => {
  it("resolve: 404 without create, 409 with it (references are unique), never its ids; writes naming it: 400", async () => {
    const f = await workspaceFixture();
    const resolve = (key: string, reference: string, create?: boolean) =>
      call("POST", "/v1/projects/resolve", { key, body: { reference, ...(create === undefined ? {} : { create }) } });
    // Who may read the workspace's records resolves it.
    for (const k of [f.wreader, f.granted, f.wmember]) {
      const r = await resolve(k.key, "repo:w-secret");
      expect(r.status, r.text).toBe(200);
      expect(r.json.data).toEqual({
        project_id: f.projectId,
        reference: "repo:w-secret",
        created: false,
        workspace_id: f.w,
      });
    }
    // Anyone else: the same 404 as a reference nobody uses; creating it is a taken reference.
    const hidden = await resolve(f.outsider.key, "repo:w-secret");
    expectError(hidden, 404, "NOT_FOUND");
    expect(hidden.text).not.toContain(f.projectId);
    expect(JSON.stringify(hidden.json.error)).toBe(
      JSON.stringify((await resolve(f.outsider.key, "repo:nobody")).json.error),
    );
    const taken = await resolve(f.outsider.key, "repo:w-secret", true);
    expectError(taken, 409, "CONFLICT");
    expect(taken.text).not.toContain(f.projectId);
    expect(taken.text).not.toContain(f.w);
    expect(await inOrg(f.org.org_id, (o) => o.db.first<{ n: number }>("SELECT count(*) AS n FROM projects"))).toEqual({
      n: 1,
    });

    // Writes naming it: an outsider (and an organization reader) gets the missing project's 400; a
    // workspace reader or read-grant holder, who can see it, the write check's 403.
    const missing = "prj_" + "0".repeat(32);
    const orgReader = await mintKey(f.org.api_key, { scopes: ["*"] });
    expect(
      (
        await call("POST", "/v1/memberships", {
          key: f.org.api_key,
          body: { principal_id: orgReader.principal_id, role: "reader" },
        })
      ).status,
    ).toBe(201);
    const own = await appendOk(f.outsider.key, obs("s", "outsider evidence"));
    const writes: [string, (projectId: string) => unknown][] = [
      ["/v1/observations", (project_id) => obs("s", "x", { project_id })],
      [
        "/v1/consolidations",
        (project_id) => ({
          subject_id: "s",
          project_id,
          claims: [{ kind: "fact", statement: "x", sources: supports(own) }],
        }),
      ],
    ];
    for (const [path, body] of writes) {
      for (const k of [f.outsider, orgReader]) {
        const a = await call("POST", path, { key: k.key, body: body(f.projectId) });
        const b = await call("POST", path, { key: k.key, body: body(missing) });
        expectError(a, 400, "UNRESOLVED_REFERENCE");
        expectError(b, 400, "UNRESOLVED_REFERENCE");
        expect(errorOf(a, f.projectId), path).toBe(errorOf(b, missing));
      }
      for (const k of [f.wreader, f.granted])
        expectError(await call("POST", path, { key: k.key, body: body(f.projectId) }), 403, "FORBIDDEN");
    }
    // The MCP remember tool answers the same.
    const remember = (projectId: string) =>
      call("POST", "/mcp", {
        key: f.outsider.key,
        headers: { accept: "application/json, text/event-stream" },
        body: {
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "svc_remember", arguments: obs("s", "x", { project_id: projectId }) },
        },
      });
    const [ma, mb] = [await remember(f.projectId), await remember(missing)];
    expect(ma.status).toBe(200);
    expect(ma.text.replaceAll(f.projectId, "ID").replace(/req_[0-9a-f]{32}/g, "REQ")).toBe(
      mb.text.replaceAll(missing, "ID").replace(/req_[0-9a-f]{32}/g, "REQ"),
    );
    // An import line naming it: the missing project's 400, not the workspace write check's 403.
    const at = new Date().toISOString();
    const line = (project_id: string) =>
      JSON.stringify({
        type: "observation",
        observation_id: "obs_" + "9".repeat(32),
        subject_id: "s",
        project_id,
        kind: "note",
        content: "x",
        content_hash: contentHash("x"),
        source: { type: "test" },
        trust: "medium",
        visibility: "team",
        author_id: f.outsider.principal_id,
        created_at: at,
        purged: false,
        purged_at: null,
      });
    const importAs = (projectId: string) =>
      call("POST", "/v1/import", {
        key: f.outsider.key,
        raw: line(projectId),
        headers: { "content-type": "application/x-ndjson" },
      });
    const [ia, ib] = [await importAs(f.projectId), await importAs(missing)];
    expectError(ia, 400, "UNRESOLVED_REFERENCE");
    expect(errorOf(ia, f.projectId)).toBe(errorOf(ib, missing));
    expectError(
      await call("POST", "/v1/import", {
        key: f.wreader.key,
        raw: line(f.projectId),
        headers: { "content-type": "application/x-ndjson" },
      }),
      403,
      "FORBIDDEN",
    );
  });
});

describe("import of an id the importer cannot retrieve", () => {
  it("answers exactly as an id of another organization: never compared, never skipped, never a source", async () => {
    const org = await newOrg();
    const importer = await mintKey(org.api_key, { scopes: ["*"] });
    const secretObs = await appendOk(org.api_key, obs("s", "owner's private note", { visibility: "private" }));
    const [secretClaim] = await consolidateOk(org.api_key, "s", [
      { kind: "fact", statement: "owner's private claim", sources: supports(secretObs) },
    ]);
    const lines = (await call("GET", "/v1/export?limit=2000", { key: org.api_key })).text
      .split("\n")
      .filter(Boolean)
      .slice(1)
      .map((l) => JSON.parse(l));
    const obsLine = lines.find((l) => l.observation_id === secretObs);
    const claimLine = lines.find((l) => l.claim_id === secretClaim);
    // Another organization's record, registered in the ownership registry.
    const other = await newOrg();
    const foreign = await appendOk(other.api_key, obs("s", "elsewhere"));
    await runDurableObjectAlarm(orgStub(other.org_id) as unknown as DurableObjectStub);
    const importAs = (rec: object) =>
      call("POST", "/v1/import", {
        key: importer.key,
        raw: JSON.stringify(rec),
        headers: { "content-type": "application/x-ndjson" },
      });
    const foreignAnswer = await importAs({ ...obsLine, observation_id: foreign });
    expectError(foreignAnswer, 409, "CONFLICT");
    // Identical to the hidden record (as the member would write it, and as given), different from it, a claim: all alike.
    const asMember = { ...obsLine, author_id: importer.principal_id };
    for (const [id, rec] of [
      [secretObs, obsLine],
      [secretObs, asMember],
      [secretObs, { ...obsLine, source: { type: "guess" } }],
      [secretClaim, { ...claimLine, sources: [] }],
    ] as const) {
      const r = await importAs(rec);
      expectError(r, 409, "CONFLICT");
      expect(errorOf(r, id)).toBe(errorOf(foreignAnswer, foreign));
    }
    // A claim citing the hidden observation: unresolved, as a missing one.
    const missing = "obs_" + "5".repeat(32);
    const cite = (observation_id: string) =>
      importAs({
        ...claimLine,
        claim_id: "claim_" + "6".repeat(32),
        author_id: importer.principal_id,
        sources: [{ observation_id, relation: "supports" }],
      });
    const [ca, cb] = [await cite(secretObs), await cite(missing)];
    expectError(ca, 400, "UNRESOLVED_REFERENCE");
    expect(errorOf(ca, secretObs)).toBe(errorOf(cb, missing));
    // The owner, who reads it, still re-imports it as skipped.
    const own = await call("POST", "/v1/import", {
      key: org.api_key,
      raw: JSON.stringify(obsLine),
      headers: { "content-type": "application/x-ndjson" },
    });
    expect(own.status, own.text).toBe(200);
    expect(own.json.data.skipped.observations).toBe(1);
  });
});

describe("a delegated context run shows no scores", () => {
  it("the compiler reads its items' scores; a handoff recipient reads the same items with score null", async () => {
    const org = await newOrg();
    const compiler = await mintKey(org.api_key, { scopes: ["*"] });
    const recipient = await mintKey(org.api_key, { scopes: ["*"] });
    const team = await appendOk(compiler.key, obs("s", "heron evidence"));
    const priv = await appendOk(compiler.key, obs("s", "heron private evidence", { visibility: "private" }));
    await consolidateOk(compiler.key, "s", [
      { kind: "fact", statement: "the heron nests by the lake", sources: supports(team) },
      { kind: "fact", statement: "the heron heron heron is private", sources: supports(priv) },
    ]);
    const compiled = await call("POST", "/v1/context/compile", {
      key: compiler.key,
      body: { query: "heron", token_budget: 500 },
    });
    expect(compiled.status, compiled.text).toBe(201);
    const ctx = compiled.json.data.context_id as string;
    expect(compiled.json.data.items).toHaveLength(2);
    const h = await call("POST", "/v1/handoffs", {
      key: compiler.key,
      body: { to_principal_id: recipient.principal_id, context_id: ctx },
    });
    expect(h.status, h.text).toBe(201);
    const own = await call("GET", `/v1/context/${ctx}`, { key: compiler.key });
    expect(own.json.data.items.map((i: { score: unknown }) => i.score)).toEqual(
      compiled.json.data.items.map((i: { score: number }) => i.score),
    );
    const delegated = await call("GET", `/v1/context/${ctx}`, { key: recipient.key });
    expect(delegated.status, delegated.text).toBe(200);
    // Only the team item, and without the score it got among claims the recipient may not read.
    expect(delegated.json.data.items).toHaveLength(1);
    expect(delegated.json.data.items[0]).toMatchObject({ statement: "the heron nests by the lake", score: null });
  });
});

describe("list cursors name the last record, never a position others' writes move", () => {
  const decoded = (cursor: string) => JSON.parse(atob(cursor.replace(/-/g, "+").replace(/_/g, "/")));
  const encoded = (v: unknown) => btoa(JSON.stringify(v)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");

  it("memories, export and releases: the cursor is the same whatever others wrote meanwhile, and pages go on", async () => {
    const org = await newOrg();
    const bob = await mintKey(org.api_key, { scopes: ["*"] });
    const ids = [];
    for (const text of ["first team note", "second team note", "third team note"]) {
      const o = await appendOk(org.api_key, obs("s", text));
      ids.push((await consolidateOk(org.api_key, "s", [{ kind: "fact", statement: text, sources: supports(o) }]))[0]);
    }
    const cursors = async () => {
      const m = await call("GET", "/v1/memories?limit=1", { key: bob.key });
      const e = await call("GET", "/v1/export?type=claims&limit=1", { key: bob.key });
      return {
        memories: m.json.data.next_cursor as string,
        export: JSON.parse(e.text.split("\n")[0]).next_after as string,
      };
    };
    const before = await cursors();
    expect(decoded(before.memories)).toEqual([ids[2]]);
    expect(decoded(before.export)).toEqual(["claims", ids[0]]);
    // The owner writes private claims bob cannot read; bob's cursors must not change (a position would).
    for (let i = 0; i < 3; i++) {
      const o = await appendOk(org.api_key, obs("s", `private ${i}`, { visibility: "private" }));
      await consolidateOk(org.api_key, "s", [{ kind: "fact", statement: `private ${i}`, sources: supports(o) }]);
    }
    expect(await cursors()).toEqual(before);
    // And they continue where they stopped.
    const next = await call("GET", `/v1/memories?limit=1&after=${before.memories}`, { key: bob.key });
    expect(next.json.data.items.map((c: { claim_id: string }) => c.claim_id)).toEqual([ids[1]]);
    const nextExport = await call("GET", `/v1/export?type=claims&limit=5&after=${before.export}`, { key: bob.key });
    const lines = nextExport.text
      .trim()
      .split("\n")
      .slice(1)
      .map((l) => JSON.parse(l).claim_id);
    expect(lines).toEqual([ids[1], ids[2]]);
    // A cursor naming nothing this service issued is the invalid-cursor 400, as before.
    const forged = encoded(["claim_00000000000000000000000000000000"]);
    expectError(await call("GET", `/v1/memories?after=${forged}`, { key: bob.key }), 400, "VALIDATION_ERROR");
    // Nor does one naming a claim bob cannot read: it answers exactly as one naming no claim.
    const hidden = (await call("GET", "/v1/memories?limit=1&visibility=private", { key: org.api_key })).json.data
      .items[0].claim_id as string;
    const hiddenCursor = await call("GET", `/v1/memories?after=${encoded([hidden])}`, { key: bob.key });
    expectError(hiddenCursor, 400, "VALIDATION_ERROR");
    const hiddenExport = await call("GET", `/v1/export?type=claims&after=${encoded(["claims", hidden])}`, {
      key: bob.key,
    });
    expectError(hiddenExport, 400, "VALIDATION_ERROR");
    const numeric = encoded([5]);
    expectError(await call("GET", `/v1/memories?after=${numeric}`, { key: bob.key }), 400, "VALIDATION_ERROR");
  });
});

describe("access simulation of a write into a workspace project", () => {
  it("decides as the real write does: a workspace reader is denied, a workspace member allowed", async () => {
    const f = await workspaceFixture();
    const simulate = (principalId: string) =>
      call("POST", "/v1/access/simulate", {
        key: f.org.api_key,
        body: { principal_id: principalId, action: "write", project: f.projectId },
      }).then((r) => {
        expect(r.status, r.text).toBe(200);
        return r.json.data.decision;
      });
    expect(await simulate(f.wreader.principal_id)).toBe("deny");
    expect(await simulate(f.outsider.principal_id)).toBe("deny");
    expect(await simulate(f.wmember.principal_id)).toBe("allow");
    // The real write agrees.
    expectError(
      await call("POST", "/v1/observations", {
        key: f.wreader.key,
        body: obs("s", "reader writes", { project_id: f.projectId }),
      }),
      403,
      "FORBIDDEN",
    );
  });
});

describe("access simulation of a read of a workspace record", () => {
  it("its visibility gate is the policy's: a team record of a workspace passes for its members, not for anyone else", async () => {
    const f = await workspaceFixture();
    const gates = (principalId: string) =>
      call("POST", "/v1/access/simulate", {
        key: f.org.api_key,
        body: { principal_id: principalId, action: "read", record_id: f.claim },
      }).then((r) => {
        expect(r.status, r.text).toBe(200);
        return {
          visibility: r.json.data.gates.visibility.passed,
          grant: r.json.data.gates.grant.passed,
          decision: r.json.data.decision,
        };
      });
    expect(await gates(f.wreader.principal_id)).toEqual({ visibility: true, grant: false, decision: "allow" });
    // Team, but of a workspace the outsider is not in: the gate does not pass, as the decision says.
    expect(await gates(f.outsider.principal_id)).toEqual({ visibility: false, grant: false, decision: "deny" });
    // The project grant is what lets this one read, not the visibility.
    expect(await gates(f.granted.principal_id)).toEqual({ visibility: false, grant: true, decision: "allow" });
    // The real reads agree.
    expect((await call("GET", `/v1/claims/${f.claim}/evidence`, { key: f.outsider.key })).status).toBe(404);
    expect((await call("GET", `/v1/claims/${f.claim}/evidence`, { key: f.granted.key })).status).toBe(200);
  });
});
