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

export function parseWith<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw new ApiError("VALIDATION_ERROR", describeZodError(result.error));
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
