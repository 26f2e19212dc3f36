// Nothing leaks across principals or workspaces through a write check, an import answer, a cursor,
// a project reference or a stored score: each case here answers for a hidden record exactly as for a
// missing one (or for a foreign one, where the contract names that answer).
import { describe, expect, it } from "vitest";
import { appendOk, call, consolidateOk, expectError, inOrg, mintKey, newOrg, obs, supports } from "./helpers";

type Key = Awaited<ReturnType<typeof mintKey>>;

async function member(ownerKey: string, workspaceId: string, role: "reader" | "member" | "admin") {
  const k = await mintKey(ownerKey, { scopes: ["*"] });
  const m = await call("POST", "/v1/memberships", { key: ownerKey, body: { principal_id: k.principal_id, role, workspace_id: workspaceId } });
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
  const w = (await call("POST", "/v1/workspaces", { key: org.api_key, body: { name: "w" } })).json.data.workspace_id as string;
  const p = await call("POST", "/v1/projects/resolve", { key: org.api_key, body: { reference: "repo:w-secret", create: true, workspace_id: w } });
  expect(p.status, p.text).toBe(201);
  const projectId = p.json.data.project_id as string;
  const wmember = await member(org.api_key, w, "member");
  const wreader = await member(org.api_key, w, "reader");
  const granted = await mintKey(org.api_key, { scopes: ["*"] });
  const g = await call("POST", "/v1/grants", { key: org.api_key, body: { principal_id: granted.principal_id, permissions: ["read"], project: projectId } });
  expect(g.status, g.text).toBe(201);
  const outsider = await mintKey(org.api_key, { scopes: ["*"] });
  const evidence = await appendOk(wmember.key, obs("s", "workspace evidence", { project_id: projectId }));
  const [claim] = await call("POST", "/v1/consolidations", { key: wmember.key, body: { subject_id: "s", project_id: projectId,
    claims: [{ kind: "fact", statement: "workspace claim", sources: supports(evidence) }] } })
    .then((r) => { expect(r.status, r.text).toBe(201); return r.json.data.claims.map((c: { claim_id: string }) => c.claim_id); });
  return { org, w, projectId, wmember, wreader, granted, outsider, evidence, claim: claim as string };
}

const claimRow = (orgId: string, id: string) =>
  inOrg(orgId, (o) => o.db.first<{ status: string; version: number }>("SELECT status, version FROM claims WHERE claim_id = ?", id));

describe("disputing a claim takes a write over the disputed claim's workspace", () => {
  it("403s a workspace reader and a read-grant holder (the claim unchanged); a workspace member may", async () => {
    const f = await workspaceFixture();
    const dispute = (k: Key, own: string) => call("POST", "/v1/consolidations", { key: k.key, body: { subject_id: "s", claims: [{
      kind: "fact", statement: "it is not so", sources: [{ observation_id: own, relation: "supports" }, { claim_id: f.claim, relation: "contradicts" }],
    }] } });
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
    const missing = await call("POST", "/v1/consolidations", { key: f.outsider.key, body: { subject_id: "s", claims: [{
      kind: "fact", statement: "it is not so", sources: [{ observation_id: own, relation: "supports" }, { claim_id: missingId, relation: "contradicts" }],
    }] } });
    expect(hidden.json.error.message.replace(f.claim, "ID")).toBe(missing.json.error.message.replace(missingId, "ID"));
    // A member of the workspace disputes it.
    const mine = await appendOk(f.wmember.key, obs("s", "member evidence"));
    expect((await dispute(f.wmember, mine)).status).toBe(201);
    expect(await claimRow(f.org.org_id, f.claim)).toEqual({ status: "disputed", version: 2 });
  });
});
