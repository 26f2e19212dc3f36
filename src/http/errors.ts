// Error codes and their HTTP statuses (SPEC "Errors"). Domain code returns or throws ApiError for
// expected failures; anything else is a bug and becomes 500 INTERNAL with a fixed message.

export const ERROR_STATUS = {
  VALIDATION_ERROR: 400,
  UNRESOLVED_REFERENCE: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  PAYLOAD_TOO_LARGE: 413,
  INTERNAL: 500,
  NOT_READY: 503,
  UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

/** The plain-data form that crosses the Durable Object RPC boundary (errors lose fields across RPC). */
export interface ErrorBody {
  code: ErrorCode;
  message: string;
  meta?: Record<string, unknown>;
}

export class ApiError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly meta?: Record<string, unknown>,
  ) {
    super(message);
  }
  get status(): number {
    return ERROR_STATUS[this.code];
  }
  toBody(): ErrorBody {
    return { code: this.code, message: this.message, ...(this.meta ? { meta: this.meta } : {}) };
  }
}

export const INTERNAL_MESSAGE = "Request could not be completed.";

export const notFound = (what = "Record") => new ApiError("NOT_FOUND", `${what} not found.`);
export const invalid = (message: string) => new ApiError("VALIDATION_ERROR", message);
export const forbidden = (message: string) => new ApiError("FORBIDDEN", message);
export const conflict = (message: string) => new ApiError("CONFLICT", message);

/**
 * 400 UNRESOLVED_REFERENCE: a reference in the body names nothing the caller can see. Missing,
 * foreign-organization and invisible records get this same answer. Names at most three ids.
 */
export const unresolved = (type = "record", ids: readonly string[] = []) =>
  new ApiError(
    "UNRESOLVED_REFERENCE",
    (ids.length
      ? `Unresolved ${type} reference: ${ids.slice(0, 3).join(", ")}${ids.length > 3 ? ", …" : ""}.`
      : `A referenced ${type} does not exist.`) + (HOW_TO_CREATE[type] ? ` ${HOW_TO_CREATE[type]}` : ""),
  );

/** The next step for a reference to something the caller may simply not have created yet. */
const HOW_TO_CREATE: Record<string, string> = {
  project:
    'Create a project with POST /v1/projects/resolve and {"reference": "<your name>", "create": true}; use the project_id it returns.',
};

/**
 * Translate a storage failure into the SPEC's codes. SQLite messages are matched, never returned:
 * the client only sees our own message.
 */
export function translateStorageError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  const text = String((err as Error)?.message ?? err);
  if (/FOREIGN KEY constraint failed/i.test(text)) return unresolved();
  if (/UNIQUE constraint failed|constraint failed/i.test(text))
    return new ApiError("CONFLICT", "The write conflicts with an existing record.");
  if (/no such table|unable to open database|readonly database|read-only/i.test(text))
    return new ApiError("UNAVAILABLE", "Storage is unavailable.");
  return new ApiError("INTERNAL", INTERNAL_MESSAGE);
}
