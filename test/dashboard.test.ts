// Dashboard accounts, sessions, passkeys and recovery codes (SPEC "Dashboard accounts", DESIGN part 2).
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { clock } from "../src/http/clock";
import { handle } from "../src/worker";
import { constantTimeEqual, hashPassword, PBKDF2_ITERATIONS, verifyPassword } from "../src/domains/identity/passwords";
import { UNKNOWN_CLIENT, delayMsAfter } from "../src/domains/dashboard/throttle";
import { sha256Hex } from "../src/auth/credentials";
import {
  appendOk,
  call,
  type CallResult,
  expectError,
  fullAccount,
  inOrg,
  login,
  mintKey,
  newAccount,
  newOrg,
  obs,
  uniqueName,
} from "./helpers";
import { type Attestation, SoftAuthenticator } from "./authenticator.mjs";

const as = (token: string, method: string, path: string, body?: unknown) => call(method, path, { key: token, body });
async function enroll(token: string, fmt: Attestation = "none", auth = new SoftAuthenticator()) {
  const o = await as(token, "POST", "/v1/operator-accounts/current/passkeys/options", {});
  expect(o.status, o.text).toBe(200);
  const r = await as(token, "POST", "/v1/operator-accounts/current/passkeys", {
    response: await auth.create(o.json.data.options, fmt),
    name: `key ${fmt}`,
  });
  expect(r.status, r.text).toBe(201);
  return { auth, data: r.json.data };
}

/** A staged session for an account that has a passkey. */
async function staged(username: string, password: string) {
  const r = await login(username, password);
  expect(r.json.data.stage, r.text).toBe("staged");
  return r.json.data.session_token as string;
}

const assertionOptions = async (token: string) => {
  const o = await as(token, "POST", "/v1/dashboard-sessions/current/passkey-options", {});
  expect(o.status, o.text).toBe(200);
  return o.json.data.options as { challenge: string; rpId: string };
};

const withoutRequestId = (r: CallResult) => r.text.replace(/req_[0-9a-f]{32}/g, "req_");

describe("password hashing", () => {
  it("pins PBKDF2 at the production Workers maximum and stores a self-describing peppered form", async () => {
    expect(PBKDF2_ITERATIONS).toBeLessThanOrEqual(100_000);
    const stored = await hashPassword("correct horse battery", "pepper-1");
    expect(stored).toMatch(/^pbkdf2-sha256\$100000\$[0-9a-f]{32}\$[0-9a-f]{64}$/);
    const row = { password_hash: stored, password_salt: "" };
    expect(await verifyPassword("correct horse battery", row, "pepper-1")).toEqual({ ok: true, upgrade: false });
    expect((await verifyPassword("correct horse batterY", row, "pepper-1")).ok).toBe(false);
    // The pepper takes part: the same password under another pepper does not verify.
    expect((await verifyPassword("correct horse battery", row, "pepper-2")).ok).toBe(false);
    // A stored form with fewer iterations verifies and asks to be upgraded.
    const weaker = stored.replace("$100000$", "$1000$");
    const salt = stored.split("$")[2];
    const rehashed = weaker.split("$").slice(0, 3).join("$");
    const key = await crypto.subtle.importKey(
      "raw",
      new Uint8Array(
        await crypto.subtle.sign(
          "HMAC",
          await crypto.subtle.importKey(
            "raw",
            new TextEncoder().encode("pepper-1"),
            { name: "HMAC", hash: "SHA-256" },
            false,
            ["sign"],
          ),
          new TextEncoder().encode("pw"),
        ),
      ),
      "PBKDF2",
      false,
      ["deriveBits"],
    );
    const bits = await crypto.subtle.deriveBits(
      {
        name: "PBKDF2",
        hash: "SHA-256",
        salt: Uint8Array.from(salt.match(/../g)!.map((h) => parseInt(h, 16))),
        iterations: 1000,
      },
      key,
      256,
    );
    const hex = [...new Uint8Array(bits)].map((b) => b.toString(16).padStart(2, "0")).join("");
    expect(await verifyPassword("pw", { password_hash: `${rehashed}$${hex}`, password_salt: "" }, "pepper-1")).toEqual({
      ok: true,
      upgrade: true,
    });
    expect(constantTimeEqual("abc", "abc")).toBe(true);
    expect(constantTimeEqual("abc", "abd")).toBe(false);
    expect(constantTimeEqual("abc", "abcd")).toBe(false);
  });
});

describe("accounts", () => {
  it("bootstraps the owner with a temporary password whose login can only replace it", async () => {
    const org = await newOrg();
    const first = await login(org.owner_username, org.temporary_password);
    expect(first.status, first.text).toBe(201);
    expect(first.json.data).toMatchObject({
      stage: "password_change",
      session_id: expect.stringMatching(/^sess_[0-9a-f]{32}$/),
    });
    expect(first.json.data.session_token).toMatch(/^svc_sk_[0-9a-f]{64}$/);
    const token = first.json.data.session_token;
    const gated = await as(token, "GET", "/v1/principal");
    expectError(gated, 403, "FORBIDDEN");
    expect(gated.json.error.message).toMatch(/temporary password/);
    const password = "a brand new password";
    expect(
      (
        await as(token, "PATCH", "/v1/operator-accounts/current/password", {
          current_password: org.temporary_password,
          new_password: password,
        })
      ).status,
    ).toBe(200);
    expectError(await as(token, "GET", "/v1/principal"), 401, "UNAUTHENTICATED");
    const full = await login(org.owner_username, password);
    expect(full.json.data.stage).toBe("full");
    const p = await as(full.json.data.session_token, "GET", "/v1/principal");
    expect(p.json.data).toMatchObject({
      role: "owner",
      max_trust: "verified",
      scopes: "*",
      key_id: full.json.data.session_id,
    });
  });

  it("creates accounts with validation, role limits, keys:manage and a deployment-wide unique username", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const acct = await newAccount(org.api_key, "admin");
    expect(acct.data).toMatchObject({
      username: acct.username,
      role: "admin",
      has_passkey: false,
      display_name: acct.username,
      account_id: expect.stringMatching(/^acct_[0-9a-f]{32}$/),
      principal_id: expect.stringMatching(/^prn_/),
    });
    expect(acct.password.length).toBeGreaterThanOrEqual(12);
    const principals = await call("GET", "/v1/principals", { key: org.api_key });
    expect(principals.json.data.principals.find((p: any) => p.principal_id === acct.data.principal_id)).toMatchObject({
      kind: "human",
      role: "admin",
    });
    for (const body of [
      { username: "ab", role: "member" },
      { username: "Upper", role: "member" },
      { username: "-lead", role: "member" },
      { username: "x".repeat(65), role: "member" },
      { username: uniqueName(), role: "boss" },
      { username: uniqueName() },
      { role: "member" },
      { username: uniqueName(), role: "member", extra: 1 },
    ]) {
      const r = await call("POST", "/v1/operator-accounts", { key: org.api_key, body });
      expectError(r, 400, "VALIDATION_ERROR");
    }
    const bad = await call("POST", "/v1/operator-accounts", {
      key: org.api_key,
      body: { username: uniqueName(), role: "boss" },
    });
    expect(bad.json.error.message).toMatch(/role.*owner.*admin.*member.*reader/);
    // Taken: in this organization and in another one alike.
    expectError(
      await call("POST", "/v1/operator-accounts", {
        key: org.api_key,
        body: { username: acct.username, role: "member" },
      }),
      409,
      "CONFLICT",
    );
    expectError(
      await call("POST", "/v1/operator-accounts", {
        key: other.api_key,
        body: { username: acct.username, role: "member" },
      }),
      409,
      "CONFLICT",
    );
    expectError(
      await call("POST", "/v1/operator-accounts", {
        key: other.api_key,
        body: { username: org.owner_username, role: "member" },
      }),
      409,
      "CONFLICT",
    );
    // Role limits: an admin cannot create an owner; nobody above their own role.
    const admin = await fullAccount(org.api_key, "admin");
    expectError(
      await as(admin.token, "POST", "/v1/operator-accounts", { username: uniqueName(), role: "owner" }),
      403,
      "FORBIDDEN",
    );
    expect(
      (await as(admin.token, "POST", "/v1/operator-accounts", { username: uniqueName(), role: "admin" })).status,
    ).toBe(201);
    const member = await mintKey(org.api_key, { scopes: ["*"] });
    expect(
      (
        await call("POST", "/v1/operator-accounts", {
          key: member.key,
          body: { username: uniqueName(), role: "member" },
        })
      ).status,
    ).toBe(201);
    expectError(
      await call("POST", "/v1/operator-accounts", { key: member.key, body: { username: uniqueName(), role: "admin" } }),
      403,
      "FORBIDDEN",
    );
    const noScope = await mintKey(org.api_key, { scopes: ["events:read"] });
    const r = await call("POST", "/v1/operator-accounts", {
      key: noScope.key,
      body: { username: uniqueName(), role: "member" },
    });
    expectError(r, 403, "FORBIDDEN");
    expect(r.json.error.message).toContain("keys:manage");
  });

  it("answers 404 for /current when the caller's principal has no account", async () => {
    const org = await newOrg();
    const agent = await mintKey(org.api_key, { scopes: ["*"] });
    for (const [method, path, body] of [
      ["GET", "/v1/operator-accounts/current/passkeys"],
      ["POST", "/v1/operator-accounts/current/recovery-codes", { current_password: "whatever-it-is" }],
      [
        "PATCH",
        "/v1/operator-accounts/current/password",
        { current_password: "x", new_password: "long enough password" },
      ],
      ["DELETE", "/v1/dashboard-sessions/current"],
    ] as [string, string, unknown?][])
      expectError(await call(method, path, { key: agent.key, body }), 404, "NOT_FOUND");
    // The bootstrap owner's API key belongs to a principal with an account: its passkeys take a session (403).
    expectError(await call("GET", "/v1/operator-accounts/current/passkeys", { key: org.api_key }), 403, "FORBIDDEN");
  });
});

describe("password login", () => {
  it("answers unknown accounts and wrong passwords byte-identically apart from the request id", async () => {
    const org = await newOrg();
    const acct = await fullAccount(org.api_key);
    const wrong = await login(acct.username, "not-the-password-at-all");
    const unknown = await login(uniqueName("nobody"), "not-the-password-at-all");
    const malformedName = await login("NOT A NAME", "not-the-password-at-all");
    expectError(wrong, 401, "UNAUTHENTICATED");
    expect(wrong.json.error.message).toBe("Invalid username or password.");
    expect(withoutRequestId(unknown)).toBe(withoutRequestId(wrong));
    expect(withoutRequestId(malformedName)).toBe(withoutRequestId(wrong));
    expect([...unknown.headers].filter(([h]) => h !== "x-request-id")).toEqual(
      [...wrong.headers].filter(([h]) => h !== "x-request-id"),
    );
  });

  it("takes no bearer and validates its body", async () => {
    const org = await newOrg();
    const acct = await newAccount(org.api_key);
    expectError(
      await login(acct.username, acct.password, { authorization: `Bearer ${org.api_key}` }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(await login(acct.username, acct.password, { authorization: "Basic abc" }), 400, "VALIDATION_ERROR");
    expectError(
      await call("POST", "/v1/dashboard-sessions", { body: { username: acct.username } }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(
      await call("POST", "/v1/dashboard-sessions", { body: { username: acct.username, password: 5 } }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(await call("POST", "/v1/dashboard-sessions", { raw: "{nope" }), 400, "VALIDATION_ERROR");
    expectError(await call("GET", "/v1/dashboard-sessions"), 405, "METHOD_NOT_ALLOWED");
  });

  it("gives each stage its lifetime from creation, without sliding", async () => {
    const org = await newOrg();
    const acct = await newAccount(org.api_key);
    const first = (await login(acct.username, acct.password)).json.data;
    expect(Date.parse(first.expires_at) - clock.nowMs()).toBeGreaterThan(14 * 60_000);
    clock.advance(15 * 60_000 + 1000);
    expectError(await as(first.session_token, "DELETE", "/v1/dashboard-sessions/current"), 401, "UNAUTHENTICATED");
    clock.reset();
    const full = await fullAccount(org.api_key);
    clock.advance(59 * 60_000);
    expect((await as(full.token, "GET", "/v1/principal")).status).toBe(200);
    clock.advance(60_000 + 1000);
    expectError(await as(full.token, "GET", "/v1/principal"), 401, "UNAUTHENTICATED");
    clock.reset();
    await enroll(full.token);
    const st = await staged(full.username, full.password);
    clock.advance(5 * 60_000 + 1000);
    expectError(await as(st, "POST", "/v1/dashboard-sessions/current/passkey-options", {}), 401, "UNAUTHENTICATED");
  });

  it("revokes every session of the account on a password change, the calling one too", async () => {
    const org = await newOrg();
    const acct = await fullAccount(org.api_key);
    const second = (await login(acct.username, acct.password)).json.data.session_token;
    const path = "/v1/operator-accounts/current/password";
    expectError(
      await as(acct.token, "PATCH", path, {
        current_password: "wrong password here",
        new_password: "another long password",
      }),
      403,
      "FORBIDDEN",
    );
    expectError(
      await as(acct.token, "PATCH", path, { new_password: "another long password" }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(
      await as(acct.token, "PATCH", path, { current_password: acct.password, new_password: "short" }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(
      await as(acct.token, "PATCH", path, { current_password: acct.password, new_password: acct.password }),
      400,
      "VALIDATION_ERROR",
    );
    const r = await as(acct.token, "PATCH", path, {
      current_password: acct.password,
      new_password: "another long password",
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.data.password_changed_at).toBeTruthy();
    for (const t of [acct.token, second]) expectError(await as(t, "GET", "/v1/principal"), 401, "UNAUTHENTICATED");
    expectError(await login(acct.username, acct.password), 401, "UNAUTHENTICATED");
    expect((await login(acct.username, "another long password")).json.data.stage).toBe("full");
    // Another login never revokes the account's other sessions.
    const a = (await login(acct.username, "another long password")).json.data.session_token;
    await login(acct.username, "another long password");
    expect((await as(a, "GET", "/v1/principal")).status).toBe(200);
  });

  it("logs out only the calling session", async () => {
    const org = await newOrg();
    const acct = await fullAccount(org.api_key);
    const other = (await login(acct.username, acct.password)).json.data.session_token;
    const r = await as(acct.token, "DELETE", "/v1/dashboard-sessions/current");
    expect(r.status, r.text).toBe(200);
    expect(r.json.data.session_id).toMatch(/^sess_/);
    expectError(await as(acct.token, "GET", "/v1/principal"), 401, "UNAUTHENTICATED");
    expect((await as(other, "GET", "/v1/principal")).status).toBe(200);
    expectError(await call("DELETE", "/v1/dashboard-sessions/current", { key: org.api_key }), 404, "NOT_FOUND");
  });
});

describe("stage gates", () => {
  it("lets each stage call only its routes, against product routes too", async () => {
    const org = await newOrg();
    const temp = await newAccount(org.api_key);
    const pwChange = (await login(temp.username, temp.password)).json.data.session_token;
    const full = await fullAccount(org.api_key);
    await enroll(full.token);
    const st = await staged(full.username, full.password);
    const product: [string, string, unknown?][] = [
      ["GET", "/v1/principal"],
      ["POST", "/v1/observations", obs("s", "x")],
      ["GET", "/v1/memories"],
      ["POST", "/v1/keys", { label: "k", scopes: ["events:read"] }],
      ["POST", "/mcp", { jsonrpc: "2.0", id: 1, method: "tools/list" }],
      ["GET", "/v1/operator-accounts/current/passkeys"],
      ["POST", "/v1/operator-accounts/current/recovery-codes", { current_password: full.password }],
    ];
    for (const [method, path, body] of product) {
      const a = await as(pwChange, method, path, body);
      expectError(a, 403, "FORBIDDEN");
      expect(a.json.error.message).toMatch(/temporary password/);
      const b = await as(st, method, path, body);
      expectError(b, 403, "FORBIDDEN");
      expect(b.json.error.message).toMatch(/second factor/);
    }
    // password_change: not the second-factor routes nor enrollment; staged: not the password change nor enrollment.
    for (const [method, path] of [
      ["POST", "/v1/dashboard-sessions/current/passkey-options"],
      ["POST", "/v1/dashboard-sessions/current/recovery-code"],
      ["POST", "/v1/operator-accounts/current/passkeys/options"],
    ])
      expectError(await as(pwChange, method, path, { code: "x" }), 403, "FORBIDDEN");
    expectError(
      await as(st, "PATCH", "/v1/operator-accounts/current/password", {
        current_password: full.password,
        new_password: "whatever long enough",
      }),
      403,
      "FORBIDDEN",
    );
    expectError(await as(st, "POST", "/v1/operator-accounts/current/passkeys/options", {}), 403, "FORBIDDEN");
    // full: product routes yes, second-factor routes no; an API key cannot enroll passkeys.
    expect((await as(full.token, "POST", "/v1/observations", obs("s", "full session write"))).status).toBe(201);
    expectError(await as(full.token, "POST", "/v1/dashboard-sessions/current/passkey-options", {}), 403, "FORBIDDEN");
    expectError(
      await as(full.token, "POST", "/v1/dashboard-sessions/current/recovery-code", { code: "x" }),
      403,
      "FORBIDDEN",
    );
    const keyTry = await call("POST", "/v1/operator-accounts/current/passkeys/options", { key: org.api_key, body: {} });
    expectError(keyTry, 403, "FORBIDDEN");
    expect(keyTry.json.error.message).toMatch(/full dashboard session/);
    expectError(
      await call("POST", "/v1/dashboard-sessions/current/recovery-code", { key: org.api_key, body: { code: "x" } }),
      403,
      "FORBIDDEN",
    );
    // Every stage may log out.
    for (const t of [pwChange, st]) expect((await as(t, "DELETE", "/v1/dashboard-sessions/current")).status).toBe(200);
  });

  it("gives a full session its principal's role: a reader reads, cannot write, and still manages its own account", async () => {
    const org = await newOrg();
    await appendOk(org.api_key, obs("s", "team note"));
    const reader = await fullAccount(org.api_key, "reader");
    const p = await as(reader.token, "GET", "/v1/principal");
    expect(p.json.data).toMatchObject({ role: "reader", max_trust: "high" });
    expect((await as(reader.token, "GET", "/v1/events")).status).toBe(200);
    expectError(await as(reader.token, "POST", "/v1/observations", obs("s", "x")), 403, "FORBIDDEN");
    expectError(
      await as(reader.token, "POST", "/v1/operator-accounts", { username: uniqueName(), role: "reader" }),
      403,
      "FORBIDDEN",
    );
    await enroll(reader.token);
    expect(
      (
        await as(reader.token, "POST", "/v1/operator-accounts/current/recovery-codes", {
          current_password: reader.password,
        })
      ).status,
    ).toBe(201);
  });
});

describe("passkeys", () => {
  it("enrolls with none and packed attestation; the first enrollment returns eight recovery codes once; the list shows no secrets", async () => {
    const org = await newOrg();
    const acct = await fullAccount(org.api_key);
    const opts = await as(acct.token, "POST", "/v1/operator-accounts/current/passkeys/options", {});
    expect(opts.json.data.options).toMatchObject({
      rp: { id: "localhost" },
      attestation: "none",
      pubKeyCredParams: [
        { alg: -7, type: "public-key" },
        { alg: -257, type: "public-key" },
      ],
    });
    const first = await enroll(acct.token, "none");
    expect(first.data.recovery_codes).toHaveLength(8);
    for (const c of first.data.recovery_codes) expect(c).toMatch(/^[a-z2-7]{5}-[a-z2-7]{5}$/);
    expect(new Set(first.data.recovery_codes).size).toBe(8);
    expect(first.data).toMatchObject({
      passkey_id: expect.stringMatching(/^pk_[0-9a-f]{32}$/),
      name: "key none",
      transports: ["internal"],
      last_used_at: null,
    });
    const second = await enroll(acct.token, "packed");
    expect(second.data.recovery_codes).toBeUndefined();
    const list = await as(acct.token, "GET", "/v1/operator-accounts/current/passkeys");
    expect(list.json.data.passkeys.map((p: any) => p.passkey_id)).toEqual([
      first.data.passkey_id,
      second.data.passkey_id,
    ]);
    expect(list.text).not.toMatch(/public_?key|counter|credential/i);
    // The excludeCredentials list carries the registered ones.
    const again = await as(acct.token, "POST", "/v1/operator-accounts/current/passkeys/options", {});
    expect(again.json.data.options.excludeCredentials).toHaveLength(2);
  });

  it("finishes a staged login with an assertion and moves the counter; rejects a counter regression", async () => {
    const org = await newOrg();
    const acct = await fullAccount(org.api_key);
    const { auth, data } = await enroll(acct.token, "packed");
    const st = await staged(acct.username, acct.password);
    const options = await assertionOptions(st);
    expect(options.rpId).toBe("localhost");
    const done = await as(st, "POST", "/v1/dashboard-sessions/current/passkey", { response: await auth.get(options) });
    expect(done.status, done.text).toBe(201);
    expect(done.json.data).toMatchObject({ stage: "full", account_id: acct.accountId });
    expectError(await as(st, "GET", "/v1/operator-accounts/current/passkeys"), 401, "UNAUTHENTICATED");
    const list = await as(done.json.data.session_token, "GET", "/v1/operator-accounts/current/passkeys");
    expect(list.json.data.passkeys[0]).toMatchObject({ passkey_id: data.passkey_id, last_used_at: expect.any(String) });
    // A cloned authenticator whose counter is behind the stored one is refused.
    const st2 = await staged(acct.username, acct.password);
    auth.counter = 0;
    expectError(
      await as(st2, "POST", "/v1/dashboard-sessions/current/passkey", {
        response: await auth.get(await assertionOptions(st2)),
      }),
      400,
      "VALIDATION_ERROR",
    );
    auth.counter = 10;
    expect(
      (
        await as(st2, "POST", "/v1/dashboard-sessions/current/passkey", {
          response: await auth.get(await assertionOptions(st2)),
        })
      ).status,
    ).toBe(201);
  });

  it("refuses a wrong origin, a wrong RP ID, an unknown credential and a bad signature; the staged session stays usable", async () => {
    const org = await newOrg();
    const acct = await fullAccount(org.api_key);
    const { auth } = await enroll(acct.token);
    const st = await staged(acct.username, acct.password);
    const submit = async (response: unknown) => as(st, "POST", "/v1/dashboard-sessions/current/passkey", { response });
    auth.origin = "http://evil.example:8787";
    expectError(await submit(await auth.get(await assertionOptions(st))), 400, "VALIDATION_ERROR");
    auth.origin = "http://localhost:8787";
    auth.rpId = "evil.example";
    expectError(await submit(await auth.get(await assertionOptions(st))), 400, "VALIDATION_ERROR");
    auth.rpId = "localhost";
    const stranger = new SoftAuthenticator();
    await stranger.create({ challenge: "bm90LXJlZ2lzdGVyZWQ" });
    expectError(await submit(await stranger.get(await assertionOptions(st))), 400, "VALIDATION_ERROR");
    const forged = await auth.get(await assertionOptions(st));
    forged.response.signature = forged.response.signature.slice(0, -4) + "AAAA";
    expectError(await submit(forged), 400, "VALIDATION_ERROR");
    expect((await submit(await auth.get(await assertionOptions(st)))).status).toBe(201);
    // Registration is held to the same origin and RP ID.
    const reg = new SoftAuthenticator("http://localhost:9999");
    const o = await as(acct.token, "POST", "/v1/operator-accounts/current/passkeys/options", {});
    expectError(
      await as(acct.token, "POST", "/v1/operator-accounts/current/passkeys", {
        response: await reg.create(o.json.data.options),
      }),
      400,
      "VALIDATION_ERROR",
    );
    const reg2 = new SoftAuthenticator("http://localhost:8787", "example.com");
    const o2 = await as(acct.token, "POST", "/v1/operator-accounts/current/passkeys/options", {});
    expectError(
      await as(acct.token, "POST", "/v1/operator-accounts/current/passkeys", {
        response: await reg2.create(o2.json.data.options),
      }),
      400,
      "VALIDATION_ERROR",
    );
  });

  it("binds challenges to one use, one session, one purpose and five minutes", async () => {
    const org = await newOrg();
    const acct = await fullAccount(org.api_key);
    // Replay: the same registration response twice on the same session.
    const o = await as(acct.token, "POST", "/v1/operator-accounts/current/passkeys/options", {});
    const auth = new SoftAuthenticator();
    const response = await auth.create(o.json.data.options);
    expect((await as(acct.token, "POST", "/v1/operator-accounts/current/passkeys", { response })).status).toBe(201);
    const replay = await as(acct.token, "POST", "/v1/operator-accounts/current/passkeys", { response });
    expectError(replay, 400, "VALIDATION_ERROR");
    // Expired: a registration challenge older than five minutes.
    const late = await as(acct.token, "POST", "/v1/operator-accounts/current/passkeys/options", {});
    clock.advance(5 * 60_000 + 1000);
    expectError(
      await as(acct.token, "POST", "/v1/operator-accounts/current/passkeys", {
        response: await new SoftAuthenticator().create(late.json.data.options),
      }),
      400,
      "VALIDATION_ERROR",
    );
    clock.reset();
    // Another session: options issued to s1 cannot be answered through s2; s1 can still use them once.
    const s1 = await staged(acct.username, acct.password);
    const s2 = await staged(acct.username, acct.password);
    const assertion = await auth.get(await assertionOptions(s1));
    expectError(
      await as(s2, "POST", "/v1/dashboard-sessions/current/passkey", { response: assertion }),
      400,
      "VALIDATION_ERROR",
    );
    expect((await as(s1, "POST", "/v1/dashboard-sessions/current/passkey", { response: assertion })).status).toBe(201);
    // Replayed assertion: the same response again, through a fresh staged session.
    const s3 = await staged(acct.username, acct.password);
    expectError(
      await as(s3, "POST", "/v1/dashboard-sessions/current/passkey", { response: assertion }),
      400,
      "VALIDATION_ERROR",
    );
    // Another purpose: a challenge of this very session issued for registration does not sign a login.
    const session = (await as(s3, "DELETE", "/v1/dashboard-sessions/current")).json.data.session_id;
    const s4 = await login(acct.username, acct.password);
    const challenge = "cmVnaXN0ZXItcHVycG9zZS1jaGFsbGVuZ2U";
    await inOrg(org.org_id, (store) =>
      store.db.run(
        "INSERT INTO webauthn_challenges (challenge, account_id, session_id, purpose, expires_at) VALUES (?, ?, ?, 'register', ?)",
        challenge,
        acct.accountId,
        s4.json.data.session_id,
        new Date(Date.now() + 60_000).toISOString(),
      ),
    );
    expect(session).not.toBe(s4.json.data.session_id);
    expectError(
      await as(s4.json.data.session_token, "POST", "/v1/dashboard-sessions/current/passkey", {
        response: await auth.get({ challenge }),
      }),
      400,
      "VALIDATION_ERROR",
    );
    const s4b = s4.json.data.session_token;
    await inOrg(org.org_id, (store) =>
      store.db.run("UPDATE webauthn_challenges SET purpose = 'authenticate' WHERE challenge = ?", challenge),
    );
    expect(
      (await as(s4b, "POST", "/v1/dashboard-sessions/current/passkey", { response: await auth.get({ challenge }) }))
        .status,
    ).toBe(201);
  });

  it("spends a challenge in the transaction that records its outcome: a failed answer uses it up and counts, a failed write leaves it unspent", async () => {
    const org = await newOrg();
    const acct = await fullAccount(org.api_key);
    const { auth, data } = await enroll(acct.token);
    const st = await staged(acct.username, acct.password);
    const submit = (response: unknown) => as(st, "POST", "/v1/dashboard-sessions/current/passkey", { response });
    const usedAt = (challenge: string) =>
      inOrg(
        org.org_id,
        (s) =>
          s.db.first<{ used_at: string | null }>(
            "SELECT used_at FROM webauthn_challenges WHERE challenge = ?",
            challenge,
          )?.used_at,
      );
    const failures = async () =>
      Number(
        (await env.INDEX_DB.prepare("SELECT failures FROM login_failures WHERE username_hash = ?")
          .bind(sha256Hex(acct.username))
          .first("failures")) ?? 0,
      );
    const state = () =>
      inOrg(org.org_id, (s) => ({
        passkey: s.db.first<{ counter: number; last_used_at: string | null }>(
          "SELECT counter, last_used_at FROM passkeys WHERE passkey_id = ?",
          data.passkey_id,
        ),
        sessions: s.db
          .all<{ stage: string }>(
            "SELECT stage FROM dashboard_sessions WHERE account_id = ? AND revoked_at IS NULL ORDER BY stage",
            acct.accountId,
          )
          .map((r) => r.stage),
        failedAudits: s.db
          .all<{ detail: string }>("SELECT detail FROM audit_log WHERE action = 'dashboard_session.login_failed'")
          .map((a) => JSON.parse(a.detail)),
      }));
    const base = await failures();
    const fresh = await state();
    // A bad signature spends the challenge: the authenticator's genuine answer to it then fails as well.
    const options = await assertionOptions(st);
    const forged = await auth.get(options);
    forged.response.signature = forged.response.signature.slice(0, -4) + "AAAA";
    expectError(await submit(forged), 400, "VALIDATION_ERROR");
    expect(await usedAt(options.challenge)).toEqual(expect.any(String));
    expectError(await submit(await auth.get(options)), 400, "VALIDATION_ERROR");
    // So does an answer from a credential the account does not have.
    const stranger = new SoftAuthenticator();
    await stranger.create({ challenge: "bm90LXJlZ2lzdGVyZWQ" });
    const options2 = await assertionOptions(st);
    expectError(await submit(await stranger.get(options2)), 400, "VALIDATION_ERROR");
    expect(await usedAt(options2.challenge)).toEqual(expect.any(String));
    expectError(await submit(await auth.get(options2)), 400, "VALIDATION_ERROR");
    // Each failure is counted for the progressive delay and audited; no full session was issued.
    expect(await failures()).toBe(base + 4);
    const failed = await state();
    expect(failed.failedAudits.slice(fresh.failedAudits.length)).toEqual(Array(4).fill({ method: "passkey" }));
    expect(failed.sessions).toEqual(fresh.sessions);
    expect(failed.passkey).toEqual(fresh.passkey);
    // A write that fails after a good verification rolls back whole: the challenge unspent, the counter
    // unmoved, the staged session live, no failure counted; the same answer works once the fault is gone.
    const options3 = await assertionOptions(st);
    const genuine = await auth.get(options3);
    await inOrg(org.org_id, (s) =>
      s.db.run(
        "CREATE TRIGGER refuse_full_session BEFORE INSERT ON dashboard_sessions WHEN NEW.stage = 'full' BEGIN SELECT RAISE(ABORT, 'injected'); END",
      ),
    );
    expectError(await submit(genuine), 500, "INTERNAL");
    await inOrg(org.org_id, (s) => s.db.run("DROP TRIGGER refuse_full_session"));
    expect(await usedAt(options3.challenge)).toBeNull();
    expect(await state()).toEqual(failed);
    expect(await failures()).toBe(base + 4);
    const done = await submit(genuine);
    expect(done.status, done.text).toBe(201);
    expect(await usedAt(options3.challenge)).toEqual(expect.any(String));
    expect((await state()).passkey).toMatchObject({ counter: auth.counter, last_used_at: expect.any(String) });
  });

  it("spends a registration challenge whatever its verification found, and audits the failure", async () => {
    const org = await newOrg();
    const acct = await fullAccount(org.api_key);
    const register = (response: unknown) =>
      as(acct.token, "POST", "/v1/operator-accounts/current/passkeys", { response });
    const o = await as(acct.token, "POST", "/v1/operator-accounts/current/passkeys/options", {});
    const auth = new SoftAuthenticator("http://localhost:9999");
    expectError(await register(await auth.create(o.json.data.options)), 400, "VALIDATION_ERROR");
    auth.origin = "http://localhost:8787";
    expectError(await register(await auth.create(o.json.data.options)), 400, "VALIDATION_ERROR");
    const { actions, passkeys } = await inOrg(org.org_id, (s) => ({
      actions: s.db
        .all<{ action: string }>("SELECT action FROM audit_log WHERE action LIKE 'passkey.%' ORDER BY seq")
        .map((a) => a.action),
      passkeys: s.db.first<{ n: number }>("SELECT count(*) AS n FROM passkeys")!.n,
    }));
    expect(actions).toEqual([
      "passkey.registration_started",
      "passkey.registration_failed",
      "passkey.registration_failed",
    ]);
    expect(passkeys).toBe(0);
  });

  it("needs the current password to remove any passkey, and after the last logs in with the password alone", async () => {
    const org = await newOrg();
    const acct = await fullAccount(org.api_key);
    const a = await enroll(acct.token);
    const b = await enroll(acct.token);
    const path = (id: string) => `/v1/operator-accounts/current/passkeys/${id}`;
    const missing = await as(acct.token, "DELETE", path(a.data.passkey_id));
    expectError(missing, 400, "VALIDATION_ERROR");
    expect(missing.json.error.message).toContain("current_password");
    expectError(
      await as(acct.token, "DELETE", path(a.data.passkey_id), { current_password: "not the password" }),
      403,
      "FORBIDDEN",
    );
    expect((await as(acct.token, "DELETE", path(a.data.passkey_id), { current_password: acct.password })).status).toBe(
      200,
    );
    expectError(
      await as(acct.token, "DELETE", path(a.data.passkey_id), { current_password: acct.password }),
      404,
      "NOT_FOUND",
    );
    expectError(await as(acct.token, "DELETE", path(b.data.passkey_id)), 400, "VALIDATION_ERROR");
    expectError(
      await as(acct.token, "DELETE", path(b.data.passkey_id), { current_password: "not the password" }),
      403,
      "FORBIDDEN",
    );
    expect((await login(acct.username, acct.password)).json.data.stage).toBe("staged");
    const r = await as(acct.token, "DELETE", path(b.data.passkey_id), { current_password: acct.password });
    expect(r.status, r.text).toBe(200);
    expect(r.json.data.revoked_at).toBeTruthy();
    expect((await login(acct.username, acct.password)).json.data.stage).toBe("full");
    // Enrolling again after the last one was removed issues a fresh set of codes.
    expect((await enroll(acct.token)).data.recovery_codes).toHaveLength(8);
  });

  it("answers a foreign, another account's and a missing passkey id with the same 404", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const alice = await fullAccount(org.api_key);
    const bob = await fullAccount(org.api_key);
    const eve = await fullAccount(other.api_key);
    const { data } = await enroll(alice.token);
    await enroll(bob.token);
    await enroll(eve.token);
    const path = `/v1/operator-accounts/current/passkeys/${data.passkey_id}`;
    const foreign = await as(eve.token, "DELETE", path, { current_password: eve.password });
    const invisible = await as(bob.token, "DELETE", path, { current_password: bob.password });
    const missing = await as(bob.token, "DELETE", `/v1/operator-accounts/current/passkeys/pk_${"0".repeat(32)}`, {
      current_password: bob.password,
    });
    for (const r of [foreign, invisible, missing]) expectError(r, 404, "NOT_FOUND");
    expect(foreign.json.error).toEqual(missing.json.error);
    expect(invisible.json.error).toEqual(missing.json.error);
    expect((await as(alice.token, "GET", "/v1/operator-accounts/current/passkeys")).json.data.passkeys).toHaveLength(1);
  });

  it("keeps recovery codes, the list and removal working with the relying party unconfigured", async () => {
    const org = await newOrg();
    const acct = await fullAccount(org.api_key);
    const { data } = await enroll(acct.token);
    const st = await staged(acct.username, acct.password);
    const setRp = (rpId: string | undefined) =>
      inOrg(org.org_id, (store) => {
        (store as unknown as { env: typeof env }).env = { ...env, WEBAUTHN_RP_ID: rpId } as typeof env;
      });
    await setRp("");
    try {
      for (const [t, path] of [
        [acct.token, "/v1/operator-accounts/current/passkeys/options"],
        [st, "/v1/dashboard-sessions/current/passkey-options"],
      ]) {
        const r = await as(t, "POST", path, {});
        expectError(r, 400, "VALIDATION_ERROR");
        expect(r.json.error.message).toBe("Passkeys are not configured.");
      }
      const full = await as(st, "POST", "/v1/dashboard-sessions/current/recovery-code", {
        code: data.recovery_codes[0],
      });
      expect(full.status, full.text).toBe(201);
      expect(
        (
          await as(acct.token, "POST", "/v1/operator-accounts/current/recovery-codes", {
            current_password: acct.password,
          })
        ).status,
      ).toBe(201);
      expect((await as(acct.token, "GET", "/v1/operator-accounts/current/passkeys")).json.data.passkeys).toHaveLength(
        1,
      );
      expect(
        (
          await as(acct.token, "DELETE", `/v1/operator-accounts/current/passkeys/${data.passkey_id}`, {
            current_password: acct.password,
          })
        ).status,
      ).toBe(200);
    } finally {
      await setRp(undefined);
    }
  });
});

describe("recovery codes", () => {
  it("finish a staged login once each, report how many remain, and are replaced as a whole", async () => {
    const org = await newOrg();
    const acct = await fullAccount(org.api_key);
    const { data } = await enroll(acct.token);
    const codes: string[] = data.recovery_codes;
    const use = (t: string, code: string) => as(t, "POST", "/v1/dashboard-sessions/current/recovery-code", { code });
    const s1 = await staged(acct.username, acct.password);
    expectError(await use(s1, "aaaaa-aaaaa"), 400, "VALIDATION_ERROR");
    const r1 = await use(s1, codes[0].toUpperCase());
    expect(r1.status, r1.text).toBe(201);
    expect(r1.json.data).toMatchObject({ stage: "full", recovery_codes_remaining: 7 });
    expectError(await as(s1, "GET", "/v1/principal"), 401, "UNAUTHENTICATED");
    expect((await as(r1.json.data.session_token, "GET", "/v1/principal")).status).toBe(200);
    const s2 = await staged(acct.username, acct.password);
    expectError(await use(s2, codes[0]), 400, "VALIDATION_ERROR");
    // Replacement: needs the current password; the old set stops working.
    const path = "/v1/operator-accounts/current/recovery-codes";
    expectError(await as(acct.token, "POST", path, {}), 400, "VALIDATION_ERROR");
    expectError(await as(acct.token, "POST", path, { current_password: "not the password" }), 403, "FORBIDDEN");
    const fresh = await as(acct.token, "POST", path, { current_password: acct.password });
    expect(fresh.status, fresh.text).toBe(201);
    expect(fresh.json.data.recovery_codes).toHaveLength(8);
    expectError(await use(s2, codes[1]), 400, "VALIDATION_ERROR");
    const r2 = await use(s2, fresh.json.data.recovery_codes[3]);
    expect(r2.json.data.recovery_codes_remaining).toBe(7);
    // Each refused code is audited as a failed login, without the code.
    const failed = await inOrg(org.org_id, (s) =>
      s.db
        .all<{ detail: string }>(
          "SELECT detail FROM audit_log WHERE action = 'dashboard_session.login_failed' ORDER BY seq",
        )
        .map((a) => a.detail),
    );
    expect(failed).toEqual(Array(3).fill(JSON.stringify({ method: "recovery_code" })));
  });
});

describe("progressive login delay", () => {
  /** Login through the Worker with a waiting function that records and moves the clock instead of sleeping. */
  const waits: number[] = [];
  const loginAt = async (username: string, password: string, client?: string) => {
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
          clock.advance(ms);
        },
      },
    );
    return { status: r.status, json: (await r.json()) as any };
  };
  const waitOf = async (username: string, password: string, client?: string) => {
    waits.length = 0;
    const r = await loginAt(username, password, client);
    return { status: r.status, stage: r.json.data?.stage, wait: waits.reduce((a, b) => a + b, 0) };
  };

  it("follows min(2^(n-3), 30) seconds after n >= 3 failures, for known and unknown names alike", async () => {
    expect([0, 1, 2, 3, 4, 5, 7, 8, 20].map(delayMsAfter)).toEqual([0, 0, 0, 1000, 2000, 4000, 16000, 30000, 30000]);
    const org = await newOrg();
    const acct = await fullAccount(org.api_key);
    for (const name of [acct.username, uniqueName("ghost")]) {
      const seen: number[] = [];
      for (let i = 0; i < 9; i++) seen.push((await waitOf(name, "wrong password!")).wait);
      expect(seen, name).toEqual([0, 0, 0, 1000, 2000, 4000, 8000, 16000, 30000]);
    }
    // The right password still waits its turn, then a full session resets the count.
    expect(await waitOf(acct.username, acct.password)).toEqual({ status: 201, stage: "full", wait: 30000 });
    expect((await waitOf(acct.username, "wrong password!")).wait).toBe(0);
    // The count lives in D1 under the SHA-256 of the username and of the client, not the name.
    const row = await env.INDEX_DB.prepare(
      "SELECT failures FROM login_failures WHERE username_hash = ? AND client_hash = ?",
    )
      .bind(sha256Hex(acct.username), sha256Hex(UNKNOWN_CLIENT))
      .first<{ failures: number }>();
    expect(row?.failures).toBe(1);
    expect(
      await env.INDEX_DB.prepare("SELECT count(*) AS n FROM login_failures WHERE username_hash = ? OR client_hash = ?")
        .bind(acct.username, UNKNOWN_CLIENT)
        .first("n"),
    ).toBe(0);
  });

  it("forgets failures after 15 quiet minutes, and counts a failed second factor", async () => {
    const org = await newOrg();
    const acct = await fullAccount(org.api_key);
    for (let i = 0; i < 4; i++) await waitOf(acct.username, "wrong password!");
    expect((await waitOf(acct.username, "wrong password!")).wait).toBe(2000);
    const ghost = uniqueName("ghost");
    await waitOf(ghost, "wrong password!");
    const ghostRow = () =>
      env.INDEX_DB.prepare("SELECT failures FROM login_failures WHERE username_hash = ?")
        .bind(sha256Hex(ghost))
        .first("failures");
    expect(await ghostRow()).toBe(1);
    clock.advance(15 * 60_000 + 1000);
    expect((await waitOf(acct.username, "wrong password!")).wait).toBe(0);
    // Forgotten rows are deleted as new attempts are counted: random names cannot grow the table.
    expect(await ghostRow()).toBeNull();
    clock.reset();
    const other = await fullAccount(org.api_key);
    const { data } = await enroll(other.token);
    const first = await waitOf(other.username, other.password);
    expect(first).toMatchObject({ stage: "staged", wait: 0 });
    const st = (await loginAt(other.username, other.password)).json.data.session_token;
    for (let i = 0; i < 3; i++)
      expectError(
        await as(st, "POST", "/v1/dashboard-sessions/current/recovery-code", { code: "bbbbb-bbbbb" }),
        400,
        "VALIDATION_ERROR",
      );
    // Three failed second factors: the next password login waits; a staged login does not reset the count.
    expect(await waitOf(other.username, other.password)).toMatchObject({ stage: "staged", wait: 1000 });
    expect(
      (await as(st, "POST", "/v1/dashboard-sessions/current/recovery-code", { code: data.recovery_codes[0] })).status,
    ).toBe(201);
    expect((await waitOf(other.username, other.password)).wait).toBe(0);
  });

  it("counts a failed second factor, and resets after one, on the queue of the client that sent it", async () => {
    const org = await newOrg();
    const acct = await fullAccount(org.api_key);
    const { data } = await enroll(acct.token);
    const [here, elsewhere] = ["192.0.2.10", "198.51.100.30"];
    const stagedFrom = async (client: string) => {
      waits.length = 0;
      const r = await loginAt(acct.username, acct.password, client);
      expect(r.json.data.stage).toBe("staged");
      return { token: r.json.data.session_token as string, wait: waits.reduce((a, b) => a + b, 0) };
    };
    const recover = (token: string, code: string, client: string) =>
      call("POST", "/v1/dashboard-sessions/current/recovery-code", {
        key: token,
        body: { code },
        headers: { "cf-connecting-ip": client },
      });
    const first = await stagedFrom(here);
    for (let i = 0; i < 3; i++) expectError(await recover(first.token, "bbbbb-bbbbb", here), 400, "VALIDATION_ERROR");
    const fromElsewhere = await stagedFrom(elsewhere);
    expect(fromElsewhere.wait).toBe(0);
    const fromHere = await stagedFrom(here);
    expect(fromHere.wait).toBe(1000);
    // A full session from elsewhere leaves this client's count; one from here clears it.
    expect((await recover(fromElsewhere.token, data.recovery_codes[0], elsewhere)).status).toBe(201);
    expect((await stagedFrom(here)).wait).toBe(1000);
    expect((await recover(fromHere.token, data.recovery_codes[1], here)).status).toBe(201);
    expect((await stagedFrom(here)).wait).toBe(0);
  });
});

describe("isolation and records", () => {
  it("keeps sessions inside their organization", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const acct = await fullAccount(org.api_key);
    await appendOk(other.api_key, obs("other-subject", "other org secret"));
    const mine = await as(acct.token, "GET", "/v1/principal");
    expect(mine.json.data.principal_id).toBe(acct.data.principal_id);
    const list = await as(acct.token, "GET", "/v1/memories?q=secret");
    expect(list.status, list.text).toBe(200);
    expect(list.text).not.toContain("other org secret");
    const events = await as(acct.token, "GET", "/v1/events");
    expect(events.text).not.toContain("other-subject");
    // The session exists only in its own organization's store.
    const found = await inOrg(other.org_id, (s) => s.db.first("SELECT 1 FROM dashboard_sessions"));
    expect(found).toBeNull();
  });

  it("audits metadata only and emits no event", async () => {
    const org = await newOrg();
    const before = await inOrg(org.org_id, (s) => s.db.first<{ n: number }>("SELECT count(*) AS n FROM events")!.n);
    const acct = await fullAccount(org.api_key);
    const { auth, data } = await enroll(acct.token);
    const st = await staged(acct.username, acct.password);
    await as(st, "POST", "/v1/dashboard-sessions/current/passkey", {
      response: await auth.get(await assertionOptions(st)),
    });
    await login(acct.username, "wrong password!!");
    const st2 = await staged(acct.username, acct.password);
    const viaCode = await as(st2, "POST", "/v1/dashboard-sessions/current/recovery-code", {
      code: data.recovery_codes[0],
    });
    await as(viaCode.json.data.session_token, "POST", "/v1/operator-accounts/current/recovery-codes", {
      current_password: acct.password,
    });
    await as(acct.token, "DELETE", "/v1/dashboard-sessions/current");
    const { events, audit } = await inOrg(org.org_id, (s) => ({
      events: s.db.first<{ n: number }>("SELECT count(*) AS n FROM events")!.n,
      audit: s.db.all<{ action: string; detail: string; key_id: string | null }>(
        "SELECT action, detail, key_id FROM audit_log ORDER BY seq",
      ),
    }));
    expect(events).toBe(before);
    const actions = audit.map((a) => a.action);
    for (const a of [
      "operator_account.created",
      "operator_account.password_changed",
      "dashboard_session.created",
      "passkey.registration_started",
      "passkey.added",
      "passkey.assertion_started",
      "dashboard_session.login_failed",
      "recovery_codes.replaced",
      "dashboard_session.revoked",
    ])
      expect(actions, a).toContain(a);
    const text = JSON.stringify(audit);
    for (const secret of [
      acct.password,
      data.recovery_codes[0],
      data.recovery_codes[1],
      acct.token,
      viaCode.json.data.session_token,
      "wrong password!!",
    ])
      expect(text).not.toContain(secret);
    expect(text).not.toMatch(/pbkdf2|challenge|public_key/);
  });
});
