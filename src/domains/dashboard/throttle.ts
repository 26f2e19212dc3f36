// Persistent progressive login delay (DESIGN): consecutive failures per username (known or not) and
// client, keyed by the SHA-256 of each in the global D1 index. A password attempt takes its queue's
// next verification slot in one atomic statement BEFORE verification, counting itself as a failure
// until it succeeds: the slot is the later of now and the previous attempt's slot, plus the delay its
// count of earlier failures calls for. So parallel guesses from one client queue behind each other
// (one verification per delay, however many connections), and an attempt whose slot would lie more
// than MAX_DELAY_SECONDS ahead takes nothing and is answered with the uniform 401 without being
// verified. Another client's failures are another queue: a stranger guessing a username's password
// never delays or refuses its owner's login from elsewhere.
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

/** The client of a request without a cf-connecting-ip header (local tests; Cloudflare always sets it). */
export const UNKNOWN_CLIENT = "unknown";

/**
 * The client a login attempt is queued under, from its cf-connecting-ip header: the IPv4 address
 * (also when an IPv6 form embeds one, as ::ffff:192.0.2.1), or the /64 prefix of an IPv6 address (one
 * host usually holds a whole /64, so counting each of its addresses apart would give it 2^64 queues).
 * UNKNOWN_CLIENT when absent; anything unparseable is its own client, as given.
 */
export function loginClient(address: string | null | undefined): string {
  const a = address?.trim().toLowerCase().split("%")[0];
  if (!a) return UNKNOWN_CLIENT;
  const v4 = /(?:^|:)(\d{1,3}(?:\.\d{1,3}){3})$/.exec(a);
  if (v4) return v4[1];
  return ipv6Prefix64(a) ?? a;
}

/** The first four groups of an IPv6 address, canonical ("2001:db8:0:1::/64"), or null when it is not one. */
function ipv6Prefix64(a: string): string | null {
  const halves = a.split("::");
  if (halves.length > 2) return null;
  const groupsOf = (h: string) => (h ? h.split(":") : []);
  const [head, tail] = [groupsOf(halves[0]), groupsOf(halves[1] ?? "")];
  const zeros = 8 - head.length - tail.length;
  if (halves.length === 2 ? zeros < 1 : zeros !== 0) return null;
  const groups = [...head, ...Array<string>(zeros).fill("0"), ...tail];
  if (!groups.every((g) => /^[0-9a-f]{1,4}$/.test(g))) return null;
  return `${groups
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(":")}::/64`;
}

/** Forgotten rows go first, in the same batch, so guesses at random names or from many clients cannot grow the table beyond 15 minutes' worth. */
const forgetOld = (db: D1Database, now: number) =>
  db.prepare("DELETE FROM login_failures WHERE last_failure_at <= ?").bind(isoAt(now - FAILURE_MEMORY_MS));

/**
 * Takes the next verification slot of the (username, client) queue for a password attempt and counts
 * the attempt as a failure (provisionally: forgiveFailure or resetFailures undo it on success).
 * Answers how long to wait before verifying, or null when the queue is more than MAX_DELAY_SECONDS
 * long: then nothing is taken or counted and the attempt must not be verified.
 */
export async function takeAttemptSlot(db: D1Database, username: string, client: string): Promise<number | null> {
  const now = clock.nowMs();
  const slot = `max(excluded.next_attempt_at, login_failures.next_attempt_at) + ${DELAY_SQL}`;
  const [, taken] = await db.batch<{ next_attempt_at: number }>([
    forgetOld(db, now),
    db
      .prepare(
        `INSERT INTO login_failures (username_hash, client_hash, failures, last_failure_at, next_attempt_at) VALUES (?, ?, 1, ?, ?)
       ON CONFLICT (username_hash, client_hash) DO UPDATE SET
         failures = login_failures.failures + 1, last_failure_at = excluded.last_failure_at, next_attempt_at = ${slot}
       WHERE ${slot} <= excluded.next_attempt_at + ?
       RETURNING next_attempt_at`,
      )
      .bind(usernameKey(username), sha256Hex(client), isoAt(now), now, MAX_DELAY_SECONDS * 1000),
  ]);
  const row = taken.results[0];
  return row ? Math.max(0, row.next_attempt_at - now) : null;
}

/** Counts one failure that was verified elsewhere (a failed second factor) on the client's queue; it takes no slot. */
export async function countFailure(db: D1Database, username: string, client: string): Promise<void> {
  const now = clock.nowMs();
  await db.batch([
    forgetOld(db, now),
    db
      .prepare(
        `INSERT INTO login_failures (username_hash, client_hash, failures, last_failure_at) VALUES (?, ?, 1, ?)
       ON CONFLICT (username_hash, client_hash) DO UPDATE SET failures = login_failures.failures + 1, last_failure_at = excluded.last_failure_at`,
      )
      .bind(usernameKey(username), sha256Hex(client), isoAt(now)),
  ]);
}

/** The attempt counted by takeAttemptSlot succeeded without issuing a full session: uncount it. */
export const forgiveFailure = (db: D1Database, username: string, client: string) =>
  db
    .prepare(
      "UPDATE login_failures SET failures = failures - 1 WHERE username_hash = ? AND client_hash = ? AND failures > 0",
    )
    .bind(usernameKey(username), sha256Hex(client))
    .run();

/** A full session was issued: this client's count starts over (other clients' queues stay as they are). */
export const resetFailures = (db: D1Database, username: string, client: string) =>
  db
    .prepare("DELETE FROM login_failures WHERE username_hash = ? AND client_hash = ?")
    .bind(usernameKey(username), sha256Hex(client))
    .run();
