import { expect, it } from "vitest";
import { renderApiDoc } from "../src/docs/api-doc";
import { renderOpenApi } from "../src/docs/openapi";
import { REVISION } from "../src/domains/health/routes";
import { ROUTES } from "../src/routes";

it("keeps docs/API.md generated from the route table", async () => {
  await expect(renderApiDoc(ROUTES)).toMatchFileSnapshot("../docs/API.md");
});

it("keeps docs/openapi.json generated from the same route table (validated by scripts/test/openapi.test.mjs)", async () => {
  await expect(JSON.stringify(renderOpenApi(ROUTES, REVISION), null, 2) + "\n").toMatchFileSnapshot("../docs/openapi.json");
});

it("declares the success answers of every route: response schemas per status, or NDJSON lines", () => {
  const undeclared = ROUTES.filter((r) => !(r.auth === "key" && r.ndjson ? r.ndjsonLines : r.response)).map((r) => `${r.method} ${r.path}`);
  expect(undeclared, "add `response: { <status>: schema }` to these routes (src/org/route.ts)").toEqual([]);
});
