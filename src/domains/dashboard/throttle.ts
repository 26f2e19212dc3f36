// Persistent progressive login delay (DESIGN): consecutive failures per username, known or not, keyed
// by the username's SHA-256 in the global D1 index. A password attempt takes the username's next
// verification slot in one atomic statement BEFORE verification, counting itself as a failure until it
// succeeds: the slot is the later of now and the previous attempt's slot, plus the delay its count of
// earlier failures calls for. So parallel guesses queue behind each other (one verification per delay,
// however many connections), and an attempt whose slot would lie more than MAX_DELAY_SECONDS ahead
// takes nothing and is answered with the uniform 401 without being verified.
import { sha256Hex } from "../../auth/credentials";
import { clock, isoAt } from "../../http/clock";

/** Failures older than this (without a newer one) are forgotten. */
export const FAILURE_MEMORY_MS = 15 * 60_000;
export const MAX_DELAY_SECONDS = 30;

/** The wait before verifying an attempt that follows `priorFailures` consecutive failures. */
export const delayMsAfter = (priorFailures: number): number =>
  priorFailures >= 3 ? Math.min(2 ** (priorFailures - 3), MAX_DELAY_SECONDS) * 1000 : 0;

/** delayMsAfter as SQL over the row's `failures` (the statement below must agree with it exactly). */
const DELAY_SQL = (() => {
  const cases: string[] = [];
  let n = 0;
  for (; delayMsAfter(n) < MAX_DELAY_SECONDS * 1000; n++) cases.push(`WHEN ${n} THEN ${delayMsAfter(n)}`);
  return `(CASE login_failures.failures ${cases.join(" ")} ELSE ${delayMsAfter(n)} END)`;
})();

export const usernameKey = (username: string) => sha256Hex(username);

/** Forgotten rows go first, in the same batch, so guesses at random names cannot grow the table beyond 15 minutes' worth. */
const forgetOld = (db: D1Database, now: number) =>
  db.prepare("DELETE FROM login_failures WHERE last_failure_at <= ?").bind(isoAt(now - FAILURE_MEMORY_MS));

/**
 * Takes the username's next verification slot for a password attempt and counts the attempt as a
 * failure (provisionally: forgiveFailure or resetFailures undo it on success). Answers how long to
 * wait before verifying, or null when the queue is more than MAX_DELAY_SECONDS long: then nothing is
 * taken or counted and the attempt must not be verified.
 */
export async function takeAttemptSlot(db: D1Database, username: string): Promise<number | null> {
  const now = clock.nowMs();
  const slot = `max(excluded.next_attempt_at, login_failures.next_attempt_at) + ${DELAY_SQL}`;
  const [, taken] = await db.batch<{ next_attempt_at: number }>([
    forgetOld(db, now),
    db.prepare(
      `INSERT INTO login_failures (username_hash, failures, last_failure_at, next_attempt_at) VALUES (?, 1, ?, ?)
       ON CONFLICT (username_hash) DO UPDATE SET
         failures = login_failures.failures + 1, last_failure_at = excluded.last_failure_at, next_attempt_at = ${slot}
       WHERE ${slot} <= excluded.next_attempt_at + ?
       RETURNING next_attempt_at`,
    ).bind(usernameKey(username), isoAt(now), now, MAX_DELAY_SECONDS * 1000),
  ]);
  const row = taken.results[0];
  return row ? Math.max(0, row.next_attempt_at - now) : null;
}

/** Counts one failure that was verified elsewhere (a failed second factor); it takes no slot. */
export async function countFailure(db: D1Database, username: string): Promise<void> {
  const now = clock.nowMs();
  await db.batch([
    forgetOld(db, now),
    db.prepare(
      `INSERT INTO login_failures (username_hash, failures, last_failure_at) VALUES (?, 1, ?)
       ON CONFLICT (username_hash) DO UPDATE SET failures = login_failures.failures + 1, last_failure_at = excluded.last_failure_at`,
    ).bind(usernameKey(username), isoAt(now)),
  ]);
}

/** The attempt counted by takeAttemptSlot succeeded without issuing a full session: uncount it. */
export const forgiveFailure = (db: D1Database, username: string) =>
  db.prepare("UPDATE login_failures SET failures = failures - 1 WHERE username_hash = ? AND failures > 0").bind(usernameKey(username)).run();

/** A full session was issued: the count starts over. */
export const resetFailures = (db: D1Database, username: string) =>
  db.prepare("DELETE FROM login_failures WHERE username_hash = ?").bind(usernameKey(username)).run();
