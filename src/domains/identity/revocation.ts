// Revocation that reaches what a principal delegated or created: its keys, grants, webhooks and dashboard
// accounts, across those tables by principal id. Called inside the revoking route's
// commitWrite, so the whole cascade lands in the same transaction and applies from the next request
// (every request re-reads the key row and the caller's active grants).
import type { Db } from "../../sql/db";

/** Revoke these grants and, transitively, every grant delegated from them; answers the ids revoked now. */
export function revokeGrantsCascade(db: Db, grantIds: string[], by: string, at: string): string[] {
  if (!grantIds.length) return [];
  return db
    .all<{ grant_id: string }>(
      `WITH RECURSIVE doomed(grant_id) AS (
       SELECT value FROM json_each(?)
       UNION SELECT g.grant_id FROM grants g JOIN doomed d ON g.delegated_from = d.grant_id)
     UPDATE grants SET revoked_at = ?, revoked_by = ?
      WHERE grant_id IN (SELECT grant_id FROM doomed) AND revoked_at IS NULL RETURNING grant_id`,
      JSON.stringify(grantIds),
      at,
      by,
    )
    .map((g) => g.grant_id);
}

/**
 * A principal leaves the organization (or loses its last credential, see principalHasCredential): its
 * keys and the keys of every principal it created (and they created, transitively) are revoked, and so
 * are the keys any of them minted for other principals (api_keys.created_by: a key planted on another
 * principal would otherwise keep the authority alive), the grants it held, the grants any of them
 * gave, and everything delegated from those; their webhooks are disabled, and so are their dashboard
 * accounts, whose sessions end at once. Answers the revoked credentials' hashes (keys and sessions,
 * for the credential index) and the counts.
 */
export function revokeWhatPrincipalReaches(db: Db, principalId: string, by: string, at: string) {
  const reached = db
    .all<{ principal_id: string }>(
      `WITH RECURSIVE made(principal_id) AS (
       SELECT ? UNION SELECT p.principal_id FROM principals p JOIN made m ON p.created_by = m.principal_id)
     SELECT principal_id FROM made`,
      principalId,
    )
    .map((p) => p.principal_id);
  const keyHashes = db
    .all<{ key_hash: string }>(
      `UPDATE api_keys SET status = 'revoked', revoked_at = ?1
      WHERE (principal_id IN (SELECT value FROM json_each(?2)) OR created_by IN (SELECT value FROM json_each(?2)))
        AND status = 'active' RETURNING key_hash`,
      at,
      JSON.stringify(reached),
    )
    .map((k) => k.key_hash);
  const roots = db
    .all<{ grant_id: string }>(
      `SELECT grant_id FROM grants WHERE revoked_at IS NULL AND (grantee_id = ? OR granted_by IN (SELECT value FROM json_each(?)))`,
      principalId,
      JSON.stringify(reached),
    )
    .map((g) => g.grant_id);
  // Their webhooks stop too: a hook delivers on its creator's behalf, and that authority has ended.
  // What waited for a retry will never be sent: it ends failed now, as when failures disable a hook.
  const disabledHooks = db
    .all<{ webhook_id: string }>(
      `UPDATE webhooks SET status = 'disabled', updated_at = ?
      WHERE created_by IN (SELECT value FROM json_each(?)) AND status <> 'disabled' RETURNING webhook_id`,
      at,
      JSON.stringify(reached),
    )
    .map((w) => w.webhook_id);
  db.run(
    `UPDATE deliveries SET status = 'failed', next_retry_at = NULL, failure_reason = 'hook_disabled'
      WHERE webhook_id IN (SELECT value FROM json_each(?)) AND status = 'pending'`,
    JSON.stringify(disabledHooks),
  );
  // Accounts they created log in no more, and their live sessions stop now.
  const accounts = disableAccountsOf(db, reached, at);
  return {
    keysRevoked: keyHashes.length,
    credentialHashes: [...keyHashes, ...accounts.sessionHashes],
    grantsRevoked: revokeGrantsCascade(db, roots, by, at).length,
    webhooksDisabled: disabledHooks.length,
    accountsDisabled: accounts.accounts,
  };
}

/**
 * Disables the live accounts of these principals and revokes every live session of theirs, in the
 * caller's transaction; answers how many accounts and the sessions' key hashes (for the credential index).
 */
function disableAccountsOf(
  db: Db,
  principalIds: readonly string[],
  at: string,
): { accounts: number; sessionHashes: string[] } {
  const ids = JSON.stringify(principalIds);
  const accounts = db.all(
    "UPDATE operator_accounts SET disabled_at = ? WHERE principal_id IN (SELECT value FROM json_each(?)) AND disabled_at IS NULL RETURNING 1",
    at,
    ids,
  ).length;
  const sessionHashes = db
    .all<{ key_hash: string }>(
      `UPDATE dashboard_sessions SET revoked_at = ?
      WHERE account_id IN (SELECT account_id FROM operator_accounts WHERE principal_id IN (SELECT value FROM json_each(?))) AND revoked_at IS NULL
     RETURNING key_hash`,
      at,
      ids,
    )
    .map((r) => r.key_hash);
  return { accounts, sessionHashes };
}

/**
 * Does the principal still hold a credential: an active API key or a live dashboard account? Revoking
 * the last one ends its authority like a removal does (revokeWhatPrincipalReaches).
 */
export const principalHasCredential = (db: Db, principalId: string): boolean =>
  !!db.first(
    `SELECT 1 FROM api_keys WHERE principal_id = ? AND status = 'active'
              UNION ALL SELECT 1 FROM operator_accounts WHERE principal_id = ? AND disabled_at IS NULL`,
    principalId,
    principalId,
  );
