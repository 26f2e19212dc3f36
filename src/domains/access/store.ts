// The SQL of workspaces, memberships and grants (the directories and simulation read beside their
// routes through the read rules of src/access).
import type { GrantTarget } from "../../access/caller";
import type { Role } from "../../auth/roles";
import { conflict } from "../../http/errors";
import { ID_PREFIX, newId } from "../../http/ids";
import { type Db, list, sql } from "../../sql/db";

export interface MembershipRow {
  membership_id: string;
  principal_id: string;
  workspace_id: string | null;
  role: Role;
  created_by: string;
  created_at: string;
  removed_at: string | null;
}

export interface WorkspaceRow {
  workspace_id: string;
  name: string;
  created_by: string;
  created_at: string;
}

/** Live owners of the organization (its memberships without a workspace). */
export const liveOwners = (db: Db) =>
  db.first<{ n: number }>(
    sql`SELECT count(*) AS n FROM memberships WHERE workspace_id IS NULL AND role = 'owner' AND removed_at IS NULL`,
  )!.n;

/** Names of the given workspaces, by id (export writes them beside a project's workspace_id). */
export const workspaceNames = (db: Db, ids: string[]) =>
  new Map(
    ids.length
      ? db
          .all<{ workspace_id: string; name: string }>(
            sql`SELECT workspace_id, name FROM workspaces WHERE workspace_id IN ${list([...new Set(ids)])}`,
          )
          .map((w) => [w.workspace_id, w.name])
      : [],
  );

export const workspaceExists = (db: Db, workspaceId: string) =>
  !!db.first(sql`SELECT 1 FROM workspaces WHERE workspace_id = ${workspaceId}`);

/**
 * A new workspace whose creator becomes its owner (POST /v1/workspaces, and import restoring a
 * project's workspace under its exported id). A taken name is 409.
 */
export function insertWorkspace(db: Db, w: WorkspaceRow) {
  if (db.first(sql`SELECT 1 FROM workspaces WHERE name = ${w.name}`))
    throw conflict("A workspace with this name already exists.");
  db.run(
    sql`INSERT INTO workspaces (workspace_id, name, created_by, created_at) VALUES (${w.workspace_id}, ${w.name}, ${w.created_by}, ${w.created_at})`,
  );
  insertMembership(db, {
    membership_id: newId(ID_PREFIX.membership),
    principal_id: w.created_by,
    workspace_id: w.workspace_id,
    role: "owner",
    created_by: w.created_by,
    created_at: w.created_at,
  });
}

/** A page of workspaces after (created_at, workspace_id); `among` limits it to those ids (a member's own). */
export const workspacesAfter = (db: Db, after: [string, string], among: string[] | null, limit: number) =>
  db.all<WorkspaceRow>(sql`SELECT * FROM workspaces WHERE (created_at, workspace_id) > (${after[0]}, ${after[1]})
    ${among ? sql`AND workspace_id IN ${list(among)}` : sql``} ORDER BY created_at, workspace_id LIMIT ${limit}`);

export const liveMembership = (db: Db, membershipId: string) =>
  db.first<MembershipRow>(sql`SELECT * FROM memberships WHERE membership_id = ${membershipId} AND removed_at IS NULL`);

/** The principal's live membership of the workspace (null: of the organization). */
export const liveMembershipOf = (db: Db, principalId: string, workspaceId: string | null) =>
  db.first<MembershipRow>(sql`SELECT * FROM memberships
    WHERE principal_id = ${principalId} AND coalesce(workspace_id, '') = ${workspaceId ?? ""} AND removed_at IS NULL`);

export const insertMembership = (db: Db, m: Omit<MembershipRow, "removed_at">) =>
  db.run(sql`INSERT INTO memberships (membership_id, principal_id, workspace_id, role, created_by, created_at)
    VALUES (${m.membership_id}, ${m.principal_id}, ${m.workspace_id}, ${m.role}, ${m.created_by}, ${m.created_at})`);

export const endMembership = (db: Db, membershipId: string, by: string, at: string) =>
  db.run(sql`UPDATE memberships SET removed_at = ${at}, removed_by = ${by} WHERE membership_id = ${membershipId}`);

/** Every live membership of the principal ends (it leaves the organization). */
export const endMembershipsOf = (db: Db, principalId: string, by: string, at: string) =>
  db.run(
    sql`UPDATE memberships SET removed_at = ${at}, removed_by = ${by} WHERE principal_id = ${principalId} AND removed_at IS NULL`,
  );

/**
 * A page of live memberships after (created_at, membership_id), optionally of one workspace; `visibleTo`
 * (a member that is not owner or admin) limits it to its own and those of its workspaces.
 */
export const membershipsAfter = (
  db: Db,
  f: {
    after: [string, string];
    workspaceId?: string;
    visibleTo: { principalId: string; workspaces: string[] } | null;
    limit: number;
  },
) =>
  db.all<MembershipRow>(sql`SELECT * FROM memberships WHERE removed_at IS NULL AND (created_at, membership_id) > (${f.after[0]}, ${f.after[1]})
    ${f.workspaceId !== undefined ? sql`AND workspace_id = ${f.workspaceId}` : sql``}
    ${f.visibleTo ? sql`AND (principal_id = ${f.visibleTo.principalId} OR workspace_id IN ${list(f.visibleTo.workspaces)})` : sql``}
    ORDER BY created_at, membership_id LIMIT ${f.limit}`);

// Grants -----------------------------------------------------------------------------------------

export interface GrantRow {
  grant_id: string;
  grantee_id: string;
  target_type: GrantTarget["type"];
  target_id: string | null;
  can_read: number;
  can_write: number;
  can_approve: number;
  can_admin: number;
  granted_by: string;
  delegated_from: string | null;
  created_at: string;
  revoked_at: string | null;
  revoked_by: string | null;
}

export const getGrant = (db: Db, grantId: string) =>
  db.first<GrantRow>(sql`SELECT * FROM grants WHERE grant_id = ${grantId}`);

export const insertGrant = (db: Db, g: Omit<GrantRow, "revoked_at" | "revoked_by">) =>
  db.run(sql`INSERT INTO grants (grant_id, grantee_id, target_type, target_id, can_read, can_write, can_approve, can_admin, granted_by, delegated_from, created_at)
    VALUES (${g.grant_id}, ${g.grantee_id}, ${g.target_type}, ${g.target_id}, ${g.can_read}, ${g.can_write}, ${g.can_approve}, ${g.can_admin},
      ${g.granted_by}, ${g.delegated_from}, ${g.created_at})`);

/**
 * A page of grants, active and revoked, after (created_at, grant_id); `heldOrGivenBy` (a caller that
 * is not owner or admin) limits it to the grants that principal holds or gave.
 */
export const grantsAfter = (db: Db, after: [string, string], heldOrGivenBy: string | null, limit: number) =>
  db.all<GrantRow>(sql`SELECT * FROM grants WHERE (created_at, grant_id) > (${after[0]}, ${after[1]})
    ${heldOrGivenBy !== null ? sql`AND (grantee_id = ${heldOrGivenBy} OR granted_by = ${heldOrGivenBy})` : sql``}
    ORDER BY created_at, grant_id LIMIT ${limit}`);
