-- Login attempts on one username queue: each takes the next verification slot (Unix ms) atomically,
-- so parallel guesses wait behind each other instead of each waiting its own delay at once.
ALTER TABLE login_failures ADD COLUMN next_attempt_at INTEGER NOT NULL DEFAULT 0;
