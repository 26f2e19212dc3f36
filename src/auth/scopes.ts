// Scope names. A key holds a list of these, or "*" for all of them.
import { z } from "zod";
import { SCOPES } from "./scope-names";

export { SCOPES };

export type Scope = (typeof SCOPES)[number];
export const ALL_SCOPES = "*";

export const scopeSchema = z.enum(SCOPES);
export const scopesSchema = z.union([
  z.literal(ALL_SCOPES),
  z
    .array(z.union([scopeSchema, z.literal(ALL_SCOPES)]))
    .min(1)
    .max(SCOPES.length + 1),
]);

/** Stored form: ["*"] or a de-duplicated, sorted list. */
export function normalizeScopes(input: "*" | string[]): string[] {
  if (input === ALL_SCOPES || input.includes(ALL_SCOPES)) return [ALL_SCOPES];
  return [...new Set(input)].sort();
}

export const hasScope = (held: readonly string[], needed: string): boolean =>
  held.includes(ALL_SCOPES) || held.includes(needed);

/** Every scope in `wanted` is held by `held`. */
export const holdsAll = (held: readonly string[], wanted: readonly string[]): boolean =>
  held.includes(ALL_SCOPES) || (!wanted.includes(ALL_SCOPES) && wanted.every((s) => held.includes(s)));

export const missingScopeMessage = (scope: string) => `Missing required scope "${scope}".`;
