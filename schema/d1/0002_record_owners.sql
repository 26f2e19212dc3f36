-- Which organization owns a record id (projects, observations, claims). Maintained asynchronously from
-- each org Durable Object's outbox; import uses it to refuse ids that belong to another organization.
CREATE TABLE record_owners (
  record_id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL,
  created_at TEXT NOT NULL
);
