import { expect, it } from "vitest";
import type { z } from "zod";
import { renderApiDoc } from "../src/docs/api-doc";
import { renderOpenApi } from "../src/docs/openapi";
import responseExamples from "../src/docs/response-examples.json";
import { REVISION } from "../src/domains/health/routes";
import { routeId } from "../src/org/route";
import { successMetaOf } from "../src/http/shapes";
import { ROUTES } from "../src/routes";

const render = () => renderOpenApi(ROUTES, REVISION, responseExamples);

it("keeps docs/API.md generated from the route table", async () => {
  await expect(renderApiDoc(ROUTES)).toMatchFileSnapshot("../docs/API.md");
});

it("keeps docs/openapi.json generated from the same route table (validated by scripts/test/openapi.test.mjs)", async () => {
  await expect(JSON.stringify(render(), null, 2) + "\n").toMatchFileSnapshot("../docs/openapi.json");
});

it("declares the success answers of every route: response schemas per status, or NDJSON lines", () => {
  const undeclared = ROUTES.filter((r) => !(r.auth === "key" && r.ndjson ? r.ndjsonLines : r.response)).map(
    (r) => `${r.method} ${r.path}`,
  );
  expect(undeclared, "add `response: { <status>: schema }` to these routes (src/org/route.ts)").toEqual([]);
});

it("gives every operation a unique camelCase operationId, a description and one declared tag", () => {
  const doc = render();
  const declared = new Set(doc.tags.map((t) => t.name));
  const ops = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({
      at: `${method.toUpperCase()} ${path}`,
      ...(op as { operationId: string; tags: string[]; description: string }),
    })),
  );
  expect(ops.length).toBe(ROUTES.length);
  const ids = ops.map((o) => o.operationId);
  expect(
    ids.filter((id, i) => ids.indexOf(id) !== i),
    "operationIds used twice",
  ).toEqual([]);
  expect(
    ops.filter((o) => !/^[a-z]+(?:[A-Z0-9][a-z0-9]*)*$/.test(o.operationId)).map((o) => o.at),
    "not camelCase",
  ).toEqual([]);
  expect(
    ops.filter((o) => o.tags.length !== 1 || !declared.has(o.tags[0])).map((o) => o.at),
    "not in exactly one declared tag",
  ).toEqual([]);
  expect(
    ops.filter((o) => !(o.description?.length > 20)).map((o) => o.at),
    "without a description",
  ).toEqual([]);
  expect(
    [...declared].filter((t) => !ops.some((o) => o.tags[0] === t)),
    "tags no operation uses",
  ).toEqual([]);
});

it("publishes every success body as a named component schema that operations reference", () => {
  const doc = render();
  const schemas = doc.components.schemas as Record<string, unknown>;
  const inline: string[] = [];
  for (const [path, item] of Object.entries(doc.paths))
    for (const [method, op] of Object.entries(item as Record<string, any>))
      for (const [status, response] of Object.entries(op.responses as Record<string, any>)) {
        const json = response.content?.["application/json"]?.schema;
        if (!json || !/^2/.test(status)) continue;
        const body = op.operationId === "callMcp" ? json : json.properties.data;
        const name = /^#\/components\/schemas\/(\w+)$/.exec(body.$ref ?? "")?.[1];
        if (!name || !schemas[name]) inline.push(`${method.toUpperCase()} ${path} ${status}`);
      }
  expect(inline, "name the response schema with .meta({ id })").toEqual([]);
  for (const record of [
    "Claim",
    "Observation",
    "Event",
    "Webhook",
    "Delivery",
    "Principal",
    "Grant",
    "Checkpoint",
    "ClaimList",
  ])
    expect(Object.keys(schemas)).toContain(record);
  // Every reference resolves.
  const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/schemas\/(\w+)"/g)].map((m) => m[1]);
  expect(refs.filter((r) => !schemas[r])).toEqual([]);
});

it("publishes a real response example for every success status with a body, each valid against the route's schemas", () => {
  const doc = render();
  const routeIds = new Set(ROUTES.map(routeId));
  expect(
    Object.keys(responseExamples).filter((id) => !routeIds.has(id)),
    "examples of routes that do not exist",
  ).toEqual([]);
  const problems: string[] = [];
  for (const r of ROUTES) {
    const op = (doc.paths as Record<string, any>)[r.path.replace(/:([A-Za-z_]+)/g, "{$1}")][r.method.toLowerCase()];
    const bodies = r.auth === "key" && r.ndjson ? { 200: "ndjson" } : (r.response ?? {});
    for (const [status, schema] of Object.entries(bodies)) {
      if (schema === null) continue;
      const at = `${routeId(r)} ${status}`;
      const content = op.responses[status].content;
      const example = (content["application/json"] ?? content["application/x-ndjson"]).example;
      if (example === undefined) {
        problems.push(`${at}: no example (node scripts/capture-response-examples.mjs)`);
        continue;
      }
      const check = (
        value: unknown,
        against: { safeParse: (v: unknown) => { success: boolean; error?: unknown } },
        what: string,
      ) => {
        const result = against.safeParse(value);
        if (!result.success) problems.push(`${at} ${what}: ${String(result.error).slice(0, 300)}`);
      };
      if (schema === "ndjson") {
        const lines = String(example)
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l) as { type: string });
        const kinds = Object.keys(r.auth === "key" ? (r.ndjsonLines ?? {}) : {});
        if (lines[0].type !== kinds[0]) problems.push(`${at}: the first line is not the header ${kinds[0]}`);
        for (const line of lines) {
          const lineSchema = r.auth === "key" ? r.ndjsonLines?.[line.type] : undefined;
          if (lineSchema) check(line, lineSchema, `line ${line.type}`);
          else problems.push(`${at}: a line of unknown type ${line.type}`);
        }
      } else if (r.bareResponse) check(example, schema as z.ZodType, "body");
      else {
        const { data, meta, ...rest } = example as Record<string, unknown>;
        if (Object.keys(rest).length) problems.push(`${at}: beside data and meta: ${Object.keys(rest)}`);
        check(data, schema as z.ZodType, "data");
        check(meta, successMetaOf(r), "meta");
        if (r.auth === "key" && r.idempotent && (meta as { replayed?: boolean }).replayed !== (status === "200"))
          problems.push(`${at}: meta.replayed`);
      }
    }
  }
  expect(problems).toEqual([]);
});
