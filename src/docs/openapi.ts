// docs/openapi.json (OpenAPI 3.1) is generated from the route table and its zod schemas, like
// docs/API.md: test/docs.test.ts keeps the file in sync (`npx vitest run -u test/docs.test.ts`
// rewrites it) and scripts/test/openapi.test.mjs validates it with an OpenAPI schema validator.
import { z } from "zod";
import type { RouteDef } from "../org/route";
import { errorEnvelope as errorEnvelopeSchema, successMetaOf } from "../http/shapes";

const jsonSchema = (schema: z.ZodType, io: "input" | "output") => {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as Record<string, unknown>;
  return rest;
};

const openApiPath = (path: string) => path.replace(/:([A-Za-z_]+)/g, "{$1}");
const operationId = (r: RouteDef) =>
  (r.method.toLowerCase() + r.path.replace(/:([A-Za-z_]+)/g, "by_$1").split(/[^A-Za-z0-9]+/).filter(Boolean)
    .map((s) => s[0].toUpperCase() + s.slice(1)).join(""));
const tagOf = (path: string) => (path.startsWith("/v1/") ? path.split("/")[2] : path.split("/")[1] || "root");

/** Request examples for the memory loop, the first hour of every user (the README's quickstart). */
const EXAMPLES: Record<string, unknown> = {
  "POST /v1/observations": { subject_id: "user-42", kind: "message", content: "I prefer tea in the morning.", source: { type: "chat", ref: "msg-981" } },
  "POST /v1/consolidations": { subject_id: "user-42", claims: [{ kind: "preference", statement: "Prefers tea in the morning",
    sources: [{ observation_id: "obs_00000000000000000000000000000000", relation: "supports" }] }] },
  "POST /v1/context/compile": { query: "what does user-42 drink in the morning", subject_id: "user-42", token_budget: 500 },
  "POST /v1/context/{id}/feedback": { outcome: "useful" },
  "POST /v1/handoffs": { to_principal_id: "prn_00000000000000000000000000000000", context_id: "ctx_00000000000000000000000000000000", note: "Continue the onboarding" },
  "POST /v1/projects/resolve": { reference: "onboarding", create: true },
};

const errorEnvelope = {
  ...jsonSchema(errorEnvelopeSchema, "output"),
  example: { error: { code: "VALIDATION_ERROR", message: 'Invalid field "kind": must be one of: "message", "tool_result", "document", "event", "note".' },
    meta: { request_id: "req_00000000000000000000000000000000" } },
};

const envelope = (data: unknown, r: RouteDef) => ({
  type: "object",
  required: ["data", "meta"],
  properties: { data, meta: jsonSchema(successMetaOf(r), "output") },
});

function operation(r: RouteDef) {
  const params = [...r.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => ({ name: m[1], in: "path", required: true, schema: { type: "string" } }));
  const op: Record<string, unknown> = {
    operationId: operationId(r),
    summary: r.summary,
    tags: [tagOf(r.path)],
    security: r.auth === "public" ? [] : [{ bearer: [] }],
  };
  if (r.auth === "public") {
    op.parameters = params;
    op.responses = { ...successResponses(r), "4XX": { $ref: "#/components/responses/Error" }, "5XX": { $ref: "#/components/responses/Error" } };
    return op;
  }
  if (r.query) {
    const q = jsonSchema(r.query, "input") as { properties?: Record<string, any>; required?: string[] };
    for (const [name, schema] of Object.entries(q.properties ?? {})) {
      const { description, ...rest } = schema;
      params.push({ name, in: "query", required: (q.required ?? []).includes(name), schema: rest, ...(description ? { description } : {}) } as any);
    }
  }
  op.parameters = params;
  if (r.idempotent) (op.parameters as unknown[]).push({ $ref: "#/components/parameters/IdempotencyKey" });
  const example = EXAMPLES[`${r.method} ${openApiPath(r.path)}`];
  if (r.body)
    op.requestBody = { required: !r.bodyOptional, content: { "application/json": { schema: jsonSchema(r.body, "input"), ...(example ? { example } : {}) } } };
  else if (r.rawBody)
    // A rawBodySchema route (federation pull and push) reads a JSON object whose exact bytes it verifies.
    op.requestBody = { required: true, content: { "application/json": { schema: r.rawBodySchema ? jsonSchema(r.rawBodySchema, "input") : {} } } };
  const error = r.bareResponse
    ? { description: "A JSON-RPC error body (Origin, Accept, Content-Type, parse and protocol-version failures), or the error envelope (credential and scope failures).",
      content: { "application/json": { schema: { oneOf: [{ $ref: "#/components/schemas/Error" }, { type: "object" }] } } } }
    : { $ref: "#/components/responses/Error" };
  op.responses = { ...successResponses(r), "4XX": error, "5XX": { $ref: "#/components/responses/Error" } };
  return op;
}

const STATUS_TEXT: Record<string, string> = { 200: "OK", 201: "Created", 202: "Accepted", 204: "No Content" };

/** One entry per success status the route declares: its envelope (or bare body), NDJSON lines, or no body. */
function successResponses(r: RouteDef): Record<string, unknown> {
  if (r.auth === "key" && r.ndjson) {
    const lines = Object.entries(r.ndjsonLines ?? {}).map(([type, schema]) => ({ title: type, ...jsonSchema(schema, "output") }));
    return { 200: { description: "OK: NDJSON, one JSON object per line; each line matches one schema of `x-ndjson-lines` (a header line first).",
      content: { "application/x-ndjson": { schema: { type: "string" }, "x-ndjson-lines": { oneOf: lines } } } } };
  }
  const out: Record<string, unknown> = {};
  for (const [status, schema] of Object.entries(r.response ?? {})) {
    if (schema === null || schema === undefined) { out[status] = { description: `${STATUS_TEXT[status]}: an empty body.` }; continue; }
    const body = jsonSchema(schema, "output");
    out[status] = r.bareResponse
      ? { description: `${STATUS_TEXT[status]}: a JSON-RPC 2.0 response (an array of them for a batch).`, content: { "application/json": { schema: body } } }
      : { description: `${STATUS_TEXT[status]}: the \`{ data, meta }\` envelope.`, content: { "application/json": { schema: envelope(body, r) } } };
  }
  return out;
}

export function renderOpenApi(routes: readonly RouteDef[], version: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) (paths[openApiPath(r.path)] ??= {})[r.method.toLowerCase()] = operation(r);
  return {
    openapi: "3.1.0",
    info: {
      title: "svc-memory",
      version,
      description: "Agent memory service: append evidence, consolidate claims, compile them into a token budget with provenance. " +
        "Generated from the route table (src/routes.ts); docs/API.md is the same table in prose. Every answer is an envelope: " +
        "`{ data, meta: { request_id } }` or `{ error: { code, message }, meta }`.",
    },
    servers: [{ url: "http://127.0.0.1:8787", description: "npm start" }],
    security: [{ bearer: [] }],
    paths,
    components: {
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer", description: "An API key (`svc_sk_…`) or a dashboard session token." },
      },
      parameters: {
        IdempotencyKey: { name: "Idempotency-Key", in: "header", required: false, schema: { type: "string", maxLength: 200 },
          description: "Retry safely: a repeat with the same key and body answers the first result." },
      },
      schemas: { Error: errorEnvelope },
      responses: {
        Error: { description: "An error envelope.", content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } },
      },
    },
  };
}
