// What each API key scope allows (one line each, from SPEC's route tables) and the Keys page's presets.
// Typed by the service's own scope list: a scope added there without a line here fails tsc.
import type { SCOPES } from "../../src/auth/scope-names";

export type Scope = (typeof SCOPES)[number];

export const SCOPE_HELP: Record<Scope, string> = {
  "projects:resolve": "Resolve a project reference to its opaque project id.",
  "projects:create": "With projects:resolve, create the project when the reference is new (create: true).",
  "projects:read": "List projects backed by readable records, and their references.",
  "observations:write": "Append observations (POST /v1/observations; the MCP tool svc_remember).",
  "observations:purge": "Purge an observation: an irreversible tombstone, blocked by a legal hold.",
  "claims:write": "Write claims by consolidation; supersede, revoke or expire them.",
  "context:compile": "Compile authorized claims into a context pack within a token budget (records a ctx_ run).",
  "handoffs:read": "List handoffs addressed to the caller and read a context handed over.",
  "handoffs:write": "Offer work to another principal; accept or reject a handoff.",
  "feedback:write": "Report on a context run or item: used, useful, irrelevant, incorrect or harmful.",
  "evidence:read": "Read a claim's supporting, contradicting and qualifying observations.",
  "views:compile": "List and search memories; compile Memory Atlas views.",
  "checkpoints:read": "Read task-state checkpoints.",
  "checkpoints:write": "Write (upsert) and delete checkpoints.",
  "keys:manage": "Mint, list and revoke API keys; create operator accounts.",
  "principals:read": "Read the principal directory (owner or admin role as well).",
  "subjects:read": "List readable subjects and their references.",
  "grants:read": "List grants; simulate access (owner role).",
  "grants:write": "Delegate read, write, approve or admin authority by grant; revoke grants.",
  "models:read": "Read the model configuration snapshot (never a credential).",
  "models:probe": "Run one bounded extraction or embedding probe.",
  "export:read": "Export projects, observations and claims as NDJSON.",
  "import:write": "Import projects, observations and claims from NDJSON.",
  "workspaces:read": "List workspaces.",
  "workspaces:write": "Create workspaces.",
  "memberships:read": "List memberships of the organization or a workspace.",
  "memberships:write": "Add or remove memberships (owner, admin, member, reader).",
  "leases:read": "List the organization's unreleased leases.",
  "leases:write": "Acquire and release leases; force-release (owner or admin).",
  "mcp:call": "Call the MCP endpoint; each tool still needs its own route's scope.",
  "events:read": "Read the event feed (metadata only).",
  "governance:read": "List policies.",
  "governance:write": "Create policies and change their status (owner or admin to create).",
  "approvals:read": "List claim approvals.",
  "approvals:write": "Submit a claim version for approval.",
  "approvals:approve": "Approve or reject a submitted claim version.",
  "releases:read": "List channels and knowledge releases.",
  "releases:write": "Create and change channels; draft knowledge releases.",
  "releases:approve": "Approve, activate and revoke knowledge releases.",
  "channel:compile": "Serve a channel's released snapshots (only its bound gateway principal).",
  "retention:write": "Place and release legal holds; apply retention.",
  "identity:read": "List identity mappings.",
  "identity:write": "Create and retire identity mappings.",
  "audit:read": "Read the audit trail (owner or admin).",
  "audit:export": "Export the audit trail as NDJSON (owner or admin).",
  "federation:read": "List federation peers, their filters and the exchange log.",
  "federation:write": "Manage federation peers and filters; pull and push.",
  "webhooks:read": "List webhooks and their deliveries.",
  "webhooks:write": "Register, pause, resume and delete webhooks; redeliver; drain the outbox.",
  "index:write": "Drain and verify the vector index (owner or admin).",
  "enrichment:write": "Drain the enrichment ledger (owner or admin).",
};

const READ_ONLY_AGENT: Scope[] = [
  "projects:resolve",
  "projects:read",
  "subjects:read",
  "context:compile",
  "views:compile",
  "evidence:read",
  "checkpoints:read",
  "handoffs:read",
  "mcp:call",
];

/** A preset fills the scope checkboxes; `all` ticks "All scopes (*)". */
export interface Preset {
  label: string;
  summary: string;
  scopes: Scope[] | "all";
}

export const PRESETS: Preset[] = [
  {
    label: "Read-only agent",
    summary:
      "reads memory (context, memories, evidence, projects, subjects, checkpoints, handoffs) and calls MCP; writes nothing but its context runs",
    scopes: READ_ONLY_AGENT,
  },
  {
    label: "Writing agent",
    summary:
      "the read-only agent, and appends observations, writes claims, feedback, checkpoints, handoffs and leases, creates projects",
    scopes: [
      ...READ_ONLY_AGENT,
      "projects:create",
      "observations:write",
      "claims:write",
      "feedback:write",
      "checkpoints:write",
      "handoffs:write",
      "leases:read",
      "leases:write",
    ],
  },
  {
    label: "Webhook consumer",
    summary: "registers and manages webhooks, reads their deliveries and the event feed",
    scopes: ["webhooks:read", "webhooks:write", "events:read"],
  },
  {
    label: "Admin",
    summary:
      "every scope (*), including scopes added later; routes for owners or admins still need that role, which a new key's agent principal (a member) does not have",
    scopes: "all",
  },
];
