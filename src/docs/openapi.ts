// docs/openapi.json (OpenAPI 3.1) is generated from the route table and its zod schemas, like
// docs/API.md: test/docs.test.ts keeps the file in sync (`npx vitest run test/docs.test.ts --update=all`
// rewrites it) and scripts/test/openapi.test.mjs validates it with an OpenAPI schema validator.
// Schemas named with zod's `.meta({ id })` (the records and lists of each domain's schema.ts) become
// components.schemas entries that operations reference with $ref. Response examples are real answers
// of a local server (src/docs/response-examples.json, written by scripts/capture-response-examples.mjs).
import { z } from "zod";
import { API_TAGS } from "../http/api-tags";
import { type RouteDef, routeId } from "../org/route";
import { errorEnvelope as errorEnvelopeSchema, successMetaOf } from "../http/shapes";

type Json = Record<string, unknown>;
/** Success bodies by route id ("POST /v1/observations") and status: JSON, or the text of an NDJSON answer. */
export type ResponseExamples = Readonly<Record<string, Readonly<Record<string, unknown>>>>;
const COMPONENT = "#/components/schemas/";
/** Where an input schema's named part points until render() knows whether it differs from the output one. */
const INPUT_PENDING = "#/input-pending/";

/**
 * Converts zod schemas to JSON Schema and collects their named parts (zod's `$defs`). A named schema
 * is one component; where its input form (request bodies: defaults optional) differs from its output
 * form, the input form is a second component, `<id>Input`.
 */
class SchemaSet {
  private readonly named = { input: new Map<string, Json>(), output: new Map<string, Json>() };

  convert(schema: z.ZodType, io: "input" | "output"): Json {
    const {
      $schema: _ignored,
      $defs,
      ...rest
    } = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as Json & { $defs?: Record<string, Json> };
    const prefix = io === "output" ? COMPONENT : INPUT_PENDING;
    for (const [id, def] of Object.entries($defs ?? {})) {
      // zod names unnamed schemas it must reference (cycles) __schemaN: none may reach the document.
      if (id.startsWith("__schema"))
        throw new Error(`a recursive schema needs a name (.meta({ id })): ${JSON.stringify(def).slice(0, 200)}`);
      const seen = this.named[io].get(id);
      const json = relink(def, prefix) as Json;
      if (seen && JSON.stringify(seen) !== JSON.stringify(json))
        throw new Error(`two different schemas are named ${id}`);
      this.named[io].set(id, json);
    }
    return relink(rest, prefix) as Json;
  }

  /** The components, and the final target of every pending input reference. */
  finish(): { schemas: Record<string, Json>; inputName: (id: string) => string } {
    const inputName = (id: string) => {
      const output = this.named.output.get(id);
      return !output ||
        JSON.stringify(output) === JSON.stringify(relink(this.named.input.get(id), COMPONENT, inputName))
        ? id
        : `${id}Input`;
    };
    const schemas: Record<string, Json> = {};
    for (const [id, def] of this.named.output) schemas[id] = def;
    for (const [id, def] of this.named.input)
      if (inputName(id) !== id || !schemas[id]) schemas[inputName(id)] = relink(def, COMPONENT, inputName) as Json;
    const sorted = Object.fromEntries(
      Object.keys(schemas)
        .sort()
        .map((k) => [k, schemas[k]]),
    );
    return { schemas: sorted, inputName };
  }
}

/** A copy of `value` with zod's `#/$defs/<id>` (or a pending input reference) pointing at `prefix` + id. */
function relink(value: unknown, prefix: string, rename: (id: string) => string = (id) => id): unknown {
  if (Array.isArray(value)) return value.map((v) => relink(v, prefix, rename));
  if (!value || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => {
      if (k === "$ref" && typeof v === "string") {
        const m = /^#\/(?:\$defs|input-pending)\/(.+)$/.exec(v);
        if (m) return [k, prefix + rename(m[1])];
      }
      return [k, relink(v, prefix, rename)];
    }),
  );
}

const openApiPath = (path: string) => path.replace(/:([A-Za-z_]+)/g, "{$1}");

/** Request examples for the memory loop, the first hour of every user (the README's quickstart). */
const EXAMPLES: Record<string, unknown> = {
  "POST /v1/observations": {
    subject_id: "user-42",
    kind: "message",
    content: "I prefer tea in the morning.",
    source: { type: "chat", ref: "msg-981" },
  },
  "POST /v1/consolidations": {
    subject_id: "user-42",
    claims: [
      {
        kind: "preference",
        statement: "Prefers tea in the morning",
        sources: [{ observation_id: "obs_00000000000000000000000000000000", relation: "supports" }],
      },
    ],
  },
  "POST /v1/context/compile": {
    query: "what does user-42 drink in the morning",
    subject_id: "user-42",
    token_budget: 500,
  },
  "POST /v1/context/{id}/feedback": { outcome: "useful" },
  "POST /v1/handoffs": {
    to_principal_id: "prn_00000000000000000000000000000000",
    context_id: "ctx_00000000000000000000000000000000",
    note: "Continue the onboarding",
  },
  "POST /v1/projects/resolve": { reference: "onboarding", create: true },
};

const errorEnvelope = (schemas: SchemaSet) => ({
  ...schemas.convert(errorEnvelopeSchema, "output"),
  example: {
    error: {
      code: "VALIDATION_ERROR",
      message: 'Invalid field "kind": must be one of: "message", "tool_result", "document", "event", "note".',
    },
    meta: { request_id: "req_00000000000000000000000000000000" },
  },
});

const envelope = (data: unknown, r: RouteDef, schemas: SchemaSet) => ({
  type: "object",
  required: ["data", "meta"],
  properties: { data, meta: schemas.convert(successMetaOf(r), "output") },
});

function operation(r: RouteDef, schemas: SchemaSet, examples: ResponseExamples) {
  const params = [...r.path.matchAll(/:([A-Za-z_]+)/g)].map((m) => ({
    name: m[1],
    in: "path",
    required: true,
    schema: { type: "string" },
  }));
  const op: Record<string, unknown> = {
    operationId: r.operationId,
    summary: r.summary,
    description: r.description,
    tags: [r.tag],
    security: r.auth === "public" ? [] : [{ bearer: [] }],
  };
  if (r.auth === "public") {
    op.parameters = params;
    op.responses = {
      ...successResponses(r, schemas, examples),
      "4XX": { $ref: "#/components/responses/Error" },
      "5XX": { $ref: "#/components/responses/Error" },
    };
    return op;
  }
  if (r.query) {
    const q = schemas.convert(r.query, "input") as { properties?: Record<string, any>; required?: string[] };
    for (const [name, schema] of Object.entries(q.properties ?? {})) {
      const { description, ...rest } = schema;
      params.push({
        name,
        in: "query",
        required: (q.required ?? []).includes(name),
        schema: rest,
        ...(description ? { description } : {}),
      } as any);
    }
  }
  op.parameters = params;
  if (r.idempotent) (op.parameters as unknown[]).push({ $ref: "#/components/parameters/IdempotencyKey" });
  const example = EXAMPLES[`${r.method} ${openApiPath(r.path)}`];
  if (r.body)
    op.requestBody = {
      required: !r.bodyOptional,
      content: { "application/json": { schema: schemas.convert(r.body, "input"), ...(example ? { example } : {}) } },
    };
  else if (r.rawBody)
    // A rawBodySchema route (federation pull and push) reads a JSON object whose exact bytes it verifies.
    op.requestBody = {
      required: true,
      content: { "application/json": { schema: r.rawBodySchema ? schemas.convert(r.rawBodySchema, "input") : {} } },
    };
  const error = r.bareResponse
    ? {
        description:
          "A JSON-RPC error body (Origin, Accept, Content-Type, parse and protocol-version failures), or the error envelope (credential and scope failures).",
        content: {
          "application/json": { schema: { oneOf: [{ $ref: "#/components/schemas/Error" }, { type: "object" }] } },
        },
      }
    : { $ref: "#/components/responses/Error" };
  op.responses = {
    ...successResponses(r, schemas, examples),
    "4XX": error,
    "5XX": { $ref: "#/components/responses/Error" },
  };
  return op;
}

const STATUS_TEXT: Record<string, string> = { 200: "OK", 201: "Created", 202: "Accepted", 204: "No Content" };

/** One entry per success status the route declares: its envelope (or bare body), NDJSON lines, or no body. */
function successResponses(r: RouteDef, schemas: SchemaSet, examples: ResponseExamples): Record<string, unknown> {
  const exampleOf = (status: string | number) => {
    const example = examples[routeId(r)]?.[status];
    return example === undefined ? {} : { example };
  };
  if (r.auth === "key" && r.ndjson) {
    const lines = Object.entries(r.ndjsonLines ?? {}).map(([type, schema]) => ({
      title: type,
      ...schemas.convert(schema, "output"),
    }));
    return {
      200: {
        description:
          "OK: NDJSON, one JSON object per line; each line matches one schema of `x-ndjson-lines` (a header line first).",
        content: {
          "application/x-ndjson": { schema: { type: "string" }, ...exampleOf(200), "x-ndjson-lines": { oneOf: lines } },
        },
      },
    };
  }
  const out: Record<string, unknown> = {};
  for (const [status, schema] of Object.entries(r.response ?? {})) {
    if (schema === null || schema === undefined) {
      out[status] = { description: `${STATUS_TEXT[status]}: an empty body.` };
      continue;
    }
    const body = schemas.convert(schema, "output");
    out[status] = r.bareResponse
      ? {
          description: `${STATUS_TEXT[status]}: a JSON-RPC 2.0 response (an array of them for a batch).`,
          content: { "application/json": { schema: body, ...exampleOf(status) } },
        }
      : {
          description: `${STATUS_TEXT[status]}: the \`{ data, meta }\` envelope.`,
          content: { "application/json": { schema: envelope(body, r, schemas), ...exampleOf(status) } },
        };
  }
  return out;
}

export function renderOpenApi(routes: readonly RouteDef[], version: string, examples: ResponseExamples) {
  const schemas = new SchemaSet();
  const operations: Record<string, Record<string, unknown>> = {};
  for (const r of routes)
    (operations[openApiPath(r.path)] ??= {})[r.method.toLowerCase()] = operation(r, schemas, examples);
  const error = errorEnvelope(schemas);
  const named = schemas.finish();
  const paths = relink(operations, COMPONENT, named.inputName) as typeof operations;
  return {
    openapi: "3.1.0",
    info: {
      title: "svc-memory",
      version,
      description:
        "Agent memory service: append evidence, consolidate claims, compile them into a token budget with provenance. " +
        "Generated from the route table (src/routes.ts); docs/API.md is the same table in prose. Every answer is an envelope: " +
        "`{ data, meta: { request_id } }` or `{ error: { code, message }, meta }`.",
    },
    servers: [
      { url: "http://localhost:8787", description: "Local: `npm start` (PORT overrides 8787)." },
      {
        url: "https://{host}",
        description: 'A deployment (`npm run deploy:setup`, README "Deploy").',
        variables: {
          host: { default: "svc-memory.your-account.workers.dev", description: "The deployment's host name." },
        },
      },
    ],
    security: [{ bearer: [] }],
    tags: Object.entries(API_TAGS).map(([name, description]) => ({ name, description })),
    paths,
    components: {
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          description: "An API key (`svc_sk_…`) or a dashboard session token.",
        },
      },
      parameters: {
        IdempotencyKey: {
          name: "Idempotency-Key",
          in: "header",
          required: false,
          schema: { type: "string", maxLength: 200 },
          description: "Retry safely: a repeat with the same key and body answers the first result.",
        },
      },
      schemas: { Error: error, ...named.schemas },
      responses: {
        Error: {
          description: "An error envelope.",
          content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
        },
      },
    },
  };
}
