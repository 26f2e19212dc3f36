// The scope names alone, free of zod, so the operator console's bundle can list them too.
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
