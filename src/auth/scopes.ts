// Scope names. A key holds a list of these, or "*" for all of them.
import { z } from "zod";

export const SCOPES = [
  "projects:resolve", "projects:create", "projects:read",
  "observations:write", "observations:purge",
  "claims:write", "context:compile", "handoffs:read", "handoffs:write", "feedback:write", "evidence:read",
  "views:compile", "checkpoints:read", "checkpoints:write", "keys:manage", "principals:read",
  "subjects:read", "grants:read", "grants:write", "models:read", "models:probe",
  "export:read", "import:write", "workspaces:read", "workspaces:write", "memberships:read", "memberships:write",
  "leases:read", "leases:write", "mcp:call", "events:read", "governance:read", "governance:write",
  "approvals:read", "approvals:write", "approvals:approve", "releases:read", "releases:write", "releases:approve",
  "channel:compile", "retention:write", "identity:read", "identity:write", "audit:read", "audit:export",
  "federation:read", "federation:write", "webhooks:read", "webhooks:write", "index:write", "enrichment:write",
] as const;

export type Scope = (typeof SCOPES)[number];
export const ALL_SCOPES = "*";

export const scopeSchema = z.enum(SCOPES);
export const scopesSchema = z.union([
  z.literal(ALL_SCOPES),
  z.array(z.union([scopeSchema, z.literal(ALL_SCOPES)])).min(1).max(SCOPES.length + 1),
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
