// docs/API.md is generated from the route table and the zod schemas (test/docs.test.ts keeps it in
// sync; `npx vitest run test/docs.test.ts --update=all` rewrites it).
import { z } from "zod";
import type { RouteDef } from "../org/route";

/** Each block stands alone: named schemas (zod `$defs`, components in docs/openapi.json) are written in place. */
function inlined(value: unknown, defs: Record<string, unknown>): unknown {
  if (Array.isArray(value)) return value.map((v) => inlined(v, defs));
  if (!value || typeof value !== "object") return value;
  const { $ref, $defs: _defs, ...rest } = value as Record<string, unknown>;
  const named =
    typeof $ref === "string" && $ref.startsWith("#/$defs/") ? (inlined(defs[$ref.slice(8)], defs) as object) : {};
  const own = Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, inlined(v, defs)]));
  return { ...("$schema" in own ? { $schema: own.$schema } : {}), ...named, ...own };
}

const schemaBlock = (title: string, schema: z.ZodType) => {
  const json = z.toJSONSchema(schema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  const standalone = inlined(json, (json.$defs ?? {}) as Record<string, unknown>);
  return `${title}:\n\n\`\`\`json\n${JSON.stringify(standalone, null, 2)}\n\`\`\`\n`;
};

/** The success statuses a route declares: "201, 200", "200 NDJSON", "202 empty". */
const successOf = (r: RouteDef) =>
  r.auth === "key" && r.ndjson
    ? "200 NDJSON"
    : Object.entries(r.response ?? {})
        .map(([status, schema]) => (schema === null ? `${status} empty` : status))
        .join(", ");

export function renderApiDoc(routes: readonly RouteDef[]): string {
  const out = [
    "# API routes",
    "",
    "Generated from the route table (`src/routes.ts`) and its zod schemas. Do not edit by hand. The response",
    "schemas of every status are in `docs/openapi.json`; failures are the error envelope `{ error: { code, message }, meta }`.",
    "",
    "| Method | Path | Auth | Scope | Roles | Success | Summary |",
    "| --- | --- | --- | --- | --- | --- | --- |",
  ];
  for (const r of routes) {
    const scope =
      r.auth === "public"
        ? "public"
        : r.explicitScope
          ? `${r.scope} (named by the key; \`*\` only for owner, admin)`
          : (r.scope ?? "any valid credential");
    const roles = r.auth === "key" && r.roles ? r.roles.join(", ") : "";
    // Routes limited to some dashboard session stages name them (api_key, password_change, staged, full).
    const auth = r.auth === "public" ? "none" : r.stages ? `Bearer (${r.stages.join(", ")})` : "Bearer";
    out.push(`| ${r.method} | \`${r.path}\` | ${auth} | ${scope} | ${roles} | ${successOf(r)} | ${r.summary} |`);
  }
  out.push("");
  for (const r of routes) {
    if (r.auth !== "key" || (!r.body && !r.query && !r.ndjsonLines && !r.rawBodySchema)) continue;
    out.push(`## ${r.method} ${r.path}`, "");
    if (r.idempotent) out.push("Honours `Idempotency-Key`.", "");
    if (r.query) out.push(schemaBlock("Query", r.query));
    if (r.body) out.push(schemaBlock(r.bodyOptional ? "Body (optional)" : "Body", r.body));
    if (r.rawBodySchema) out.push(schemaBlock("Body (raw bytes, validated by the route)", r.rawBodySchema));
    for (const [type, schema] of Object.entries(r.ndjsonLines ?? {}))
      out.push(schemaBlock(`NDJSON line \`${type}\``, schema));
  }
  return out.join("\n");
}
