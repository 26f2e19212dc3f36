// Opaque pagination cursors: base64url of the last sort key. Never offsets.
import { ApiError } from "./errors";

export function encodeCursor(key: unknown): string {
  const bytes = new TextEncoder().encode(JSON.stringify(key));
  let bin = "";
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

export function decodeCursor<T>(cursor: string, check: (v: unknown) => v is T): T {
  try {
    const bin = atob(cursor.replace(/-/g, "+").replace(/_/g, "/"));
    const value: unknown = JSON.parse(new TextDecoder().decode(Uint8Array.from(bin, (c) => c.charCodeAt(0))));
    if (check(value)) return value;
  } catch {
    // fall through
  }
  return invalidCursor();
}

/** The answer to an `after` this service did not issue (or that names nothing any more). */
export function invalidCursor(): never {
  throw new ApiError("VALIDATION_ERROR", 'Invalid field "after": not a cursor this service issued.');
}

export const isSeqCursor = (v: unknown): v is [number] => Array.isArray(v) && v.length === 1 && Number.isInteger(v[0]);

/**
 * A cursor naming the last row of the caller's own page by its id (pageOf with `[id]` as the key).
 * The route resolves it to a position itself, among the rows the caller may see, so the cursor tells
 * nothing about how many rows others have (a rowid would).
 */
export const idInCursor = (cursor: string, prefix: string): string =>
  decodeCursor(
    cursor,
    (v): v is [string] => Array.isArray(v) && v.length === 1 && typeof v[0] === "string" && v[0].startsWith(prefix),
  )[0];

/**
 * Where to continue after an id cursor: `positionOf` looks the named record up among those the caller
 * may see; when it finds none, `missing` answers (the invalid-cursor 400 unless the route says otherwise).
 */
export const positionAfter = (
  cursor: string,
  prefix: string,
  positionOf: (id: string) => number | null | undefined,
  missing: () => never = invalidCursor,
): number => positionOf(idInCursor(cursor, prefix)) ?? missing();

export const isPairCursor = (v: unknown): v is [string, string] =>
  Array.isArray(v) && v.length === 2 && v.every((x) => typeof x === "string");

/** An optional (sort value, id) cursor, e.g. (created_at, id); absent means from the start. */
export const afterPair = (after: string | undefined): [string, string] =>
  after ? decodeCursor(after, isPairCursor) : ["", ""];

/**
 * One page of a list queried with LIMIT n + 1: the first n rows, whether more exist, and the cursor
 * to continue after the last row (keyOf gives its sort key).
 */
export function pageOf<T>(rows: T[], limit: number, keyOf: (last: T) => unknown) {
  const page = rows.slice(0, limit);
  const hasMore = rows.length > limit;
  return { page, has_more: hasMore, next_cursor: hasMore ? encodeCursor(keyOf(page[page.length - 1])) : null };
}
