// Building blocks of the response schemas (each domain's schema.ts): what answers look like, published
// in docs/openapi.json and checked against every success answer of the test suite (test/helpers.ts).
// Objects are strict, so a field renamed, added or dropped in a handler fails the suite until the
// schema says so.
import { z } from "zod";
import { ERROR_STATUS, type ErrorCode } from "./errors";
import { ID_PREFIX } from "./ids";

/** A record id: prefix + 32 lowercase hex. Naming `what` gives input validation its teaching message. */
export const idOf = (prefix: string, what?: string) =>
  z
    .string()
    .regex(new RegExp(`^${prefix}[0-9a-f]{32}$`), what && `must be a ${what} id (${prefix} + 32 lowercase hex)`);
/** A timestamp the service wrote (toISOString). */
export const timestamp = z.string().regex(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
export const contentHash = z.string().regex(/^sha256:[0-9a-f]{64}$/);
export const count = z.number().int().nonnegative();
/** Who wrote, created or owns a record. */
export const principalId = idOf(ID_PREFIX.principal);
/** Metadata objects whose keys depend on the record kind (event payloads, audit metadata, policy rules). */
export const openObject = z.record(z.string(), z.unknown());

/** A page of a collection: `{ <key>: [...], has_more, next_cursor }`. */
export const pageOf = <K extends string, T extends z.ZodType>(key: K, item: T) =>
  z.strictObject({ [key]: z.array(item), has_more: z.boolean(), next_cursor: z.string().nullable() } as {
    [P in K]: z.ZodArray<T>;
  } & { has_more: z.ZodBoolean; next_cursor: z.ZodNullable<z.ZodString> });

/** Every failure: `{ error: { code, message }, meta }` (src/http/envelope.ts errorResponse). */
export const errorEnvelope = z.strictObject({
  error: z.strictObject({
    code: z.enum(Object.keys(ERROR_STATUS) as [ErrorCode, ...ErrorCode[]]),
    message: z.string().describe("Names the field, the allowed values and the next step where one applies."),
  }),
  meta: z
    .looseObject({ request_id: idOf(ID_PREFIX.request) })
    .describe("Some errors add detail here (e.g. 503 `UNAVAILABLE`: `pending`, `retryable`)."),
});

/** The `meta` of a route with nothing to add: one named schema in docs/openapi.json. */
const requestMeta = z.strictObject({ request_id: idOf(ID_PREFIX.request) }).meta({ id: "ResponseMeta" });

/**
 * A success answer's `meta`: `request_id`, `replayed` on a route that honours Idempotency-Key (false on
 * the first answer, true on a replay), and what the route declares in `responseMeta`; nothing else.
 */
export const successMetaOf = (r: { idempotent?: boolean; responseMeta?: z.ZodRawShape }) =>
  !r.idempotent && !r.responseMeta
    ? requestMeta
    : z.strictObject({
        request_id: idOf(ID_PREFIX.request),
        ...(r.idempotent ? { replayed: z.boolean() } : {}),
        ...(r.responseMeta ?? {}),
      });
