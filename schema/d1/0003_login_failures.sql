-- Progressive login delay: consecutive failures per username (known or not), keyed by the SHA-256 of
-- the username so unknown names are counted the same way without being stored.
CREATE TABLE login_failures (
  username_hash TEXT PRIMARY KEY,
  failures INTEGER NOT NULL,
  last_failure_at TEXT NOT NULL
);
