// Developer experience: errors that teach.
import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ROUTES } from "../src/routes";
import { appendOk, call, checkAnswer, consolidateOk, expectError, fullAccount, newOrg, obs, supports } from "./helpers";

describe("errors that teach", () => {
  it("an enum error lists the allowed values", async () => {
    const org = await newOrg();
    const r = await call("POST", "/v1/observations", { key: org.api_key, body: obs("s1", "x", { kind: "nope" }) });
    expectError(r, 400, "VALIDATION_ERROR");
    expect(r.json.error.message).toMatch(/Invalid field "kind": must be one of: "[a-z_]+"(, "[a-z_]+")+\./);
    const q = await call("GET", "/v1/memories?status=nope", { key: org.api_key });
    expectError(q, 400, "VALIDATION_ERROR");
    expect(q.json.error.message).toContain('Invalid field "status": must be one of: "active"');
  });

  it("a body with several problems reports all of them, up to ten", async () => {
    const org = await newOrg();
    const r = await call("POST", "/v1/observations", {
      key: org.api_key,
      body: { kind: "nope", content: "", extra1: 1 },
    });
    expectError(r, 400, "VALIDATION_ERROR");
    const m = r.json.error.message as string;
    for (const part of ['"kind"', '"content"', '"subject_id"', '"source"', 'Unknown field "extra1"'])
      expect(m).toContain(part);
    const many = Object.fromEntries(Array.from({ length: 14 }, (_, i) => [`zz${i}`, 1]));
    const r2 = await call("POST", "/v1/observations", { key: org.api_key, body: { ...obs("s1", "x"), ...many } });
    expectError(r2, 400, "VALIDATION_ERROR");
    expect(r2.json.error.message).toContain('Unknown field "zz0"');
  });

  it("an unknown query parameter is 400 naming it, on every route", async () => {
    const org = await newOrg();
    const r = await call("GET", "/v1/memories?qq=typo", { key: org.api_key });
    expectError(r, 400, "VALIDATION_ERROR");
    expect(r.json.error.message).toContain('Unknown query parameter "qq"');
    expect(r.json.error.message).toContain("Allowed: q, subject_id");
    const none = await call("GET", "/v1/principal?x=1", { key: org.api_key });
    expectError(none, 400, "VALIDATION_ERROR");
    expect(none.json.error.message).toContain('Unknown query parameter "x"');
    // Every GET route of the table with a fixed path refuses an unknown parameter the same way.
    const session = (await fullAccount(org.api_key, "admin")).token;
    for (const route of ROUTES) {
      if (route.auth !== "key" || route.method !== "GET" || route.path.includes(":")) continue;
      const key = route.stages && !route.stages.includes("api_key") ? session : org.api_key;
      const res = await call("GET", `${route.path}?no_such_param=1`, { key });
      expect(res.status, `${route.path}: ${res.text}`).toBe(400);
      expect(res.json.error.message, route.path).toContain('"no_such_param"');
    }
  });

  it("a reference to a missing project says how to create one", async () => {
    const org = await newOrg();
    const r = await call("POST", "/v1/observations", {
      key: org.api_key,
      body: obs("s1", "x", { project_id: "prj_missing" }),
    });
    expectError(r, 400, "UNRESOLVED_REFERENCE");
    expect(r.json.error.message).toContain("POST /v1/projects/resolve");
    expect(r.json.error.message).toContain('"create": true');
  });
});

describe("resolving a dispute (the recipe of docs/api-guide.md)", () => {
  it("a new claim supersedes both sides; both leave compiled context and stay as history", async () => {
    const org = await newOrg();
    const key = org.api_key;
    const o1 = await appendOk(key, obs("user-42", "I always drink coffee in the morning"));
    const o2 = await appendOk(key, obs("user-42", "Switched to tea in the mornings"));
    const o3 = await appendOk(key, obs("user-42", "Tea in the morning, coffee after lunch"));
    const [original] = await consolidateOk(key, "user-42", [
      { kind: "preference", statement: "Drinks coffee in the morning", sources: supports(o1) },
    ]);
    const [contra] = await consolidateOk(key, "user-42", [
      {
        kind: "preference",
        statement: "Drinks tea in the morning",
        sources: [...supports(o2), { claim_id: original, relation: "contradicts" }],
      },
    ]);
    const status = async (id: string) => (await call("GET", `/v1/claims/${id}/evidence`, { key })).json.data.claim;
    expect((await status(original)).status).toBe("disputed");
    expect((await status(contra)).status).toBe("disputed");

    const [resolved] = await consolidateOk(key, "user-42", [
      { kind: "preference", statement: "Drinks tea in the morning and coffee after lunch", sources: supports(o3) },
    ]);
    expect((await status(resolved)).status).toBe("active");
    for (const old of [original, contra]) {
      const r = await call("POST", `/v1/claims/${old}/supersede`, {
        key,
        body: { superseded_by: resolved, reason: "dispute resolved" },
      });
      expect(r.status, r.text).toBe(200);
      expect(r.json.data).toMatchObject({ status: "superseded", superseded_by: resolved });
    }
    const ctx = await call("POST", "/v1/context/compile", {
      key,
      body: { query: "what does user-42 drink in the morning", subject_id: "user-42" },
    });
    expect(ctx.json.data.items.map((i: any) => i.claim_id)).toEqual([resolved]);
    const current = await call("GET", "/v1/memories?subject_id=user-42", { key });
    expect(current.json.data.items.map((i: any) => i.claim_id)).toEqual([resolved]);
    const history = await call("GET", "/v1/memories?subject_id=user-42&status=superseded", { key });
    expect(history.json.data.items.map((i: any) => i.claim_id).sort()).toEqual([original, contra].sort());
  });
});

describe("published response schemas (docs/openapi.json)", () => {
  // test/helpers.ts `call` runs checkAnswer on every answer of the suite; here it must refuse drift.
  it("the suite's answer check refuses a renamed, missing or extra field, an undeclared status, a bad line or error", async () => {
    const org = await newOrg();
    const r = await call("GET", "/v1/principal", { key: org.api_key });
    expect(r.status).toBe(200);
    const check = (
      method: string,
      path: string,
      status: number,
      json: unknown,
      text = JSON.stringify(json),
      type = "application/json; charset=utf-8",
    ) => checkAnswer(method, path, status, type, text, json);
    await expect(check("GET", "/v1/principal", 200, r.json)).resolves.toBeUndefined();
    const { role, ...withoutRole } = r.json.data;
    await expect(check("GET", "/v1/principal", 200, { ...r.json, data: withoutRole })).rejects.toThrow(
      /response schema.*"path":"role"/,
    );
    await expect(
      check("GET", "/v1/principal", 200, { ...r.json, data: { ...withoutRole, org_role: role } }),
    ).rejects.toThrow(/response schema/);
    await expect(check("GET", "/v1/principal", 200, { ...r.json, data: { ...r.json.data, extra: 1 } })).rejects.toThrow(
      /unrecognized_keys/,
    );
    await expect(check("GET", "/v1/principal", 201, r.json)).rejects.toThrow(/declares only 200/);
    await expect(
      check("GET", "/v1/principal", 404, { error: { code: "GONE", message: "x" }, meta: r.json.meta }),
    ).rejects.toThrow(/error envelope/);
    await expect(check("POST", "/mcp", 202, undefined, "{}")).rejects.toThrow(/empty body/);
    await expect(
      check(
        "GET",
        "/v1/export",
        200,
        undefined,
        `${JSON.stringify({ type: "svc.export.header" })}\n`,
        "application/x-ndjson",
      ),
    ).rejects.toThrow(/NDJSON line/);
    // meta is checked too: compile's degraded, consolidation's model, replayed on idempotent routes.
    const c = await call("POST", "/v1/context/compile", { key: org.api_key, body: { query: "anything" } });
    expect(c.status).toBe(201);
    await expect(check("POST", "/v1/context/compile", 201, c.json)).resolves.toBeUndefined();
    const { degraded, ...noDegraded } = c.json.meta;
    await expect(
      check("POST", "/v1/context/compile", 201, { ...c.json, meta: { ...noDegraded, degradation: degraded } }),
    ).rejects.toThrow(/meta does not match/);
    await expect(
      check("GET", "/v1/principal", 200, { ...r.json, meta: { ...r.json.meta, replayed: false } }),
    ).rejects.toThrow(/meta does not match/);
    const o = await call("POST", "/v1/observations", {
      key: org.api_key,
      body: { subject_id: "s", kind: "note", content: "x", source: { type: "test" } },
    });
    expect(o.json.meta.replayed).toBe(false);
    const { replayed: _r, ...noReplayed } = o.json.meta;
    await expect(check("POST", "/v1/observations", o.status, { ...o.json, meta: noReplayed })).rejects.toThrow(
      /meta does not match/,
    );
  });
});

describe("the operator console's address", () => {
  it("redirects /console to /console/ (query kept) for GET and HEAD; other methods and paths stay API answers", async () => {
    for (const method of ["GET", "HEAD"]) {
      const r = await SELF.fetch("http://svc.test/console?x=1", { method, redirect: "manual" });
      expect(r.status).toBe(308);
      expect(r.headers.get("location")).toBe("/console/?x=1");
      expect(r.headers.get("x-request-id")).toMatch(/^req_[0-9a-f]{32}$/);
      await r.arrayBuffer();
    }
    expectError(await call("POST", "/console"), 404, "NOT_FOUND");
    expectError(await call("GET", "/consoles"), 404, "NOT_FOUND");
  });
});
