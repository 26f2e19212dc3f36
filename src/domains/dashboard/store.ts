// The SQL of dashboard accounts, sessions, passkeys, WebAuthn challenges and recovery codes (all in the
// organization's Durable Object). Secrets are stored only as hashes; views never show them.
import { hashKey, newRawKey, sha256Hex } from "../../auth/credentials";
import type { Role } from "../../auth/roles";
import { clock, isoAt } from "../../http/clock";
import { ID_PREFIX, newId } from "../../http/ids";
import { type Db, sql } from "../../sql/db";
import type { SessionStage } from "../../auth/stages";
import type { IssuedSession } from "../../env";

export interface AccountRow {
  account_id: string;
  principal_id: string;
  username: string;
  display_name: string | null;
  password_hash: string;
  password_salt: string;
  temporary_password: number;
  created_at: string;
  password_changed_at: string | null;
  disabled_at: string | null;
  role: Role;
  has_passkey: number;
}

/** Live accounts only: one of a removed principal, or a disabled one, is gone for every purpose but history. */
const ACCOUNT_SELECT = `SELECT a.*, p.role,
    EXISTS (SELECT 1 FROM passkeys k WHERE k.account_id = a.account_id AND k.revoked_at IS NULL) AS has_passkey
  FROM operator_accounts a JOIN principals p ON p.principal_id = a.principal_id AND p.removed_at IS NULL AND a.disabled_at IS NULL`;

export const accountByUsername = (db: Db, username: string) =>
  db.first<AccountRow>(`${ACCOUNT_SELECT} WHERE a.username = ?`, username);
export const accountById = (db: Db, accountId: string) =>
  db.first<AccountRow>(`${ACCOUNT_SELECT} WHERE a.account_id = ?`, accountId);
export const accountOfPrincipal = (db: Db, principalId: string) =>
  db.first<AccountRow>(`${ACCOUNT_SELECT} WHERE a.principal_id = ?`, principalId);

export const accountView = (a: AccountRow) => ({
  account_id: a.account_id,
  principal_id: a.principal_id,
  username: a.username,
  display_name: a.display_name ?? a.username,
  role: a.role,
  has_passkey: !!a.has_passkey,
  created_at: a.created_at,
  password_changed_at: a.password_changed_at,
});

export function insertAccount(
  db: Db,
  principalId: string,
  username: string,
  displayName: string | null,
  passwordHash: string,
): string {
  const accountId = newId(ID_PREFIX.account);
  db.run(
    `INSERT INTO operator_accounts (account_id, principal_id, username, display_name, password_hash, password_salt, temporary_password, created_at)
     VALUES (?, ?, ?, ?, ?, '', 1, ?)`,
    accountId,
    principalId,
    username,
    displayName,
    passwordHash,
    clock.nowIso(),
  );
  return accountId;
}

/** Whether any account of the organization, live or not, holds the username. */
export const usernameInUse = (db: Db, username: string) =>
  !!db.first(sql`SELECT 1 FROM operator_accounts WHERE username = ${username}`);

/** Removes an account that never became usable (its username could not be claimed deployment-wide). */
export const deleteAccount = (db: Db, accountId: string) =>
  db.run(sql`DELETE FROM operator_accounts WHERE account_id = ${accountId}`);

export function setPassword(db: Db, accountId: string, passwordHash: string, temporary: boolean): void {
  db.run(
    "UPDATE operator_accounts SET password_hash = ?, password_salt = '', temporary_password = ?, password_changed_at = ? WHERE account_id = ?",
    passwordHash,
    temporary ? 1 : 0,
    clock.nowIso(),
    accountId,
  );
}

/** Rewrites the stored form only (an upgraded hash of the same password). */
export const upgradePasswordHash = (db: Db, accountId: string, passwordHash: string) =>
  db.run(
    "UPDATE operator_accounts SET password_hash = ?, password_salt = '' WHERE account_id = ?",
    passwordHash,
    accountId,
  );

// Sessions ---------------------------------------------------------------------------------------

/** Lifetimes from creation, no sliding (DESIGN "Dashboard accounts, sessions, passkeys"). */
export const SESSION_LIFETIME_MS: Record<SessionStage, number> = {
  password_change: 15 * 60_000,
  staged: 5 * 60_000,
  full: 60 * 60_000,
};

export interface SessionRow {
  session_id: string;
  key_hash: string;
  account_id: string;
  stage: SessionStage;
  created_at: string;
  expires_at: string;
  revoked_at: string | null;
}

export interface NewSession {
  token: string;
  row: SessionRow;
}

export function insertSession(db: Db, accountId: string, stage: SessionStage): NewSession {
  const token = newRawKey();
  const now = clock.nowMs();
  const row: SessionRow = {
    session_id: newId(ID_PREFIX.session),
    key_hash: hashKey(token),
    account_id: accountId,
    stage,
    created_at: isoAt(now),
    expires_at: isoAt(now + SESSION_LIFETIME_MS[stage]),
    revoked_at: null,
  };
  db.run(
    "INSERT INTO dashboard_sessions (session_id, key_hash, account_id, stage, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
    row.session_id,
    row.key_hash,
    accountId,
    stage,
    row.created_at,
    row.expires_at,
  );
  return { token, row };
}

/** What a session-creating route answers (the token appears here once). */
export const sessionView = ({ token, row }: NewSession): IssuedSession => ({
  session_token: token,
  session_id: row.session_id,
  stage: row.stage,
  expires_at: row.expires_at,
  account_id: row.account_id,
});

export const getSession = (db: Db, sessionId: string) =>
  db.first<SessionRow>("SELECT * FROM dashboard_sessions WHERE session_id = ?", sessionId);

/** Revokes the given live sessions (all of the account's when sessionId is omitted); returns their key hashes. */
export function revokeSessions(db: Db, accountId: string, sessionId?: string): string[] {
  return db
    .all<{ key_hash: string }>(
      `UPDATE dashboard_sessions SET revoked_at = ? WHERE account_id = ? AND revoked_at IS NULL ${sessionId ? "AND session_id = ?" : ""}
     RETURNING key_hash`,
      clock.nowIso(),
      accountId,
      ...(sessionId ? [sessionId] : []),
    )
    .map((r) => r.key_hash);
}

// Passkeys ---------------------------------------------------------------------------------------

export interface PasskeyRow {
  passkey_id: string;
  account_id: string;
  credential_id: string;
  public_key: string;
  counter: number;
  transports: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export const activePasskeys = (db: Db, accountId: string) =>
  db.all<PasskeyRow>(
    "SELECT * FROM passkeys WHERE account_id = ? AND revoked_at IS NULL ORDER BY created_at, passkey_id",
    accountId,
  );

export const passkeyByCredential = (db: Db, accountId: string, credentialId: string) =>
  db.first<PasskeyRow>(
    "SELECT * FROM passkeys WHERE account_id = ? AND credential_id = ? AND revoked_at IS NULL",
    accountId,
    credentialId,
  );

/** The list shape: never the public key or the counter. */
export const passkeyView = (p: PasskeyRow) => ({
  passkey_id: p.passkey_id,
  name: p.name,
  created_at: p.created_at,
  last_used_at: p.last_used_at,
  transports: JSON.parse(p.transports) as string[],
});

export function insertPasskey(
  db: Db,
  accountId: string,
  p: { credentialId: string; publicKey: string; counter: number; transports: string[]; name: string },
): PasskeyRow {
  const row: PasskeyRow = {
    passkey_id: newId(ID_PREFIX.passkey),
    account_id: accountId,
    credential_id: p.credentialId,
    public_key: p.publicKey,
    counter: p.counter,
    transports: JSON.stringify(p.transports),
    name: p.name,
    created_at: clock.nowIso(),
    last_used_at: null,
    revoked_at: null,
  };
  db.run(
    `INSERT INTO passkeys (passkey_id, account_id, credential_id, public_key, counter, transports, name, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    row.passkey_id,
    accountId,
    row.credential_id,
    row.public_key,
    row.counter,
    row.transports,
    row.name,
    row.created_at,
  );
  return row;
}

/** Records a verified assertion; false when another request moved the counter meanwhile. */
export function usePasskey(db: Db, p: PasskeyRow, newCounter: number): boolean {
  return (
    db.all(
      "UPDATE passkeys SET counter = ?, last_used_at = ? WHERE passkey_id = ? AND counter = ? AND revoked_at IS NULL RETURNING 1",
      newCounter,
      clock.nowIso(),
      p.passkey_id,
      p.counter,
    ).length === 1
  );
}

/** Whether any account holds this credential (revoked or not: a credential id is registered once). */
export const passkeyRegistered = (db: Db, credentialId: string) =>
  !!db.first(sql`SELECT 1 FROM passkeys WHERE credential_id = ${credentialId}`);

export const revokePasskey = (db: Db, passkeyId: string) =>
  db.run("UPDATE passkeys SET revoked_at = ? WHERE passkey_id = ? AND revoked_at IS NULL", clock.nowIso(), passkeyId);

// Challenges -------------------------------------------------------------------------------------

export type ChallengePurpose = "register" | "authenticate";
export const CHALLENGE_LIFETIME_MS = 5 * 60_000;

export function insertChallenge(
  db: Db,
  challenge: string,
  accountId: string,
  sessionId: string,
  purpose: ChallengePurpose,
): void {
  // Expired and used challenges are dropped as new ones are issued: the table stays small.
  db.run("DELETE FROM webauthn_challenges WHERE expires_at <= ? OR used_at IS NOT NULL", clock.nowIso());
  db.run(
    "INSERT INTO webauthn_challenges (challenge, account_id, session_id, purpose, expires_at) VALUES (?, ?, ?, ?, ?)",
    challenge,
    accountId,
    sessionId,
    purpose,
    isoAt(clock.nowMs() + CHALLENGE_LIFETIME_MS),
  );
}

/** Whom a challenge was issued to, and for what. */
export interface ChallengeBinding {
  accountId: string;
  sessionId: string;
  purpose: ChallengePurpose;
}

/** Issued to this account, session and purpose, unexpired and unused. */
const usable = (challenge: string, b: ChallengeBinding, now: string) => sql`challenge = ${challenge}
  AND account_id = ${b.accountId} AND session_id = ${b.sessionId} AND purpose = ${b.purpose} AND expires_at > ${now} AND used_at IS NULL`;

/** Whether the challenge may be answered now (read before verifying; consumeChallenge decides). */
export const challengeUsable = (db: Db, challenge: string, b: ChallengeBinding) =>
  !!db.first(sql`SELECT 1 FROM webauthn_challenges WHERE ${usable(challenge, b, clock.nowIso())}`);

/**
 * Consumes a usable challenge, in the transaction that records what its verification found. One
 * statement: a second use (a replay, or a concurrent answer to the same challenge) finds it used.
 */
export const consumeChallenge = (db: Db, challenge: string, b: ChallengeBinding): boolean =>
  db.all(
    sql`UPDATE webauthn_challenges SET used_at = ${clock.nowIso()} WHERE ${usable(challenge, b, clock.nowIso())} RETURNING 1`,
  ).length === 1;

// Recovery codes ---------------------------------------------------------------------------------

export const RECOVERY_CODE_COUNT = 8;
const BASE32 = "abcdefghijklmnopqrstuvwxyz234567";

/** `xxxxx-xxxxx`: ten base32 characters, 50 random bits. */
export function newRecoveryCode(): string {
  const chars = [...crypto.getRandomValues(new Uint8Array(10))].map((b) => BASE32[b & 31]);
  return `${chars.slice(0, 5).join("")}-${chars.slice(5).join("")}`;
}

const recoveryHash = (code: string) => sha256Hex(code.trim().toLowerCase());

/** Replaces the account's whole set; returns the new codes (shown once). */
export function replaceRecoveryCodes(db: Db, accountId: string): string[] {
  db.run("DELETE FROM recovery_codes WHERE account_id = ?", accountId);
  const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
  for (const code of codes)
    db.run(
      "INSERT OR IGNORE INTO recovery_codes (account_id, code_hash, created_at) VALUES (?, ?, ?)",
      accountId,
      recoveryHash(code),
      clock.nowIso(),
    );
  return codes;
}

/** Marks one unused code used; false when it is not an unused code of the account. */
export function useRecoveryCode(db: Db, accountId: string, code: string): boolean {
  return (
    db.all(
      "UPDATE recovery_codes SET used_at = ? WHERE account_id = ? AND code_hash = ? AND used_at IS NULL RETURNING 1",
      clock.nowIso(),
      accountId,
      recoveryHash(code),
    ).length === 1
  );
}

export const unusedRecoveryCodes = (db: Db, accountId: string) =>
  db.first<{ n: number }>(
    "SELECT count(*) AS n FROM recovery_codes WHERE account_id = ? AND used_at IS NULL",
    accountId,
  )!.n;

/** Retires a session whose credential index row could not be written (its token never reached anyone). */
export const revokeSessionById = (db: Db, sessionId: string) =>
  db.run(
    "UPDATE dashboard_sessions SET revoked_at = ? WHERE session_id = ? AND revoked_at IS NULL",
    clock.nowIso(),
    sessionId,
  );
