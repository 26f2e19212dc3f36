// Nothing a credential creates holds more than the credential (DESIGN part 3): dashboard accounts,
// memberships and keys are bounded by the creating credential; removal disables the accounts a
// principal created; second-factor management needs the account's own session; login attempts on one
// username queue per client; workspaces are listed to their members.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../src/auth/credentials";
import { UNKNOWN_CLIENT, loginClient } from "../src/domains/dashboard/throttle";
import { clock } from "../src/http/clock";
import { handle } from "../src/worker";
import { call, expectError, fullAccount, inOrg, login, mintKey, newOrg, uniqueName } from "./helpers";
import { SoftAuthenticator } from "./authenticator.mjs";

const as = (token: string, method: string, path: string, body?: unknown) => call(method, path, { key: token, body });

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
    expect((await call("GET", "/v1/principals", { key: org.api_key })).json.data.principals).toHaveLength(
      before.json.data.principals.length,
    );
  });
});

describe("an organization role given to a principal with a dashboard account is account authority", () => {
  it("refuses a narrow key promoting an account's principal; an agent's promotion stays a plain role change", async () => {
    const org = await newOrg();
    const ownerId = (await call("GET", "/v1/principal", { key: org.api_key })).json.data.principal_id;
    const narrow = await mintKey(org.api_key, {
      scopes: ["memberships:write"],
      max_trust: "low",
      principal_id: ownerId,
    });
    const human = await fullAccount(org.api_key, "member");
    const r = await call("POST", "/v1/memberships", {
      key: narrow.key,
      body: { principal_id: human.principalId, role: "owner" },
    });
    expectError(r, 403, "FORBIDDEN");
    expect(r.json.error.message).toMatch(/lacks scopes "\*"/);
    expect((await as(human.token, "GET", "/v1/principal")).json.data).toMatchObject({
      role: "member",
      max_trust: "high",
    });
    const agent = await mintKey(org.api_key, { scopes: ["events:read"] });
    expect(
      (
        await call("POST", "/v1/memberships", {
          key: narrow.key,
          body: { principal_id: agent.principal_id, role: "admin" },
        })
      ).status,
    ).toBe(201);
    // With "*" and verified the promotion goes through, and the account's sessions follow it.
    expect(
      (
        await call("POST", "/v1/memberships", {
          key: org.api_key,
          body: { principal_id: human.principalId, role: "owner" },
        })
      ).status,
    ).toBe(201);
    expect((await as(human.token, "GET", "/v1/principal")).json.data).toMatchObject({
      role: "owner",
      max_trust: "verified",
    });
  });

  it("keeps memberships at or below the caller's role, in the organization and in a workspace", async () => {
    const org = await newOrg();
    const admin = await mintKey(org.api_key, { scopes: ["*"] });
    expect(
      (
        await call("POST", "/v1/memberships", {
          key: org.api_key,
          body: { principal_id: admin.principal_id, role: "admin" },
        })
      ).status,
    ).toBe(201);
    const member = await mintKey(org.api_key, { scopes: ["*"] });
    const target = await mintKey(org.api_key, { scopes: ["events:read"] });
    const ws = (await call("POST", "/v1/workspaces", { key: org.api_key, body: { name: uniqueName("ws") } })).json.data
      .workspace_id;
    expectError(
      await call("POST", "/v1/memberships", {
        key: member.key,
        body: { principal_id: target.principal_id, role: "admin" },
      }),
      403,
      "FORBIDDEN",
    );
    expectError(
      await call("POST", "/v1/memberships", {
        key: member.key,
        body: { principal_id: target.principal_id, role: "admin", workspace_id: ws },
      }),
      403,
      "FORBIDDEN",
    );
    const above = await call("POST", "/v1/memberships", {
      key: admin.key,
      body: { principal_id: target.principal_id, role: "owner", workspace_id: ws },
    });
    expectError(above, 403, "FORBIDDEN");
    expect(
      (
        await call("POST", "/v1/memberships", {
          key: admin.key,
          body: { principal_id: target.principal_id, role: "admin", workspace_id: ws },
        })
      ).status,
    ).toBe(201);
  });
});

describe("removal and last-key revocation disable the dashboard accounts a principal created", () => {
  const withoutRequestId = (r: { text: string }) => r.text.replace(/req_[0-9a-f]{32}/g, "req_");
  const indexed = (token: string) =>
    env.INDEX_DB.prepare("SELECT count(*) AS n FROM credentials WHERE key_hash = ?").bind(sha256Hex(token)).first("n");
  const orgMembership = async (ownerKey: string, principalId: string) =>
    (await call("GET", "/v1/memberships?limit=200", { key: ownerKey })).json.data.memberships.find(
      (m: any) => m.principal_id === principalId && m.workspace_id === null,
    ).membership_id as string;

  /** The session is refused at once, and its account's right password answers exactly like a wrong one. */
  async function expectDisabled(acct: { username: string; password: string; token: string }) {
    expectError(await as(acct.token, "GET", "/v1/principal"), 401, "UNAUTHENTICATED");
    expect(await indexed(acct.token)).toBe(0);
    const right = await login(acct.username, acct.password);
    const wrong = await login(acct.username, "not the password at all");
    expectError(right, 401, "UNAUTHENTICATED");
    expect(withoutRequestId(right)).toBe(withoutRequestId(wrong));
  }

  it("removing an admin disables the accounts it created, directly and through its agents, in one transaction", async () => {
    const org = await newOrg();
    const x = await mintKey(org.api_key, { scopes: ["*"] });
    expect(
      (
        await call("POST", "/v1/memberships", {
          key: org.api_key,
          body: { principal_id: x.principal_id, role: "admin" },
        })
      ).status,
    ).toBe(201);
    const h = await fullAccount(x.key, "member");
    const agent = await mintKey(x.key, { scopes: ["*"] });
    const j = await fullAccount(agent.key, "member");
    const bystander = await fullAccount(org.api_key, "member");
    expect(await indexed(h.token)).toBe(1);

    const d = await call("DELETE", `/v1/memberships/${await orgMembership(org.api_key, x.principal_id)}`, {
      key: org.api_key,
    });
    expect(d.status, d.text).toBe(200);
    expect(d.json.data).toMatchObject({ keys_revoked: 2, accounts_disabled: 2 });
    for (const acct of [h, j]) await expectDisabled(acct);
    // An account the removed admin did not create is untouched.
    expect((await as(bystander.token, "GET", "/v1/principal")).status).toBe(200);
    expect((await login(bystander.username, bystander.password)).json.data.stage).toBe("full");
    const audit = await inOrg(org.org_id, (o) =>
      o.db.all<{ detail: string }>("SELECT detail FROM audit_log WHERE action = 'membership.removed'"),
    );
    expect(JSON.parse(audit[0].detail)).toMatchObject({ accounts_disabled: 2, keys_revoked: 2 });
  });

  it("revoking an agent's last key disables the accounts it created; revoking one of two keys does not", async () => {
    const org = await newOrg();
    const agent = await mintKey(org.api_key, { scopes: ["*"] });
    const j = await fullAccount(agent.key, "member");
    const spare = await mintKey(org.api_key, { scopes: ["events:read"], principal_id: agent.principal_id });
    const first = await call("DELETE", `/v1/keys/${agent.key_id}`, { key: org.api_key });
    expect(first.status, first.text).toBe(200);
    expect(first.json.data.cascade).toBeNull();
    expect((await as(j.token, "GET", "/v1/principal")).status).toBe(200);

    const last = await call("DELETE", `/v1/keys/${spare.key_id}`, { key: org.api_key });
    expect(last.status, last.text).toBe(200);
    expect(last.json.data.cascade).toMatchObject({ accounts_disabled: 1 });
    await expectDisabled(j);
  });

  it("removing an admin revokes the keys it minted for other principals, keys others minted for them stay", async () => {
    const org = await newOrg();
    const a = await mintKey(org.api_key, { scopes: ["*"] });
    expect(
      (
        await call("POST", "/v1/memberships", {
          key: org.api_key,
          body: { principal_id: a.principal_id, role: "admin" },
        })
      ).status,
    ).toBe(201);
    const agent = await mintKey(org.api_key, { scopes: ["*"] });
    const planted = await mintKey(a.key, { scopes: ["*"], principal_id: agent.principal_id });
    const ownersToo = await mintKey(org.api_key, { scopes: ["*"], principal_id: agent.principal_id });
    expect((await call("GET", "/v1/principal", { key: planted.key })).json.data.principal_id).toBe(agent.principal_id);

    const d = await call("DELETE", `/v1/memberships/${await orgMembership(org.api_key, a.principal_id)}`, {
      key: org.api_key,
    });
    expect(d.status, d.text).toBe(200);
    expect(d.json.data).toMatchObject({ keys_revoked: 2 });
    expectError(await call("GET", "/v1/principal", { key: planted.key }), 401, "UNAUTHENTICATED");
    expect(await indexed(planted.key)).toBe(0);
    for (const k of [agent, ownersToo]) expect((await call("GET", "/v1/principal", { key: k.key })).status).toBe(200);
    const rows = await inOrg(org.org_id, (o) =>
      o.db.all<{ key_id: string; created_by: string | null; status: string }>(
        "SELECT key_id, created_by, status FROM api_keys WHERE principal_id = ? ORDER BY created_at, key_id",
        agent.principal_id,
      ),
    );
    expect(Object.fromEntries(rows.map((r) => [r.key_id, [r.created_by, r.status]]))).toEqual({
      [agent.key_id]: [expect.stringMatching(/^prn_/), "active"],
      [planted.key_id]: [a.principal_id, "revoked"],
      [ownersToo.key_id]: [expect.stringMatching(/^prn_/), "active"],
    });
  });

  it("revoking the API key of a principal that keeps its own dashboard account leaves what it created alone", async () => {
    const org = await newOrg();
    const admin = await fullAccount(org.api_key, "admin");
    const created = await fullAccount(admin.token, "member");
    const key = await mintKey(org.api_key, { scopes: ["*"], principal_id: admin.principalId });
    const r = await call("DELETE", `/v1/keys/${key.key_id}`, { key: org.api_key });
    expect(r.json.data.cascade).toBeNull();
    expect((await as(created.token, "GET", "/v1/principal")).status).toBe(200);
  });
});

describe("passkeys and recovery codes are managed only from a dashboard session of the account", () => {
  const manage = (id: string, password: string): [string, string, unknown?][] => [
    ["GET", "/v1/operator-accounts/current/passkeys"],
    ["DELETE", `/v1/operator-accounts/current/passkeys/${id}`, { current_password: password }],
    ["POST", "/v1/operator-accounts/current/recovery-codes", { current_password: password }],
    ["POST", "/v1/operator-accounts/current/passkeys/options", {}],
  ];

  it("answers an API key of the account's principal 403 and changes nothing; a key without an account 404", async () => {
    const org = await newOrg();
    const admin = await fullAccount(org.api_key, "admin");
    const o = await as(admin.token, "POST", "/v1/operator-accounts/current/passkeys/options", {});
    const added = await as(admin.token, "POST", "/v1/operator-accounts/current/passkeys", {
      response: await new SoftAuthenticator().create(o.json.data.options),
    });
    expect(added.status, added.text).toBe(201);
    const narrow = await mintKey(admin.token, { scopes: ["events:read"], principal_id: admin.principalId });
    for (const [method, path, body] of manage(added.json.data.passkey_id, admin.password)) {
      const r = await call(method, path, { key: narrow.key, body });
      expectError(r, 403, "FORBIDDEN");
      expect(r.json.error.message, path).toMatch(/full dashboard session/);
    }
    expect((await as(admin.token, "GET", "/v1/operator-accounts/current/passkeys")).json.data.passkeys).toHaveLength(1);
    const agent = await mintKey(org.api_key, { scopes: ["*"] });
    for (const [method, path, body] of manage(added.json.data.passkey_id, admin.password))
      expectError(await call(method, path, { key: agent.key, body }), 404, "NOT_FOUND");
    // The password change still takes any valid credential of the account (SPEC).
    expect(
      (
        await call("PATCH", "/v1/operator-accounts/current/password", {
          key: narrow.key,
          body: { current_password: admin.password, new_password: "a different long password" },
        })
      ).status,
    ).toBe(200);
  });

  it("needs current_password to remove a passkey that is not the last one", async () => {
    const org = await newOrg();
    const acct = await fullAccount(org.api_key);
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const o = await as(acct.token, "POST", "/v1/operator-accounts/current/passkeys/options", {});
      ids.push(
        (
          await as(acct.token, "POST", "/v1/operator-accounts/current/passkeys", {
            response: await new SoftAuthenticator().create(o.json.data.options),
          })
        ).json.data.passkey_id,
      );
    }
    const path = `/v1/operator-accounts/current/passkeys/${ids[0]}`;
    const missing = await as(acct.token, "DELETE", path);
    expectError(missing, 400, "VALIDATION_ERROR");
    expect(missing.json.error.message).toContain("current_password");
    expectError(await as(acct.token, "DELETE", path, { current_password: "wrong password!" }), 403, "FORBIDDEN");
    expect((await as(acct.token, "GET", "/v1/operator-accounts/current/passkeys")).json.data.passkeys).toHaveLength(2);
    expect((await as(acct.token, "DELETE", path, { current_password: acct.password })).status).toBe(200);
  });
});

describe("parallel login attempts on one username queue behind each other, per client", () => {
  /** One login through the Worker from `client` (its cf-connecting-ip; none: the unknown client). */
  const attempt = async (username: string, password: string, waits: number[], moveClock: boolean, client?: string) => {
    const r = await handle(
      new Request("http://svc.test/v1/dashboard-sessions", {
        method: "POST",
        headers: { "content-type": "application/json", ...(client ? { "cf-connecting-ip": client } : {}) },
        body: JSON.stringify({ username, password }),
      }),
      env,
      {
        wait: async (ms) => {
          waits.push(ms);
          if (moveClock) clock.advance(ms);
        },
      },
    );
    const text = await r.text();
    return {
      status: r.status,
      stage: r.status === 201 ? (JSON.parse(text).data.stage as string) : undefined,
      text: text.replace(/req_[0-9a-f]{32}/g, "req_"),
    };
  };
  const failures = (username: string, client = UNKNOWN_CLIENT) =>
    env.INDEX_DB.prepare("SELECT failures FROM login_failures WHERE username_hash = ? AND client_hash = ?")
      .bind(sha256Hex(username), sha256Hex(client))
      .first<number>("failures");

  it("verifies one guess per maximum delay however many connections, for known and unknown names alike", async () => {
    const org = await newOrg();
    const acct = await fullAccount(org.api_key);
    const loginFailed = () =>
      inOrg(
        org.org_id,
        (o) =>
          o.db.first<{ n: number }>(
            "SELECT count(*) AS n FROM audit_log WHERE action = 'dashboard_session.login_failed'",
          )!.n,
      );
    const seen: Record<string, unknown> = {};
    for (const name of [acct.username, uniqueName("ghost")]) {
      for (let i = 0; i < 8; i++) await attempt(name, "wrong password!", [], true);
      expect(await failures(name)).toBe(8);
      const audited = await loginFailed();
      const waits: number[] = [];
      const answers = await Promise.all(
        Array.from({ length: 6 }, () => attempt(name, "wrong password!", waits, false)),
      );
      for (const a of answers) expect(a).toEqual(answers[0]);
      expect(answers[0].status).toBe(401);
      // One attempt took the slot 30 s ahead and was verified; the others found the queue full.
      const verified = { waits, failures: await failures(name), audited: (await loginFailed()) - audited };
      // Half a minute later the next slot is free again: one more verification.
      clock.advance(30_000);
      const later: number[] = [];
      await Promise.all(Array.from({ length: 3 }, () => attempt(name, "wrong password!", later, false)));
      seen[name === acct.username ? "known" : "unknown"] = { ...verified, later };
      clock.reset();
    }
    expect(seen.known).toEqual({ waits: [30_000], failures: 9, audited: 1, later: [30_000] });
    expect(seen.unknown).toEqual({ waits: [30_000], failures: 9, audited: 0, later: [30_000] });
  });

  it("a stranger's failures never delay or refuse the owner's login from another client", async () => {
    const org = await newOrg();
    const acct = await fullAccount(org.api_key);
    const [attacker, owner] = ["203.0.113.7", "198.51.100.20"];
    for (let i = 0; i < 8; i++) await attempt(acct.username, "wrong password!", [], true, attacker);
    // The attacker's queue is full: its parallel guesses get one verification 30 s ahead, the rest nothing.
    const attackerWaits: number[] = [];
    await Promise.all(
      Array.from({ length: 4 }, () => attempt(acct.username, "wrong password!", attackerWaits, false, attacker)),
    );
    expect(attackerWaits).toEqual([30_000]);
    // The owner, from elsewhere, at the same moment: verified at once, full session.
    const ownerWaits: number[] = [];
    const ok = await attempt(acct.username, acct.password, ownerWaits, false, owner);
    expect({ status: ok.status, stage: ok.stage, waits: ownerWaits }).toEqual({
      status: 201,
      stage: "full",
      waits: [],
    });
    expect(await failures(acct.username, owner)).toBeNull();
    // The owner's success cleared only the owner's queue: the attacker still waits behind its own.
    expect(await failures(acct.username, attacker)).toBe(9);
    const stillQueued: number[] = [];
    expect((await attempt(acct.username, acct.password, stillQueued, false, attacker)).status).toBe(401);
    expect(stillQueued).toEqual([]);
  });

  it("one client's parallel guesses still queue, whichever addresses of its IPv6 /64 they come from", async () => {
    const name = uniqueName("ghost");
    for (let i = 0; i < 8; i++) await attempt(name, "wrong password!", [], true, "2001:db8:7:1::1");
    const waits: number[] = [];
    const addresses = ["2001:0db8:0007:0001:ffff::2", "2001:db8:7:1:a:b:c:d", "2001:db8:7:1::4", "2001:DB8:7:1::5"];
    await Promise.all(addresses.map((a) => attempt(name, "wrong password!", waits, false, a)));
    // One of them took the slot 30 s ahead and was verified; the others found the queue full.
    expect(waits).toEqual([30_000]);
    expect(await failures(name, "2001:db8:7:1::/64")).toBe(9);
    // Another /64, an IPv4 client and the unknown client each start their own queue.
    for (const other of ["2001:db8:7:2::1", "192.0.2.1", undefined]) {
      const fresh: number[] = [];
      expect((await attempt(name, "wrong password!", fresh, false, other)).status).toBe(401);
      expect(fresh, other).toEqual([]);
    }
    expect([
      loginClient(undefined),
      loginClient(" "),
      loginClient("192.0.2.1"),
      loginClient("::ffff:192.0.2.1"),
      loginClient("2001:DB8::1%eth0"),
      loginClient("2001:db8::"),
    ]).toEqual([UNKNOWN_CLIENT, UNKNOWN_CLIENT, "192.0.2.1", "192.0.2.1", "2001:db8:0:0::/64", "2001:db8:0:0::/64"]);
  });
});

describe("what account creation tells about usernames elsewhere", () => {
  it("answers a credential that may not create the account the same 403 whether the name is taken or free", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const narrow = await mintKey(org.api_key, { scopes: ["keys:manage"] });
    const probe = (username: string) =>
      call("POST", "/v1/operator-accounts", { key: narrow.key, body: { username, role: "member" } });
    const taken = await probe(other.owner_username);
    const free = await probe(uniqueName("free"));
    expectError(taken, 403, "FORBIDDEN");
    expect(taken.json.error).toEqual(free.json.error);
  });

  it("audits every taken answer to a credential that may create accounts", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const r = await call("POST", "/v1/operator-accounts", {
      key: org.api_key,
      body: { username: other.owner_username, role: "member" },
    });
    expectError(r, 409, "CONFLICT");
    const audit = await inOrg(org.org_id, (o) =>
      o.db.all<{ actor_id: string; detail: string }>(
        "SELECT actor_id, detail FROM audit_log WHERE action = 'operator_account.username_taken'",
      ),
    );
    expect(audit).toHaveLength(1);
    expect(JSON.parse(audit[0].detail)).toEqual({ username: other.owner_username });
  });
});

describe("workspaces and memberships are listed to their members", () => {
  it("shows a member only its workspaces, their memberships and its own; owners and admins everything", async () => {
    const org = await newOrg();
    const ws = async (name: string) =>
      (await call("POST", "/v1/workspaces", { key: org.api_key, body: { name } })).json.data.workspace_id as string;
    const [mineWs, otherWs] = [await ws(uniqueName("mine")), await ws(uniqueName("other"))];
    const member = await mintKey(org.api_key, { scopes: ["*"] });
    const stranger = await mintKey(org.api_key, { scopes: ["*"] });
    const admin = await mintKey(org.api_key, { scopes: ["*"] });
    const join = (principal_id: string, role: string, workspace_id?: string) =>
      call("POST", "/v1/memberships", {
        key: org.api_key,
        body: { principal_id, role, ...(workspace_id ? { workspace_id } : {}) },
      });
    const memberInWs = (await join(member.principal_id, "reader", mineWs)).json.data.membership_id;
    const strangerInWs = (await join(stranger.principal_id, "member", otherWs)).json.data.membership_id;
    await join(admin.principal_id, "admin");

    const names = async (key: string) =>
      (await call("GET", "/v1/workspaces", { key })).json.data.workspaces.map((w: any) => w.workspace_id);
    expect(await names(member.key)).toEqual([mineWs]);
    expect(await names(org.api_key)).toEqual([mineWs, otherWs]);
    expect(await names(admin.key)).toEqual([mineWs, otherWs]);

    const listed = (await call("GET", "/v1/memberships?limit=200", { key: member.key })).json.data.memberships;
    const ownerId = (await call("GET", "/v1/principal", { key: org.api_key })).json.data.principal_id;
    expect(listed.map((m: any) => [m.principal_id, m.workspace_id]).sort()).toEqual(
      [
        [member.principal_id, null],
        [member.principal_id, mineWs],
        [ownerId, mineWs],
      ].sort(),
    );
    expect(JSON.stringify(listed)).not.toContain(strangerInWs);
    expect((await call("GET", "/v1/memberships?limit=200", { key: admin.key })).text).toContain(strangerInWs);
    expect((await call("GET", `/v1/memberships?workspace_id=${mineWs}`, { key: member.key })).text).toContain(
      memberInWs,
    );

    // A workspace the member is not in lists exactly like a missing one.
    const strip = (r: { text: string }) => r.text.replace(/req_[0-9a-f]{32}/g, "req_");
    const invisible = await call("GET", `/v1/memberships?workspace_id=${otherWs}`, { key: member.key });
    const missing = await call("GET", `/v1/memberships?workspace_id=wsp_${"0".repeat(32)}`, { key: member.key });
    expect(invisible.status).toBe(200);
    expect(strip(invisible)).toBe(strip(missing));
  });
});
