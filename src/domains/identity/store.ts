// Principals, API keys and operator accounts: the org Durable Object is the authority for all of them.
import { SESSION_SCOPES, sessionCeiling } from "../../access/authority";
import { loadGrants } from "../../access/policy";
import { hashKey, newRawKey } from "../../auth/credentials";
import { ROLES, type Role } from "../../auth/roles";
import type { Trust } from "../../auth/trust";
import { clock } from "../../http/clock";
import { ID_PREFIX, newId } from "../../http/ids";
import { type Db, sql } from "../../sql/db";
import type { Caller } from "../../org/request";
import type { SessionStage } from "../../auth/stages";

export interface KeyRow {
  key_id: string;
  principal_id: string;
  label: string;
  scopes: string;
  max_trust: Trust;
  status: "active" | "revoked";
  created_at: string;
  revoked_at: string | null;
}

export interface PrincipalRow {
  principal_id: string;
  kind: "agent" | "human";
  display_name: string;
  role: Role;
  created_at: string;
}

/** sessionCeiling (src/access/authority.ts) as SQL over `p.role`. */
const SESSION_CEILING_SQL = `CASE p.role ${ROLES.map((r) => `WHEN '${r}' THEN '${sessionCeiling(r)}'`).join(" ")} END`;

/**
 * Re-read on every request: revocation, expiry and role changes take effect immediately, nothing is
 * cached. One statement per request: an API key or a live dashboard session (DESIGN: a full session
 * acts as its account's principal with SESSION_SCOPES and sessionCeiling of its role), the
 * principal's role and whether it holds any grant.
 */
export function loadCaller(db: Db, keyHash: string): Caller | null {
  const row = db.first<{
    credential_id: string;
    principal_id: string;
    scopes: string;
    max_trust: Trust;
    role: Role;
    account_id: string | null;
    stage: SessionStage | null;
    has_grants: number;
    workspaces: string;
  }>(
    `SELECT c.*, EXISTS (SELECT 1 FROM grants g WHERE g.grantee_id = c.principal_id AND g.revoked_at IS NULL) AS has_grants,
            (SELECT json_group_object(m.workspace_id, m.role) FROM memberships m
              WHERE m.principal_id = c.principal_id AND m.workspace_id IS NOT NULL AND m.removed_at IS NULL) AS workspaces
       FROM (SELECT k.key_id AS credential_id, k.principal_id, k.scopes, k.max_trust, p.role, NULL AS account_id, NULL AS stage
               FROM api_keys k JOIN principals p ON p.principal_id = k.principal_id
              WHERE k.key_hash = ? AND k.status = 'active' AND p.removed_at IS NULL
             UNION ALL
             SELECT s.session_id, a.principal_id, ?, ${SESSION_CEILING_SQL}, p.role, s.account_id, s.stage
               FROM dashboard_sessions s JOIN operator_accounts a ON a.account_id = s.account_id
               JOIN principals p ON p.principal_id = a.principal_id
              WHERE s.key_hash = ? AND s.revoked_at IS NULL AND s.expires_at > ? AND p.removed_at IS NULL AND a.disabled_at IS NULL) c`,
    keyHash,
    JSON.stringify(SESSION_SCOPES),
    keyHash,
    clock.nowIso(),
  );
  if (!row) return null;
  return {
    keyId: row.credential_id,
    principalId: row.principal_id,
    scopes: JSON.parse(row.scopes),
    maxTrust: row.max_trust,
    role: row.role,
    grants: row.has_grants ? loadGrants(db, row.principal_id) : [],
    workspaces: JSON.parse(row.workspaces) as Record<string, Role>,
    ...(row.stage ? { session: { sessionId: row.credential_id, accountId: row.account_id!, stage: row.stage } } : {}),
  };
}

/** A new principal joins the organization with `role`: the principal row and its organization membership. */
export function insertPrincipal(
  db: Db,
  kind: PrincipalRow["kind"],
  displayName: string,
  role: Role,
  opts: { createdBy?: string; principalId?: string } = {},
): PrincipalRow {
  const createdBy = opts.createdBy;
  const row: PrincipalRow = {
    principal_id: opts.principalId ?? newId(ID_PREFIX.principal),
    kind,
    display_name: displayName,
    role,
    created_at: clock.nowIso(),
  };
  db.run(
    "INSERT INTO principals (principal_id, kind, display_name, role, created_at, created_by) VALUES (?, ?, ?, ?, ?, ?)",
    row.principal_id,
    row.kind,
    row.display_name,
    row.role,
    row.created_at,
    createdBy ?? null,
  );
  db.run(
    "INSERT INTO memberships (membership_id, principal_id, workspace_id, role, created_by, created_at) VALUES (?, ?, NULL, ?, ?, ?)",
    newId(ID_PREFIX.membership),
    row.principal_id,
    role,
    createdBy ?? row.principal_id,
    row.created_at,
  );
  return row;
}

/**
 * The creation chain above a principal, nearest first: its creator, the creator's creator, … (removed
 * principals included), each with its current role (null if the row is gone). At most `max` links, so
 * a cycle (no route can write one) or an absurdly deep chain still ends. One statement, one primary-key
 * lookup per link.
 */
export function creatorsOf(db: Db, principalId: string, max: number): { principal_id: string; role: Role | null }[] {
  return db.all<{ principal_id: string; role: Role | null }>(
    `WITH RECURSIVE up(id, depth) AS (
       SELECT created_by, 1 FROM principals WHERE principal_id = ? AND created_by IS NOT NULL
       UNION ALL
       SELECT p.created_by, up.depth + 1 FROM up JOIN principals p ON p.principal_id = up.id
        WHERE p.created_by IS NOT NULL AND up.depth < ?)
     SELECT up.id AS principal_id, p.role FROM up LEFT JOIN principals p ON p.principal_id = up.id ORDER BY up.depth`,
    principalId,
    max,
  );
}

/** The live memberships of these principals (the principal directory shows them). */
export const liveMembershipsOf = (db: Db, principalIds: string[]) =>
  db.all<{ membership_id: string; principal_id: string; workspace_id: string | null; role: Role }>(
    `SELECT membership_id, principal_id, workspace_id, role FROM memberships
      WHERE removed_at IS NULL AND principal_id IN (SELECT value FROM json_each(?))
      ORDER BY created_at, membership_id`,
    JSON.stringify(principalIds),
  );

/** The principal's organization role (its organization membership was replaced). */
export const setPrincipalRole = (db: Db, principalId: string, role: Role) =>
  db.run(sql`UPDATE principals SET role = ${role} WHERE principal_id = ${principalId}`);

/** Withdraws a principal and its memberships (insertPrincipal undone: its account could not be completed). */
export function withdrawPrincipal(db: Db, principalId: string, by: string, at: string) {
  removePrincipal(db, principalId, at);
  db.run(
    sql`UPDATE memberships SET removed_at = ${at}, removed_by = ${by} WHERE principal_id = ${principalId} AND removed_at IS NULL`,
  );
}

/** The principal leaves the organization: gone for every purpose but history. */
export const removePrincipal = (db: Db, principalId: string, at: string) =>
  db.run(sql`UPDATE principals SET removed_at = ${at} WHERE principal_id = ${principalId} AND removed_at IS NULL`);

/** A page of keys after (created_at, key_id), of one principal or (null) of all. */
export const keysAfter = (db: Db, after: [string, string], principalId: string | null, limit: number) =>
  db.all<KeyRow>(sql`SELECT * FROM api_keys WHERE (created_at, key_id) > (${after[0]}, ${after[1]})
    ${principalId !== null ? sql`AND principal_id = ${principalId}` : sql``} ORDER BY created_at, key_id LIMIT ${limit}`);

/** A principal's role, removed or not (a key's holder). */
export const principalRole = (db: Db, principalId: string) =>
  db.first<{ role: Role }>(sql`SELECT role FROM principals WHERE principal_id = ${principalId}`);

/** A page of current principals after (created_at, principal_id). */
export const principalsAfter = (db: Db, after: [string, string], limit: number) =>
  db.all<PrincipalRow>(sql`SELECT * FROM principals WHERE removed_at IS NULL AND (created_at, principal_id) > (${after[0]}, ${after[1]})
    ORDER BY created_at, principal_id LIMIT ${limit}`);

/** A current principal of the organization (removed principals are gone for every purpose but history). */
export const getPrincipal = (db: Db, principalId: string) =>
  db.first<PrincipalRow>("SELECT * FROM principals WHERE principal_id = ? AND removed_at IS NULL", principalId);

/** `createdBy`: the principal whose credential mints it (null: the operator's bootstrap). */
export function insertKey(
  db: Db,
  principalId: string,
  label: string,
  scopes: string[],
  maxTrust: Trust,
  createdBy: string | null,
) {
  const raw = newRawKey();
  const row: KeyRow = {
    key_id: newId(ID_PREFIX.key),
    principal_id: principalId,
    label,
    scopes: JSON.stringify(scopes),
    max_trust: maxTrust,
    status: "active",
    created_at: clock.nowIso(),
    revoked_at: null,
  };
  const keyHash = hashKey(raw);
  db.run(
    `INSERT INTO api_keys (key_id, key_hash, principal_id, label, scopes, max_trust, status, created_at, created_by)
     VALUES (?, ?, ?, ?, ?, ?, 'active', ?, ?)`,
    row.key_id,
    keyHash,
    principalId,
    label,
    row.scopes,
    maxTrust,
    row.created_at,
    createdBy,
  );
  return { raw, keyHash, row };
}

export const getKey = (db: Db, keyId: string) =>
  db.first<KeyRow & { key_hash: string }>("SELECT * FROM api_keys WHERE key_id = ?", keyId);

export function revokeKey(db: Db, keyId: string): void {
  db.run(
    "UPDATE api_keys SET status = 'revoked', revoked_at = ? WHERE key_id = ? AND status = 'active'",
    clock.nowIso(),
    keyId,
  );
}

/** External shape of a key: never the hash or the secret. */
export function keyView(row: KeyRow) {
  const scopes = JSON.parse(row.scopes) as string[];
  return {
    key_id: row.key_id,
    principal_id: row.principal_id,
    label: row.label,
    scopes: scopes.includes("*") ? "*" : scopes,
    max_trust: row.max_trust,
    status: row.status,
    created_at: row.created_at,
    revoked_at: row.revoked_at,
  };
}

export const principalView = (p: PrincipalRow) => ({
  principal_id: p.principal_id,
  kind: p.kind,
  display_name: p.display_name,
  role: p.role,
  created_at: p.created_at,
});

/**
 * A principal as the authorization module sees it when it acts without a request (e.g. a webhook
 * delivering on its creator's behalf): its current role and active grants; null once removed.
 * It holds no key, so it carries no scopes and the lowest ceiling.
 */
export function principalCaller(db: Db, principalId: string): Caller | null {
  const p = getPrincipal(db, principalId);
  if (!p) return null;
  const workspaces = db.first<{ roles: string }>(
    `SELECT json_group_object(workspace_id, role) AS roles FROM memberships
      WHERE principal_id = ? AND workspace_id IS NOT NULL AND removed_at IS NULL`,
    principalId,
  )!.roles;
  return {
    principalId,
    keyId: "",
    scopes: [],
    maxTrust: "low",
    role: p.role,
    grants: loadGrants(db, principalId),
    workspaces: JSON.parse(workspaces) as Record<string, Role>,
  };
}
