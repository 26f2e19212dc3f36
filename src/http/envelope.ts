// Response envelopes: { data, meta } and { error: { code, message }, meta }, always with the request id
// in meta and in x-request-id, cache-control: no-store, and a JSON content type.
import { ApiError, ERROR_STATUS, type ErrorBody, INTERNAL_MESSAGE } from "./errors";

export const JSON_TYPE = "application/json; charset=utf-8";

export function baseHeaders(requestId: string, contentType = JSON_TYPE): Headers {
  return new Headers({ "content-type": contentType, "cache-control": "no-store", "x-request-id": requestId });
}

/** The exact bytes of a success envelope; a handler that signs its response signs this text. */
export const envelopeText = (requestId: string, data: unknown, meta: Record<string, unknown> = {}): string =>
  JSON.stringify({ data, meta: { ...meta, request_id: requestId } });

export function dataResponse(
  requestId: string,
  status: number,
  data: unknown,
  meta: Record<string, unknown> = {},
): Response {
  // Every success answer comes through here: a plain object saves building a Headers object the
  // Response would copy anyway.
  return new Response(envelopeText(requestId, data, meta), {
    status,
    headers: { "content-type": JSON_TYPE, "cache-control": "no-store", "x-request-id": requestId },
  });
}

export function errorResponse(
  requestId: string,
  error: ErrorBody | ApiError,
  extraHeaders?: Record<string, string>,
): Response {
  const body = error instanceof ApiError ? error.toBody() : error;
  const status = ERROR_STATUS[body.code] ?? 500;
  const message = body.code === "INTERNAL" ? INTERNAL_MESSAGE : body.message;
  const headers = baseHeaders(requestId);
  for (const [k, v] of Object.entries(extraHeaders ?? {})) headers.set(k, v);
  return new Response(
    JSON.stringify({ error: { code: body.code, message }, meta: { ...(body.meta ?? {}), request_id: requestId } }),
    { status, headers },
  );
}
