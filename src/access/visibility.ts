// The one answer to "may this caller read this record?" used by every read path.
// team: every principal of the organization holding the route's read scope.
// private: only the principal that wrote it (explicit grants extend this in the access-model work).
import type { Caller } from "../org/request";

export const VISIBILITIES = ["private", "team"] as const;
export type Visibility = (typeof VISIBILITIES)[number];
export const DEFAULT_VISIBILITY: Visibility = "team";

export interface Owned {
  visibility: string;
  owner: string;
}

export const canRead = (caller: Caller, record: Owned): boolean =>
  record.visibility === "team" || record.owner === caller.principalId;

/**
 * SQL form of canRead for queries that must filter before search and pagination.
 * Returns the clause and its single bind value.
 */
export function readableWhere(caller: Caller, alias: string, ownerColumn = "author_id"): [string, string] {
  return [`(${alias}.visibility = 'team' OR ${alias}.${ownerColumn} = ?)`, caller.principalId];
}
