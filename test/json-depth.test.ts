// JSON nesting deeper than MAX_JSON_DEPTH is a 400 VALIDATION_ERROR on every route (public ones, /mcp,
// raw-body routes and NDJSON import lines included), decided by a scan of the text before any parse or
// walk; the walks that run after it (validate's Unicode check) use no recursion either.
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { MAX_JSON_DEPTH, nestsDeeperThan, validate } from "../src/http/validate";
import { call, expectError, newOrg, obs } from "./helpers";

/** `depth` levels of arrays, innermost empty. */
const nested = (depth: number) => "[".repeat(depth) + "]".repeat(depth);
const DEEP = 20_000;

function expectTooDeep(r: Awaited<ReturnType<typeof call>>, what = "Request body") {
  expectError(r, 400, "VALIDATION_ERROR");
  expect(r.json.error.message).toBe(
    `${what}: nested too deeply (at most ${MAX_JSON_DEPTH} levels of arrays and objects).`,
  );
}

const json = { "content-type": "application/json" };
const mcpHeaders = { ...json, accept: "application/json, text/event-stream" };

describe("JSON nesting depth", () => {
  it("counts brackets outside strings only, escaped quotes included", () => {
    expect(nestsDeeperThan(nested(64), 64)).toBe(false);
    expect(nestsDeeperThan(nested(65), 64)).toBe(true);
    expect(nestsDeeperThan(`{"a":${nested(63)}}`, 64)).toBe(false);
    expect(nestsDeeperThan(`{"a":${nested(64)}}`, 64)).toBe(true);
    // Brackets inside a string are text; an escaped quote does not end the string, an escaped backslash does not escape the quote after it.
    expect(nestsDeeperThan(JSON.stringify({ s: "[".repeat(500) }), 64)).toBe(false);
    expect(nestsDeeperThan(JSON.stringify({ s: `"${"{".repeat(500)}` }), 64)).toBe(false);
    expect(nestsDeeperThan(`{"s":"\\\\",${`"t":${nested(64)}`}}`, 64)).toBe(true);
  });

  it("the Unicode walk of validate runs without recursion, at any depth", () => {
    let value: unknown = ["\uD800"];
    for (let i = 0; i < DEEP; i++) value = [value];
    const r = validate(z.unknown(), value);
    expect(r.success).toBe(false);
    if (!r.success)
      expect(r.message).toBe(
        `Invalid field "${Array(DEEP + 1)
          .fill(0)
          .join(".")}": must be well-formed Unicode (it holds a lone UTF-16 surrogate).`,
      );
    // Keys are still checked, in document order, before the values beneath them.
    const keyed = validate(z.unknown(), { a: "ok", b: { "\uDC00": "x", c: "\uD800" } });
    expect(keyed.success || keyed.message).toBe(
      'Invalid field "b.\uFFFD": must be well-formed Unicode (it holds a lone UTF-16 surrogate).',
    );
  });

  it("refuses 20,000 levels on the public login route, /mcp, an authenticated route and push", async () => {
    const org = await newOrg();
    expectTooDeep(
      await call("POST", "/v1/dashboard-sessions", {
        raw: `{"username":${nested(DEEP)},"password":"x"}`,
        headers: json,
      }),
    );
    expectTooDeep(
      await call("POST", "/mcp", {
        key: org.api_key,
        headers: mcpHeaders,
        raw: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":${nested(DEEP)}}}`,
      }),
    );
    expectTooDeep(
      await call("POST", "/v1/observations", {
        key: org.api_key,
        headers: json,
        raw: `{"subject_id":"s","kind":"note","content":${nested(DEEP)},"source":{"type":"t"}}`,
      }),
    );
    expectTooDeep(
      await call("POST", "/v1/federation/push", {
        key: org.api_key,
        headers: json,
        raw: `{"peer_id":${nested(DEEP)}}`,
      }),
    );
  });

  it("draws the line between 64 and 65 levels, wherever the body is parsed", async () => {
    const org = await newOrg();
    // 64 levels (the body object is the first): parsed, then refused by the schema for what it says.
    const at = (depth: number) =>
      `{"subject_id":"s","kind":"note","content":"c","source":{"type":"t"},"extra":${nested(depth - 1)}}`;
    const fits = await call("POST", "/v1/observations", { key: org.api_key, raw: at(64), headers: json });
    expectError(fits, 400, "VALIDATION_ERROR");
    expect(fits.json.error.message).toBe('Unknown field "extra".');
    expectTooDeep(await call("POST", "/v1/observations", { key: org.api_key, raw: at(65), headers: json }));
    // Brackets inside strings are not nesting: the record is stored as written.
    const content = `"[{${"[".repeat(200)}`;
    const stored = await call("POST", "/v1/observations", { key: org.api_key, body: obs("s", content) });
    expect(stored.status, stored.text).toBe(201);
    // /mcp: 64 levels answer as JSON-RPC, 65 as the service's validation error.
    const ping = (depth: number) => `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":${nested(depth - 2)}}}`;
    const pong = await call("POST", "/mcp", { key: org.api_key, raw: ping(64), headers: mcpHeaders });
    expect(pong.status, pong.text).toBe(200);
    expect(pong.json).toMatchObject({ jsonrpc: "2.0", id: 1 });
    expectTooDeep(await call("POST", "/mcp", { key: org.api_key, raw: ping(65), headers: mcpHeaders }));
    // The public login route.
    const login = (depth: number) =>
      call("POST", "/v1/dashboard-sessions", {
        raw: `{"username":"u","password":"p","x":${nested(depth - 1)}}`,
        headers: json,
      });
    const wrong = await login(64);
    expectError(wrong, 400, "VALIDATION_ERROR");
    expect(wrong.json.error.message).toBe('Unknown field "x".');
    expectTooDeep(await login(65));
  });

  it("refuses an NDJSON import line nested too deeply, naming the line", async () => {
    const org = await newOrg();
    const header = JSON.stringify({ type: "svc.export.header", format_version: 1 });
    const importLines = (...lines: string[]) =>
      call("POST", "/v1/import", {
        key: org.api_key,
        raw: lines.join("\n"),
        headers: { "content-type": "application/x-ndjson" },
      });
    expectTooDeep(await importLines(header, `{"type":"project","x":${nested(DEEP)}}`), "Line 2");
    expectTooDeep(await importLines(header, `{"type":"project","x":${nested(64)}}`), "Line 2");
    const fits = await importLines(header, `{"type":"project","x":${nested(63)}}`);
    expectError(fits, 400, "VALIDATION_ERROR");
    expect(fits.json.error.message).toMatch(/^Line 2: .*Unknown field "x"/);
  });
});
