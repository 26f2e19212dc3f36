// Nothing a credential creates holds more than the credential (DESIGN part 3): dashboard accounts,
// memberships and keys are bounded by the creating credential; removal disables the accounts a
// principal created; second-factor management needs the account's own session; login attempts on one
// username queue; workspaces are listed to their members.
import { describe, expect, it } from "vitest";
import { call, expectError, mintKey, newOrg } from "./helpers";

let seq = 0;
const uniqueName = (p = "a") => `${p}${Date.now().toString(36)}${(seq++).toString(36)}`;
const as = (token: string, method: string, path: string, body?: unknown) => call(method, path, { key: token, body });
const login = (username: string, password: string) => call("POST", "/v1/dashboard-sessions", { body: { username, password } });

async function newAccount(key: string, role = "member") {
  const username = uniqueName();
  const r = await call("POST", "/v1/operator-accounts", { key, body: { username, role } });
  expect(r.status, r.text).toBe(201);
  return { username, password: r.json.data.temporary_password as string, principalId: r.json.data.principal_id as string };
}

/** An account past its temporary password, with a full session. */
async function fullAccount(key: string, role = "member") {
  const acct = await newAccount(key, role);
  const first = await login(acct.username, acct.password);
  const password = `pw-${uniqueName()}-long`;
  expect((await as(first.json.data.session_token, "PATCH", "/v1/operator-accounts/current/password",
    { current_password: acct.password, new_password: password })).status).toBe(200);
  const full = await login(acct.username, password);
  expect(full.json.data.stage, full.text).toBe("full");
  return { ...acct, password, token: full.json.data.session_token as string };
}

const createAccount = (key: string, role: string) =>
  call("POST", "/v1/operator-accounts", { key, body: { username: uniqueName(), role } });

describe("creating a dashboard account needs what its sessions will hold", () => {
  it("refuses a narrow key, naming the missing scopes and ceiling, for every role", async () => {
    const org = await newOrg();
    const narrow = await mintKey(org.api_key, { scopes: ["keys:manage"], max_trust: "low" });
    for (const role of ["member", "reader", "owner"]) {
      const r = await createAccount(narrow.key, role);
      expectError(r, 403, "FORBIDDEN");
      expect(r.json.error.message).toMatch(/lacks scopes "\*" and a "(high|verified)" trust ceiling/);
    }
    // The key of the owner principal itself, narrow: an owner account needs "*" and verified.
    const ownerId = (await call("GET", "/v1/principal", { key: org.api_key })).json.data.principal_id;
    const ownerNarrow = await mintKey(org.api_key, { scopes: ["keys:manage"], principal_id: ownerId });
    const owner = await createAccount(ownerNarrow.key, "owner");
    expectError(owner, 403, "FORBIDDEN");
    expect(owner.json.error.message).toMatch(/lacks scopes "\*" and a "verified" trust ceiling/);
  });

  it("needs a ceiling of high for members and admins and verified for owners", async () => {
    const org = await newOrg();
    const medium = await mintKey(org.api_key, { scopes: ["*"], max_trust: "medium" });
    const r = await createAccount(medium.key, "member");
    expectError(r, 403, "FORBIDDEN");
    expect(r.json.error.message).toMatch(/lacks a "high" trust ceiling \(it holds "medium"\)\.$/);
    const ownerId = (await call("GET", "/v1/principal", { key: org.api_key })).json.data.principal_id;
    const ownerHigh = await mintKey(org.api_key, { scopes: ["*"], max_trust: "high", principal_id: ownerId });
    expect((await createAccount(ownerHigh.key, "admin")).status).toBe(201);
    const ownerAccount = await createAccount(ownerHigh.key, "owner");
    expectError(ownerAccount, 403, "FORBIDDEN");
    expect(ownerAccount.json.error.message).toMatch(/lacks a "verified" trust ceiling/);
    expect((await createAccount(org.api_key, "owner")).status).toBe(201);
  });

  it("never gives a role above the caller's: a member's full session creates members, not admins", async () => {
    const org = await newOrg();
    const member = await fullAccount(org.api_key, "member");
    const admin = await createAccount(member.token, "admin");
    expectError(admin, 403, "FORBIDDEN");
    expect(admin.json.error.message).toMatch(/lacks the admin role/);
    expect((await createAccount(member.token, "member")).status).toBe(201);
  });

  it("closes the narrow-key escalation end to end: no account, so no session minting a * key", async () => {
    const org = await newOrg();
    const narrow = await mintKey(org.api_key, { scopes: ["keys:manage"], max_trust: "low" });
    const before = await call("GET", "/v1/principals", { key: org.api_key });
    expectError(await createAccount(narrow.key, "member"), 403, "FORBIDDEN");
    expect((await call("GET", "/v1/principals", { key: org.api_key })).json.data.principals).toHaveLength(before.json.data.principals.length);
  });
});

describe("an organization role given to a principal with a dashboard account is account authority", () => {
  it("refuses a narrow key promoting an account's principal; an agent's promotion stays a plain role change", async () => {
    const org = await newOrg();
    const ownerId = (await call("GET", "/v1/principal", { key: org.api_key })).json.data.principal_id;
    const narrow = await mintKey(org.api_key, { scopes: ["memberships:write"], max_trust: "low", principal_id: ownerId });
    const human = await fullAccount(org.api_key, "member");
    const r = await call("POST", "/v1/memberships", { key: narrow.key, body: { principal_id: human.principalId, role: "owner" } });
    expectError(r, 403, "FORBIDDEN");
    expect(r.json.error.message).toMatch(/lacks scopes "\*"/);
    expect((await as(human.token, "GET", "/v1/principal")).json.data).toMatchObject({ role: "member", max_trust: "high" });
    const agent = await mintKey(org.api_key, { scopes: ["events:read"] });
    expect((await call("POST", "/v1/memberships", { key: narrow.key, body: { principal_id: agent.principal_id, role: "admin" } })).status).toBe(201);
    // With "*" and verified the promotion goes through, and the account's sessions follow it.
    expect((await call("POST", "/v1/memberships", { key: org.api_key, body: { principal_id: human.principalId, role: "owner" } })).status).toBe(201);
    expect((await as(human.token, "GET", "/v1/principal")).json.data).toMatchObject({ role: "owner", max_trust: "verified" });
  });

  it("keeps memberships at or below the caller's role, in the organization and in a workspace", async () => {
    const org = await newOrg();
    const admin = await mintKey(org.api_key, { scopes: ["*"] });
    expect((await call("POST", "/v1/memberships", { key: org.api_key, body: { principal_id: admin.principal_id, role: "admin" } })).status).toBe(201);
    const member = await mintKey(org.api_key, { scopes: ["*"] });
    const target = await mintKey(org.api_key, { scopes: ["events:read"] });
    const ws = (await call("POST", "/v1/workspaces", { key: org.api_key, body: { name: uniqueName("ws") } })).json.data.workspace_id;
    expectError(await call("POST", "/v1/memberships", { key: member.key, body: { principal_id: target.principal_id, role: "admin" } }), 403, "FORBIDDEN");
    expectError(await call("POST", "/v1/memberships", { key: member.key, body: { principal_id: target.principal_id, role: "admin", workspace_id: ws } }), 403, "FORBIDDEN");
    const above = await call("POST", "/v1/memberships", { key: admin.key, body: { principal_id: target.principal_id, role: "owner", workspace_id: ws } });
    expectError(above, 403, "FORBIDDEN");
    expect((await call("POST", "/v1/memberships", { key: admin.key, body: { principal_id: target.principal_id, role: "admin", workspace_id: ws } })).status).toBe(201);
  });
});
