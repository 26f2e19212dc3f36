// Failure paths: storage errors translated to the SPEC's codes, every 503, and rollback of a real
// route that fails after it has already written part of its work. Broken storage is passed in (an
// env or a Durable Object state), never patched into module globals.
import { env, runInDurableObject } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import { hashKey } from "../src/auth/credentials";
import { healthRoutes } from "../src/domains/health/routes";
import { ApiError, translateStorageError } from "../src/http/errors";
import type { EdgeEnv } from "../src/env";
import type { PublicRoute } from "../src/org/route";
import type { DispatchInput } from "../src/env";
import { OrgStore } from "../src/OrgStore";
import { bootstrapOrganization } from "../src/operator";
import { handle } from "../src/worker";
import { revokeWhatPrincipalReaches } from "../src/domains/identity/revocation";
import { Db } from "../src/sql/db";
import {
  append,
  bareRequest,
  appendOk,
  call,
  consolidateOk,
  expectError,
  failingRegistry,
  holdBackgroundDrain,
  inOrg,
  newOrg,
  obs,
  orgStub,
  mintKey,
  registryOwners,
  supports,
  uniqueName,
} from "./helpers";

/** A D1 binding that prepares statements (lazily, as D1 does) but fails every query like an unreachable database. */
const failingD1 = (): D1Database => {
  const fail = async () => {
    throw new Error("D1_ERROR: Network connection lost.");
  };
  const statement = { bind: () => statement, first: fail, run: fail, all: fail, raw: fail };
  return { prepare: () => statement, batch: fail, exec: fail } as unknown as D1Database;
};

/** Runs `input` through a second OrgStore built on the organization's real state with `envOverride`. */
const dispatchWith = (
  orgId: string,
  envOverride: Partial<EdgeEnv>,
  input: Omit<DispatchInput, "orgId" | "requestId" | "headers" | "query" | "params" | "idempotencyKey"> &
    Partial<DispatchInput>,
) =>
  runInDurableObject(orgStub(orgId) as unknown as DurableObjectStub, async (_o, state) => {
    const store = new OrgStore(state, { ...env, ...envOverride } as EdgeEnv);
    return store.dispatch({
      orgId,
      requestId: "req_test",
      headers: {},
      query: {},
      params: {},
      idempotencyKey: null,
      ...input,
    });
  });

/** What translateStorageError makes of the error `fn` throws inside the organization's Durable Object. */
const translatedInOrg = (orgId: string, fn: (o: OrgStore) => void) =>
  inOrg(orgId, (o) => {
    try {
      fn(o);
    } catch (err) {
      const api = translateStorageError(err);
      return { status: api.status, code: api.code, message: api.message, raw: String((err as Error).message) };
    }
    throw new Error("expected the statement to fail");
  });

const readyz = (envOverride: Partial<EdgeEnv>) => {
  const route = healthRoutes.find((r) => r.path === "/readyz") as PublicRoute;
  return route.edge({ ...env, ...envOverride } as EdgeEnv, "req_test", bareRequest);
};

describe("storage errors become the SPEC's codes, never SQLite's text", () => {
  it("translates the messages Durable Object SQLite really produces", async () => {
    const org = await newOrg();
    const fk = await translatedInOrg(org.org_id, (o) =>
      o.db.run(
        "INSERT INTO claim_sources (claim_id, position, observation_id, relation) VALUES ('claim_nope', 0, 'obs_nope', 'supports')",
      ),
    );
    expect(fk.raw).toMatch(/FOREIGN KEY constraint failed/);
    expect(fk).toMatchObject({
      status: 400,
      code: "UNRESOLVED_REFERENCE",
      message: "A referenced record does not exist.",
    });

    const unique = await translatedInOrg(org.org_id, (o) => {
      for (let i = 0; i < 2; i++)
        o.db.run(
          "INSERT INTO idempotency (idem_key, request_hash, status, response, created_at) VALUES ('same', 'h', 201, '{}', 'now')",
        );
    });
    expect(unique.raw).toMatch(/UNIQUE constraint failed/);
    expect(unique).toMatchObject({
      status: 409,
      code: "CONFLICT",
      message: "The write conflicts with an existing record.",
    });

    const notNull = await translatedInOrg(org.org_id, (o) =>
      o.db.run("INSERT INTO idempotency (idem_key) VALUES ('x')"),
    );
    expect(notNull.raw).toMatch(/NOT NULL constraint failed/);
    expect(notNull).toMatchObject({ status: 409, code: "CONFLICT" });

    const noTable = await translatedInOrg(org.org_id, (o) => o.db.run("SELECT * FROM table_that_is_not_there"));
    expect(noTable.raw).toMatch(/no such table/);
    expect(noTable).toMatchObject({ status: 503, code: "UNAVAILABLE", message: "Storage is unavailable." });

    const syntax = await translatedInOrg(org.org_id, (o) => o.db.run("SELEKT 1"));
    expect(syntax.raw).toMatch(/syntax error/);
    expect(syntax).toMatchObject({ status: 500, code: "INTERNAL", message: "Request could not be completed." });
  });

  it("treats an unwritable database as unavailable and passes ApiErrors through", () => {
    // SQLite's own wording for storage it cannot open or write (not producible inside a healthy DO).
    for (const text of [
      "unable to open database file: SQLITE_CANTOPEN",
      "attempt to write a readonly database: SQLITE_READONLY",
    ])
      expect(translateStorageError(new Error(text)).toBody()).toEqual({
        code: "UNAVAILABLE",
        message: "Storage is unavailable.",
      });
    const own = new ApiError("NOT_FOUND", "Claim not found.");
    expect(translateStorageError(own)).toBe(own);
    expect(translateStorageError("a thrown string")).toMatchObject({ code: "INTERNAL" });
  });

  it("answers a storage failure inside a real route with the translated code and our message only", async () => {
    const org = await newOrg();
    // A real constraint on this organization's table: a second identical statement is refused by SQLite.
    await inOrg(org.org_id, (o) => o.db.run("CREATE UNIQUE INDEX test_one_statement ON claims(statement)"));
    const id = await appendOk(org.api_key, obs("s", "x"));
    const r = await call("POST", "/v1/consolidations", {
      key: org.api_key,
      body: {
        subject_id: "s",
        claims: [
          { kind: "fact", statement: "twice", sources: supports(id) },
          { kind: "fact", statement: "twice", sources: supports(id) },
        ],
      },
    });
    expectError(r, 409, "CONFLICT");
    expect(r.json.error.message).toBe("The write conflicts with an existing record.");
    expect(r.text).not.toMatch(/SQLITE|UNIQUE|claims\.statement/);
  });
});

describe("503 paths", () => {
  it("answers 503 UNAVAILABLE when the credential index cannot be read", async () => {
    const unseenKey =
      "svc_sk_" + [...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, "0")).join("");
    const res = await handle(
      new Request("http://svc.test/v1/principal", { headers: { authorization: `Bearer ${unseenKey}` } }),
      { ...env, INDEX_DB: failingD1() } as EdgeEnv,
    );
    expect(res.status).toBe(503);
    const body = await res.json<any>();
    expect(body.error).toEqual({ code: "UNAVAILABLE", message: "Storage is unavailable." });
  });

  it("answers 503 UNAVAILABLE when the key cannot be written to the credential index, and retires the key", async () => {
    const org = await newOrg();
    const before = await inOrg(org.org_id, (o) =>
      o.db.all<{ key_id: string }>("SELECT key_id FROM api_keys").map((k) => k.key_id),
    );
    const result = await dispatchWith(
      org.org_id,
      { INDEX_DB: failingD1() },
      {
        routeId: "POST /v1/keys",
        keyHash: hashKey(org.api_key),
        bodyText: JSON.stringify({ label: "lost", scopes: ["events:read"] }),
      },
    );
    expect(result).toEqual({
      ok: false,
      error: { code: "UNAVAILABLE", message: "The credential index is unavailable; the key was not created." },
    });
    const rows = await inOrg(org.org_id, (o) =>
      o.db.all<{ key_id: string; status: string }>("SELECT key_id, status FROM api_keys"),
    );
    const minted = rows.filter((k) => !before.includes(k.key_id));
    expect(minted).toEqual([{ key_id: expect.stringMatching(/^key_/), status: "revoked" }]);
  });

  it("answers 503 UNAVAILABLE when the ownership registry cannot answer during import, importing nothing", async () => {
    const org = await newOrg();
    const owner = (await call("GET", "/v1/principal", { key: org.api_key })).json.data.principal_id;
    const line = JSON.stringify({
      type: "project",
      project_id: `prj_${"a".repeat(32)}`,
      reference: "imp",
      created_by: owner,
      created_at: "2026-01-01T00:00:00.000Z",
    });
    const working = await inOrg(org.org_id, (o) => {
      const deps = o.deps;
      o.deps = { ...deps, registry: failingRegistry };
      return deps;
    });
    const r = await call("POST", "/v1/import", {
      key: org.api_key,
      raw: line,
      headers: { "content-type": "application/x-ndjson" },
    });
    expect(r.json).toMatchObject({
      error: { code: "UNAVAILABLE", message: "The record ownership registry is unavailable; nothing was imported." },
    });
    expect(r.status).toBe(503);
    expect(await inOrg(org.org_id, (o) => o.db.first<{ n: number }>("SELECT count(*) AS n FROM projects")!.n)).toBe(0);
    await inOrg(org.org_id, (o) => {
      o.deps = working;
    });
    // The same import with the real registry goes through: the line itself was fine.
    expect(
      (
        await call("POST", "/v1/import", {
          key: org.api_key,
          raw: line,
          headers: { "content-type": "application/x-ndjson" },
        })
      ).status,
    ).toBe(201);
  });

  it("answers 503 UNAVAILABLE on every request of an organization whose migrations failed, and reports it not ready", async () => {
    const org = await newOrg();
    const answers = await runInDurableObject(orgStub(org.org_id) as unknown as DurableObjectStub, async (_o, state) => {
      // Forget which migrations ran: a new instance re-runs the first one, whose CREATE TABLE now fails.
      state.storage.sql.exec("DELETE FROM _migrations");
      const store = new OrgStore(state, env as EdgeEnv);
      await state.blockConcurrencyWhile(async () => {}); // the constructor's migration has run
      return {
        request: await store.dispatch({
          orgId: org.org_id,
          requestId: "req_test",
          headers: {},
          query: {},
          params: {},
          idempotencyKey: null,
          routeId: "GET /v1/principal",
          keyHash: hashKey(org.api_key),
          bodyText: null,
        }),
        readiness: await store.readiness(),
      };
    });
    expect(answers.request).toEqual({ ok: false, error: { code: "UNAVAILABLE", message: "Storage is unavailable." } });
    expect(answers.readiness.ok).toBe(false);
  });

  it("takes a new account back when its username row cannot be written, even if its creator was removed meanwhile", async () => {
    const org = await newOrg();
    const creator = await mintKey(org.api_key, { scopes: ["*"], max_trust: "high" });
    const username = uniqueName("late");
    const result = await runInDurableObject(orgStub(org.org_id) as unknown as DurableObjectStub, async (_o, state) => {
      const db = new Db(state.storage.sql);
      // The username row fails, and while it is in flight the creator leaves the organization (its cascade disables the account).
      const failing = async () => {
        state.storage.transactionSync(() => {
          db.run(
            "UPDATE principals SET removed_at = ? WHERE principal_id = ?",
            new Date().toISOString(),
            creator.principal_id,
          );
          revokeWhatPrincipalReaches(db, creator.principal_id, "prn_test", new Date().toISOString());
        });
        throw new Error("D1_ERROR: Network connection lost.");
      };
      const statement = { bind: () => statement, first: failing, run: failing, all: failing, raw: failing };
      const index = new Proxy(env.INDEX_DB, {
        get: (target, key) =>
          key === "prepare"
            ? (sql: string) => (/INTO dashboard_usernames/.test(sql) ? statement : target.prepare(sql))
            : Reflect.get(target, key),
      });
      const store = new OrgStore(state, { ...env, INDEX_DB: index } as EdgeEnv);
      return store.dispatch({
        orgId: org.org_id,
        requestId: "req_test",
        headers: {},
        query: {},
        params: {},
        idempotencyKey: null,
        routeId: "POST /v1/operator-accounts",
        keyHash: hashKey(creator.key),
        bodyText: JSON.stringify({ username, role: "member" }),
      });
    });
    expect(result).toEqual({
      ok: false,
      error: { code: "UNAVAILABLE", message: "The username index is unavailable; the account was not created." },
    });
    const left = await inOrg(org.org_id, (o) => ({
      accounts: o.db.first<{ n: number }>("SELECT count(*) AS n FROM operator_accounts WHERE username = ?", username)!
        .n,
      live: o.db.first<{ n: number }>(
        "SELECT count(*) AS n FROM principals WHERE display_name = ? AND removed_at IS NULL",
        username,
      )!.n,
      audited: o.db.first<{ n: number }>(
        "SELECT count(*) AS n FROM audit_log WHERE action = 'operator_account.removed'",
      )!.n,
    }));
    expect(left).toEqual({ accounts: 0, live: 0, audited: 1 });
  });

  it("answers /readyz 503 NOT_READY when the index database or the org store fails", async () => {
    const indexDown = await readyz({ INDEX_DB: failingD1() });
    expect(indexDown.status).toBe(503);
    const a = await indexDown.json<any>();
    expect(a.error.code).toBe("NOT_READY");
    expect(a.meta.checks).toEqual({ index_db: "failing", org_store: "ok" });

    const throwingStore = {
      idFromName: () => ({}),
      get: () => ({
        readiness: async () => {
          throw new Error("object reset");
        },
      }),
    };
    const storeDown = await (await readyz({ ORG: throwingStore as unknown as EdgeEnv["ORG"] })).json<any>();
    expect(storeDown.error.code).toBe("NOT_READY");
    expect(storeDown.meta.checks).toEqual({ index_db: "ok", org_store: "failing" });

    const unmigratedStore = {
      idFromName: () => ({}),
      get: () => ({ readiness: async () => ({ ok: false, applied: 0, expected: 1 }) }),
    };
    const unmigrated = await readyz({ ORG: unmigratedStore as unknown as EdgeEnv["ORG"] });
    expect(unmigrated.status).toBe(503);
    expect((await unmigrated.json<any>()).meta.checks.org_store).toBe("failing");

    expect((await readyz({})).status).toBe(200);
  });
});

describe("a real route failing after a partial write leaves nothing behind", () => {
  // The index drain and the registry's outbox wait for the test: only the failing write may move a tally.
  beforeEach(holdBackgroundDrain);
  // After the reserve's background top-up (if one runs), so that only the write under test moves it.
  const tally = (orgId: string) =>
    inOrg(
      orgId,
      async (o) => (
        await (o as unknown as { toppingUp: Promise<void> | null }).toppingUp,
        o.db.first<Record<string, number | string | null>>(
          `SELECT (SELECT count(*) FROM claims) AS claims, (SELECT count(*) FROM claim_sources) AS sources,
            (SELECT count(*) FROM claims_fts WHERE claims_fts MATCH 'twice OR first OR second') AS fts,
            (SELECT count(*) FROM events) AS events, (SELECT count(*) FROM audit_log) AS audit,
            (SELECT count(*) FROM outbox WHERE topic = 'record_owner') AS outbox, (SELECT count(*) FROM idempotency) AS replays,
            (SELECT count(*) FROM outbox WHERE topic = 'index') AS index_rows,
            (SELECT value FROM org_meta WHERE name = 'job_due:webhook_delivery') AS webhook_due_at,
            (SELECT group_concat(record_id) FROM (SELECT * FROM reserved_record_ids ORDER BY record_id)) AS reserve`,
        )!
      ),
    );

  it("a consolidation whose second claim violates a constraint keeps nothing of the first", async () => {
    const org = await newOrg();
    const id = await appendOk(org.api_key, obs("s", "x"));
    // A first consolidation stocks the claim id reserve, so the failing one takes reserved ids (and must give them back).
    await consolidateOk(org.api_key, "s", [{ kind: "fact", statement: "stocks the reserve", sources: supports(id) }]);
    await inOrg(org.org_id, (o) => o.db.run("CREATE UNIQUE INDEX test_one_statement ON claims(statement)"));
    const before = await tally(org.org_id);
    expect(before.reserve).toContain("claim_");
    const r = await call("POST", "/v1/consolidations", {
      key: org.api_key,
      headers: { "idempotency-key": "c1" },
      body: {
        subject_id: "s",
        claims: [
          { kind: "fact", statement: "first twice", sources: supports(id) },
          { kind: "fact", statement: "first twice", sources: supports(id) },
        ],
      },
    });
    expectError(r, 409, "CONFLICT");
    expect(await tally(org.org_id)).toEqual(before);
  });

  it("a consolidation that fails at its last step (the replay record) keeps no claim, event, audit entry, outbox row or webhook due time", async () => {
    const org = await newOrg();
    const id = await appendOk(org.api_key, obs("s", "x"));
    // An active webhook, so a committed event would set the delivery due time.
    expect(
      (
        await call("POST", "/v1/webhooks", {
          key: org.api_key,
          body: { url: "https://hooks.example.com/x", secret: "0123456789abcdef", events: ["*"] },
        })
      ).status,
    ).toBe(201);
    // One stored replay record with status 201, and a real constraint allowing only one such status:
    // the consolidation's own replay record, written after its claims, events, audit and outbox rows, is refused.
    expect((await append(org.api_key, obs("s", "y"), { "idempotency-key": "first" })).status).toBe(201);
    await inOrg(org.org_id, (o) => o.db.run("DELETE FROM org_meta WHERE name = 'job_due:webhook_delivery'"));
    await inOrg(org.org_id, (o) => o.db.run("CREATE UNIQUE INDEX test_one_status ON idempotency(status)"));
    const before = await tally(org.org_id);
    expect(before.webhook_due_at).toBeNull();
    const r = await call("POST", "/v1/consolidations", {
      key: org.api_key,
      headers: { "idempotency-key": "second" },
      body: {
        subject_id: "s",
        claims: [
          { kind: "fact", statement: "first claim", sources: supports(id) },
          { kind: "fact", statement: "second claim", sources: supports(id) },
        ],
      },
    });
    expectError(r, 409, "CONFLICT");
    expect(await tally(org.org_id)).toEqual(before);
    // Without the constraint the same request commits all of it.
    await inOrg(org.org_id, (o) => o.db.run("DROP INDEX test_one_status"));
    const ok = await call("POST", "/v1/consolidations", {
      key: org.api_key,
      headers: { "idempotency-key": "second" },
      body: {
        subject_id: "s",
        claims: [
          { kind: "fact", statement: "first claim", sources: supports(id) },
          { kind: "fact", statement: "second claim", sources: supports(id) },
        ],
      },
    });
    expect(ok.status, ok.text).toBe(201);
    const after = await tally(org.org_id);
    expect(after).toMatchObject({
      claims: 2,
      sources: 2,
      events: (before.events as number) + 2,
      audit: (before.audit as number) + 2,
      replays: 2,
    });
    // Its outbox rows were committed and carried to the ownership registry before the reply.
    const created = ok.json.data.claims.map((c: { claim_id: string }) => c.claim_id);
    expect(Object.keys(await registryOwners(created)).sort()).toEqual([...created].sort());
    expect(after.outbox).toBe(before.outbox);
    expect(after.webhook_due_at).not.toBeNull();
  });
});

describe("organization bootstrap leaves nothing behind when a later step fails", () => {
  /** The real index database, except that statements whose SQL matches `pattern` answer `answer` (or fail). */
  const indexDbWith = (pattern: RegExp, answer: "fail" | "none"): D1Database => {
    const real = env.INDEX_DB;
    const fake = async () => {
      if (answer === "fail") throw new Error("D1_ERROR: Network connection lost.");
      return null;
    };
    return new Proxy(real, {
      get(target, key) {
        if (key === "prepare")
          return (sql: string) => {
            if (!pattern.test(sql)) return target.prepare(sql);
            const statement = { bind: () => statement, first: fake, run: fake, all: fake, raw: fake };
            return statement;
          };
        const value = Reflect.get(target, key);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  };
  const registryCounts = async () =>
    env.INDEX_DB.prepare(
      `SELECT (SELECT count(*) FROM organizations) AS orgs, (SELECT count(*) FROM dashboard_usernames) AS usernames,
            (SELECT count(*) FROM credentials) AS credentials`,
    ).first();

  it("takes back the organization and username rows when the organization's object fails", async () => {
    await newOrg(); // the name `owner` is taken from here on, so this attempt would have taken `owner-<hex>`
    const before = await registryCounts();
    const unreachable = {
      idFromName: (name: string) => env.ORG.idFromName(name),
      get: () => ({
        bootstrap: async () => {
          throw new Error("object unreachable");
        },
      }),
    };
    await expect(bootstrapOrganization({ ...env, ORG: unreachable } as unknown as EdgeEnv)).rejects.toThrow(
      "object unreachable",
    );
    expect(await registryCounts()).toEqual(before);
  });

  it("takes them back when the credential row cannot be written", async () => {
    const before = await registryCounts();
    await expect(
      bootstrapOrganization({ ...env, INDEX_DB: indexDbWith(/INTO credentials/, "fail") } as EdgeEnv),
    ).rejects.toThrow(/D1_ERROR/);
    expect(await registryCounts()).toEqual(before);
  });

  it("a bootstrap that loses the race for the name `owner` takes a suffixed one instead of failing", async () => {
    await newOrg();
    // The look-up says `owner` is free (as it does to both of two first bootstraps racing), the insert finds it taken.
    const org = await bootstrapOrganization({
      ...env,
      INDEX_DB: indexDbWith(/SELECT 1 AS n FROM dashboard_usernames/, "none"),
    } as EdgeEnv);
    expect(org.owner_username).toMatch(/^owner-[0-9a-f]{8}$/);
    const r = await call("GET", "/v1/principals", { key: org.api_key });
    expect(r.status).toBe(200);
  });
});
