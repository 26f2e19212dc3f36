// JSON parsing and zod validation into 400 VALIDATION_ERROR messages that name the field.
import { z } from "zod";
import { ApiError } from "./errors";

export function describeZodError(error: z.ZodError): string {
  const issue = error.issues[0];
  const field = issue.path.length ? issue.path.join(".") : "body";
  let message = issue.message;
  if (issue.code === "invalid_type" && /received undefined/i.test(message)) message = "is required";
  return `Invalid field "${field}": ${message}.`.replace(/\.\.$/, ".");
}

/**
 * The path of the first string (or object key) in `value` that is not well-formed Unicode, i.e. holds
 * a lone UTF-16 surrogate (JSON's "\ud800" escape can produce one; UTF-8 bytes never can). Such a
 * string cannot be stored, hashed and exported consistently, so no field may carry one.
 */
// With the u flag a surrogate pair is one code point, so only lone surrogates match.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
const wellFormed = (s: string) => !LONE_SURROGATE.test(s);

export function illFormedPath(value: unknown, path: (string | number)[] = []): (string | number)[] | null {
  if (typeof value === "string") return wellFormed(value) ? null : path;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = illFormedPath(value[i], [...path, i]);
      if (found) return found;
    }
  } else if (value !== null && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (!wellFormed(k)) return [...path, k];
      const found = illFormedPath(v, [...path, k]);
      if (found) return found;
    }
  }
  return null;
}

/**
 * Every validation runs through here (bodies, queries, MCP tool arguments, import lines): first the
 * Unicode rule for all text, then the schema. Answers the data or a message naming the field.
 */
export function validate<S extends z.ZodType>(schema: S, value: unknown):
  { success: true; data: z.infer<S> } | { success: false; message: string } {
  const bad = illFormedPath(value);
  if (bad) {
    const field = bad.length ? bad.join(".").replace(new RegExp(LONE_SURROGATE, "gu"), "\uFFFD") : "body";
    return { success: false, message: `Invalid field "${field}": must be well-formed Unicode (it holds a lone UTF-16 surrogate).` };
  }
  const result = schema.safeParse(value);
  return result.success ? { success: true, data: result.data } : { success: false, message: describeZodError(result.error) };
}

export function parseWith<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const result = validate(schema, value);
  if (!result.success) throw new ApiError("VALIDATION_ERROR", result.message);
  return result.data;
}

export function parseJsonBody(text: string | null, optional: boolean): unknown {
  if (text == null || text.trim() === "") {
    if (optional) return {};
    throw new ApiError("VALIDATION_ERROR", "Request body is required and must be a JSON object.");
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError("VALIDATION_ERROR", "Request body is not valid JSON.");
  }
}

/** Query strings: first value of each name. */
export function queryObject(url: URL): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of url.searchParams) if (!(k in out)) out[k] = v;
  return out;
}

/** Common field schemas. */
export const nonEmpty = (max: number) => z.string().trim().min(1, "must not be empty").max(max, `must be at most ${max} characters`);
export const limitParam = (min: number, max: number, dflt: number) =>
  z.coerce.number({ error: `must be an integer from ${min} to ${max}` }).int(`must be an integer from ${min} to ${max}`)
    .min(min, `must be an integer from ${min} to ${max}`).max(max, `must be an integer from ${min} to ${max}`).default(dflt);
