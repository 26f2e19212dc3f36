-- Progressive login delay: consecutive failures per username (known or not), keyed by the SHA-256 of
-- the username so unknown names are counted the same way without being stored.
CREATE TABLE login_failures (
  username_hash TEXT PRIMARY KEY,
  failures INTEGER NOT NULL,
  last_failure_at TEXT NOT NULL
);
-- Rows 15 minutes past their last failure are forgotten (deleted as new attempts are counted).
CREATE INDEX login_failures_by_time ON login_failures(last_failure_at);
