// The groups of docs/openapi.json: every route names one (its `tag`), in the order the document lists them.
export const API_TAGS = {
  Health: "Liveness and readiness, public.",
  Memory:
    "The memory loop: projects, observations, consolidation into claims, the claim lifecycle, search, context compilation and feedback.",
  Coordination: "Checkpoints, leases and handoffs between agents.",
  Operator: "The calling credential, API keys and the principal directory.",
  Events: "The metadata-only domain event log.",
  Webhooks: "Webhook registration and signed, retried delivery of domain events.",
  Access: "Workspaces, memberships, the project and subject directories, grants and access simulation.",
  MCP: "The agent tool endpoint (JSON-RPC 2.0, Model Context Protocol).",
  Portability: "NDJSON export and import.",
  Audit: "The metadata-only, hash-chained audit log.",
  Dashboard: "Human operator accounts, dashboard sessions, passkeys and recovery codes.",
  Governance: "Policies, claim approvals, channels and knowledge releases.",
  Federation: "Peers, filters and signed pull and push between deployments.",
  Retention: "Legal holds, retention and identity mappings.",
  Atlas: "Authorized graph views of memory.",
  Vectors: "Model diagnostics, the vector index and enrichment.",
} as const;

export type ApiTag = keyof typeof API_TAGS;
