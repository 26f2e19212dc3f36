-- Login attempts queue per username AND client (src/domains/dashboard/throttle.ts loginClient: the
-- cf-connecting-ip address, an IPv6 address by its /64, "unknown" when absent), so one client's
-- failures never delay or refuse another client's attempt. The rows are a 15-minute memory and never
-- recorded a client, so the table is created anew rather than converted.
DROP TABLE login_failures;
CREATE TABLE login_failures (
  username_hash TEXT NOT NULL,
  client_hash TEXT NOT NULL,
  failures INTEGER NOT NULL,
  last_failure_at TEXT NOT NULL,
  next_attempt_at INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (username_hash, client_hash)
);
-- Rows 15 minutes past their last failure are forgotten (deleted as new attempts are counted).
CREATE INDEX login_failures_by_time ON login_failures(last_failure_at);
