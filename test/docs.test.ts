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

it("publishes a response schema for the memory loop routes", () => {
  const withResponse = ROUTES.filter((r) => r.auth === "key" && r.response).map((r) => `${r.method} ${r.path}`);
  expect(withResponse).toEqual(expect.arrayContaining(["POST /v1/observations", "POST /v1/consolidations", "POST /v1/context/compile",
    "POST /v1/context/:id/feedback", "GET /v1/memories", "POST /v1/projects/resolve"]));
});
