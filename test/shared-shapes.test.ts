// The shared field and id shapes (src/http/validate.ts, src/http/shapes.ts, src/http/ids.ts): each
// rule is declared once and used by every domain, so these tests pin the one definition and show,
// over HTTP, that the domains which had their own copy answer with it.
import { describe, expect, it } from "vitest";
import { intRange, limitParam, validate } from "../src/http/validate";
import { call, expectError, newOrg } from "./helpers";

const message = (r: ReturnType<typeof validate>) => (r.success ? null : r.message);

describe("bounded integers: one rule and one wording", () => {
  it("intRange takes integers within the bounds, refuses anything else with the same message", () => {
    const body = intRange(1, 100);
    expect(validate(body, 1)).toEqual({ success: true, data: 1 });
    expect(validate(body, 100)).toEqual({ success: true, data: 100 });
    for (const bad of [0, 101, 2.5, "5", null, true])
      expect(message(validate(body, bad)), JSON.stringify(bad)).toBe('Invalid field "body": must be an integer from 1 to 100.');
  });

  it("limitParam is the same rule over query text, with its default", () => {
    const q = limitParam(1, 200, 50);
    expect(validate(q, "7", "query")).toEqual({ success: true, data: 7 });
    expect(validate(q, undefined, "query")).toEqual({ success: true, data: 50 });
    for (const bad of ["0", "201", "2.5", "many"])
      expect(message(validate(q, bad, "query")), bad).toBe('Invalid field "query": must be an integer from 1 to 200.');
  });

  it("every domain that takes a bounded integer in a body answers with the shared wording", async () => {
    const org = await newOrg();
    const cases: [string, Record<string, unknown>, string][] = [
      ["/v1/index/drain", { limit: "ten" }, 'Invalid field "limit": must be an integer from 1 to 100.'],
      ["/v1/enrichment/drain", { limit: 51 }, 'Invalid field "limit": must be an integer from 1 to 50.'],
      ["/v1/leases", { resource_type: "r", resource_id: "1", ttl_seconds: "60" }, 'Invalid field "ttl_seconds": must be an integer from 10 to 86400.'],
      ["/v1/webhooks/deliver", { limit: 0 }, 'Invalid field "limit": must be an integer from 1 to 200.'],
    ];
    for (const [path, body, expected] of cases) {
      const r = await call("POST", path, { key: org.api_key, body });
      expectError(r, 400, "VALIDATION_ERROR");
      expect(r.json.error.message, path).toBe(expected);
    }
  });
});
