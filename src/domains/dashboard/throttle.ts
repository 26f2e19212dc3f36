// Persistent progressive login delay (DESIGN): consecutive failures per username, known or not, keyed
// by the username's SHA-256 in the global D1 index. An attempt is counted as a failure atomically
// BEFORE verification (so parallel guesses all see each other) and forgiven when it succeeds.
import { sha256Hex } from "../../auth/credentials";
import { clock, isoAt } from "../../http/clock";

/** Failures older than this (without a newer one) are forgotten. */
export const FAILURE_MEMORY_MS = 15 * 60_000;
export const MAX_DELAY_SECONDS = 30;

/** The wait before verifying an attempt that follows `priorFailures` consecutive failures. */
export const delayMsAfter = (priorFailures: number): number =>
  priorFailures >= 3 ? Math.min(2 ** (priorFailures - 3), MAX_DELAY_SECONDS) * 1000 : 0;

export const usernameKey = (username: string) => sha256Hex(username);

/**
 * Counts one failure (provisionally, for an attempt about to be verified); returns the failures before
 * it. One batch (a transaction): forgotten rows go first, so guesses at random names cannot grow the
 * table beyond 15 minutes' worth.
 */
export async function countFailure(db: D1Database, username: string): Promise<number> {
  const now = clock.nowMs();
  const [, counted] = await db.batch<{ failures: number }>([
    db.prepare("DELETE FROM login_failures WHERE last_failure_at <= ?").bind(isoAt(now - FAILURE_MEMORY_MS)),
    db.prepare(
      `INSERT INTO login_failures (username_hash, failures, last_failure_at) VALUES (?, 1, ?)
       ON CONFLICT (username_hash) DO UPDATE SET failures = login_failures.failures + 1, last_failure_at = excluded.last_failure_at
       RETURNING failures`,
    ).bind(usernameKey(username), isoAt(now)),
  ]);
  return (counted.results[0]?.failures ?? 1) - 1;
}

/** The attempt counted by countFailure succeeded without issuing a full session: uncount it. */
export const forgiveFailure = (db: D1Database, username: string) =>
  db.prepare("UPDATE login_failures SET failures = failures - 1 WHERE username_hash = ? AND failures > 0").bind(usernameKey(username)).run();

/** A full session was issued: the count starts over. */
export const resetFailures = (db: D1Database, username: string) =>
  db.prepare("DELETE FROM login_failures WHERE username_hash = ?").bind(usernameKey(username)).run();
