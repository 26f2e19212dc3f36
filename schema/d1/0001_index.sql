-- Global index only: credential hash -> organization, organization registry, dashboard username -> organization.
-- The org Durable Object is the authority for keys; a row here only says where to route.
CREATE TABLE organizations (
  org_id TEXT PRIMARY KEY,
  created_at TEXT NOT NULL
);

CREATE TABLE credentials (
  key_hash TEXT PRIMARY KEY,          -- SHA-256 hex of the raw svc_sk_ token: the one indexed lookup
  org_id TEXT NOT NULL REFERENCES organizations(org_id),
  kind TEXT NOT NULL,                 -- 'api_key' | 'dashboard_session'
  created_at TEXT NOT NULL
);

CREATE TABLE dashboard_usernames (
  username TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES organizations(org_id),
  created_at TEXT NOT NULL
);
