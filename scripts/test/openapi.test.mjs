// docs/openapi.json is a valid OpenAPI 3.1 document (test/docs.test.ts keeps it generated from the route table).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { Validator } from "@seriousme/openapi-schema-validator";

test("docs/openapi.json validates as OpenAPI 3.1", async () => {
  const doc = JSON.parse(readFileSync(new URL("../../docs/openapi.json", import.meta.url), "utf8"));
  const validator = new Validator();
  const result = await validator.validate(doc);
  assert.equal(validator.version, "3.1");
  assert.deepEqual(result.errors ?? [], [], JSON.stringify(result.errors, null, 2)?.slice(0, 2000));
  assert.equal(result.valid, true);
  // Every path template parameter is declared, and every operation is secured or explicitly public.
  for (const [path, item] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(item)) {
      const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      for (const n of names)
        assert.ok(
          op.parameters.some((p) => p.in === "path" && p.name === n),
          `${method} ${path}: ${n}`,
        );
      assert.ok(Array.isArray(op.security), `${method} ${path}`);
    }
});
