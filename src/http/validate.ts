// JSON parsing and zod validation into 400 VALIDATION_ERROR messages that name the field.
import { z } from "zod";
import { ApiError } from "./errors";

/** What the root of a validated value is called in messages: "body" over HTTP, "arguments" for MCP tools. */
export type Root = "body" | "query" | "arguments";

/** At most this many problems are named in one message; the rest are counted. */
export const MAX_REPORTED_ISSUES = 10;

function describeIssue(issue: z.core.$ZodIssue, root: Root): string {
  if (issue.code === "unrecognized_keys") {
    const where = issue.path.length ? ` in "${issue.path.join(".")}"` : "";
    const what = root === "query" ? "query parameter" : root === "arguments" ? "argument" : "field";
    return issue.keys.map((k) => `Unknown ${what} "${k}"${where}.`).join(" ");
  }
  const field = issue.path.length ? issue.path.join(".") : root;
  let message = issue.message;
  if (issue.code === "invalid_type" && /received undefined/i.test(message)) message = "is required";
  // Enums and literals: always name what is allowed, even where a schema set its own message.
  if (issue.code === "invalid_value" && issue.values.length)
    message = `must be one of: ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
  return `Invalid field "${field}": ${message}.`.replace(/\.\.$/, ".");
}

/** Every problem (up to MAX_REPORTED_ISSUES) in one message, so a client fixes its request in one round trip. */
export function describeZodError(error: z.ZodError, root: Root = "body"): string {
  const shown = error.issues.slice(0, MAX_REPORTED_ISSUES).map((i) => describeIssue(i, root));
  const rest = error.issues.length - shown.length;
  return shown.join(" ") + (rest > 0 ? ` (${rest} more problem${rest === 1 ? "" : "s"} not shown.)` : "");
}

/**
 * The path of the first string (or object key) in `value` that is not well-formed Unicode, i.e. holds
 * a lone UTF-16 surrogate (JSON's "\ud800" escape can produce one; UTF-8 bytes never can). Such a
 * string cannot be stored, hashed and exported consistently, so no field may carry one.
 */
// With the u flag a surrogate pair is one code point, so only lone surrogates match.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
const wellFormed = (s: string) => !LONE_SURROGATE.test(s);

export function illFormedPath(value: unknown): (string | number)[] | null {
  // Depth-first in document order with an explicit stack, never recursion: no input can exhaust the
  // call stack here. Each entry links to its parent's, so a path is built only for the one reported.
  // An object's key is checked when the walk reaches its value.
  type Link = { segment: string | number; parent: Link | undefined } | undefined;
  type Step = { value: unknown; at?: Link; key?: string };
  const pathOf = (at: Link) => {
    const path: (string | number)[] = [];
    for (let a = at; a; a = a.parent) path.push(a.segment);
    return path.reverse();
  };
  const stack: Step[] = [{ value }];
  while (stack.length) {
    const { value: v, at, key } = stack.pop()!;
    if ((key !== undefined && !wellFormed(key)) || (typeof v === "string" && !wellFormed(v))) return pathOf(at);
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], at: { segment: i, parent: at } });
    } else if (v !== null && typeof v === "object") {
      const entries = Object.entries(v);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [k, child] = entries[i];
        stack.push({ value: child, at: { segment: k, parent: at }, key: k });
      }
    }
  }
  return null;
}

/**
 * Every validation runs through here (bodies, queries, MCP tool arguments, import lines): first the
 * Unicode rule for all text, then the schema. Answers the data or a message naming the field.
 */
export function validate<S extends z.ZodType>(
  schema: S,
  value: unknown,
  root: Root = "body",
): { success: true; data: z.infer<S> } | { success: false; message: string } {
  const bad = illFormedPath(value);
  if (bad) {
    const field = bad.length ? bad.join(".").replace(new RegExp(LONE_SURROGATE, "gu"), "\uFFFD") : root;
    return {
      success: false,
      message: `Invalid field "${field}": must be well-formed Unicode (it holds a lone UTF-16 surrogate).`,
    };
  }
  const result = schema.safeParse(value);
  return result.success
    ? { success: true, data: result.data }
    : { success: false, message: describeZodError(result.error, root) };
}

export function parseWith<S extends z.ZodType>(schema: S, value: unknown, root: Root = "body"): z.infer<S> {
  const result = validate(schema, value, root);
  if (!result.success) throw new ApiError("VALIDATION_ERROR", result.message);
  return result.data;
}

/** Arrays and objects nest at most this deep in any JSON a request carries. */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether JSON text nests arrays and objects deeper than `max`: one pass over the characters, counting
 * brackets outside strings. It parses nothing, so it cannot recurse; text it passes (and JSON.parse
 * accepts) is at most `max` deep, which every later walk (validation, canonical JSON) can afford.
 */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash escapes the next character, a quote included
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/**
 * The one parse of JSON a request carries (bodies, the MCP transport, push, import lines): too deep
 * nesting is a 400 VALIDATION_ERROR naming `what`, thrown before JSON.parse; text that is not JSON
 * answers `{ ok: false }`, for the caller to refuse in its own protocol's words.
 */
export function parseJson(text: string, what = "Request body"): { ok: true; value: unknown } | { ok: false } {
  if (nestsDeeperThan(text, MAX_JSON_DEPTH))
    throw new ApiError(
      "VALIDATION_ERROR",
      `${what}: nested too deeply (at most ${MAX_JSON_DEPTH} levels of arrays and objects).`,
    );
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

export function parseJsonBody(text: string | null, optional: boolean): unknown {
  if (text == null || text.trim() === "") {
    if (optional) return {};
    throw new ApiError("VALIDATION_ERROR", "Request body is required and must be a JSON object.");
  }
  const parsed = parseJson(text);
  if (!parsed.ok) throw new ApiError("VALIDATION_ERROR", "Request body is not valid JSON.");
  return parsed.value;
}

/**
 * A query string against the route's query schema (none: no parameters at all). Query schemas are
 * plain objects that would silently drop a misspelt parameter, so names outside the schema's shape are
 * refused here, for every route at once, naming each.
 */
export function parseQuery(schema: z.ZodType | undefined, value: Record<string, unknown>): unknown {
  const shape = schema && "shape" in schema ? (schema.shape as Record<string, unknown>) : {};
  const unknown = Object.keys(value).filter((k) => !Object.hasOwn(shape, k));
  if (unknown.length)
    throw new ApiError(
      "VALIDATION_ERROR",
      unknown
        .slice(0, MAX_REPORTED_ISSUES)
        .map((k) => `Unknown query parameter "${k}".`)
        .join(" ") +
        (Object.keys(shape).length
          ? ` Allowed: ${Object.keys(shape).join(", ")}.`
          : " This route takes no query parameters."),
    );
  return schema ? parseWith(schema, value, "query") : undefined;
}

/** Query strings: first value of each name. */
export function queryObject(url: URL): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of url.searchParams) if (!(k in out)) out[k] = v;
  return out;
}

/** Common field schemas. */
export const nonEmpty = (max: number) =>
  z.string().trim().min(1, "must not be empty").max(max, `must be at most ${max} characters`);

/** The one wording for a bounded integer, whether the value is of the wrong type, fractional or out of range. */
const integerFrom = (min: number, max: number) => `must be an integer from ${min} to ${max}`;
const bounded = <N extends z.core.$ZodNumberInternals>(n: z._ZodNumber<N>, min: number, max: number) =>
  n.int(integerFrom(min, max)).min(min, integerFrom(min, max)).max(max, integerFrom(min, max));

/** A JSON body's integer from min to max (not coerced: "5" is refused). */
export const intRange = (min: number, max: number) => bounded(z.number({ error: integerFrom(min, max) }), min, max);
/** A query string's page size: the same rule, coerced from text, with its default. */
export const limitParam = (min: number, max: number, dflt: number) =>
  bounded(z.coerce.number({ error: integerFrom(min, max) }), min, max).default(dflt);
