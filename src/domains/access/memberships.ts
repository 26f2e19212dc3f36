// Workspaces and memberships. A principal's organization membership IS its organization role
// (mirrored on principals.role, which every request reads with the key); workspace memberships
// attach it to a workspace. Removal is soft: rows stay for provenance and audit, but stop being listed.
// Owners and admins see every workspace and membership; anyone else sees the workspaces it is a member
// of, their memberships and its own.
import { requireAccountAuthority, requireRoleAuthority } from "../../access/authority";
import { isAdmin } from "../../access/policy";
import { ADMIN_ROLES } from "../../auth/roles";
import { clock } from "../../http/clock";
import { afterPair, pageOf } from "../../http/cursor";
import { conflict, notFound } from "../../http/errors";
import { ID_PREFIX, newId } from "../../http/ids";
import { orgRoute } from "../../org/route";
import type { IndexWrite } from "../../org/request";
import { ok } from "../../org/request";
import { commitWrite } from "../../org/write";
import { accountOfPrincipal } from "../dashboard/store";
import { getPrincipal, removePrincipal, setPrincipalRole } from "../identity/store";
import { unresolved } from "../memory/store";
import { revokeWhatPrincipalReaches } from "../identity/revocation";
import {
  endMembership,
  endMembershipsOf,
  insertMembership,
  insertWorkspace,
  liveMembership,
  liveMembershipOf,
  liveOwners,
  type MembershipRow,
  membershipsAfter,
  workspaceExists,
  workspacesAfter,
} from "./store";
import {
  listQuery,
  membershipBody,
  membershipListQuery,
  membershipListResponse,
  membershipRemovedResponse,
  membershipResponse,
  workspaceBody,
  workspaceListResponse,
  workspaceResponse,
} from "./schema";

export const membershipView = (m: MembershipRow) => ({
  membership_id: m.membership_id,
  principal_id: m.principal_id,
  workspace_id: m.workspace_id,
  role: m.role,
  created_by: m.created_by,
  created_at: m.created_at,
});

export const membershipRoutes = [
  orgRoute({
    method: "POST",
    path: "/v1/workspaces",
    scope: "workspaces:write",
    body: workspaceBody,
    response: { 201: workspaceResponse },
    summary: "Create a workspace (name unique per organization); its creator becomes its owner.",
    operationId: "createWorkspace",
    tag: "Access",
    description:
      "Creates a workspace; its name is unique in the organization (409 otherwise) and its creator becomes its owner.",
    handler: (rc) =>
      commitWrite(rc, (db) => {
        const now = clock.nowIso();
        const workspaceId = newId(ID_PREFIX.workspace);
        insertWorkspace(db, {
          workspace_id: workspaceId,
          name: rc.body.name,
          created_by: rc.caller.principalId,
          created_at: now,
        });
        return {
          status: 201,
          data: { workspace_id: workspaceId, name: rc.body.name, created_by: rc.caller.principalId, created_at: now },
          audit: { action: "workspace.created", resourceType: "workspace", resourceId: workspaceId },
        };
      }),
  }),

  orgRoute({
    method: "GET",
    path: "/v1/workspaces",
    scope: "workspaces:read",
    query: listQuery,
    response: { 200: workspaceListResponse },
    summary: "Workspaces: owners and admins see all, others the ones they are members of.",
    operationId: "listWorkspaces",
    tag: "Access",
    description: "Lists workspaces: all of them for owners and admins, otherwise those the caller is a member of.",
    handler: ({ db, caller, query }) => {
      const [at, id] = afterPair(query.after);
      const mine = !isAdmin(caller);
      const rows = workspacesAfter(db, [at, id], mine ? Object.keys(caller.workspaces) : null, query.limit + 1);
      const { page, ...more } = pageOf(rows, query.limit, (w) => [w.created_at, w.workspace_id]);
      return ok({ workspaces: page, ...more });
    },
  }),

  orgRoute({
    method: "POST",
    path: "/v1/memberships",
    scope: "memberships:write",
    roles: ADMIN_ROLES,
    body: membershipBody,
    response: { 201: membershipResponse },
    summary: "Attach a principal to the organization (sets its role) or to a workspace, with a role.",
    operationId: "createMembership",
    tag: "Access",
    description:
      "Attaches a principal to the organization (setting its role) or to one workspace, as owner, admin, member or " +
      "reader. Nobody grants a role above their own.",
    handler: (rc) => {
      const { body, caller } = rc;
      const principal = getPrincipal(rc.db, body.principal_id);
      if (!principal) throw unresolved("principal", [body.principal_id]);
      if (body.workspace_id !== undefined && !workspaceExists(rc.db, body.workspace_id))
        throw unresolved("workspace", [body.workspace_id]);
      requireRoleAuthority(caller, body.role);
      // The organization role of a principal with a dashboard account is its sessions' authority.
      if (body.workspace_id === undefined && accountOfPrincipal(rc.db, principal.principal_id))
        requireAccountAuthority(caller, body.role);
      return commitWrite(rc, (db) => {
        const now = clock.nowIso();
        const current = liveMembershipOf(db, body.principal_id, body.workspace_id ?? null);
        if (current && body.workspace_id !== undefined)
          throw conflict("The principal is already a member of this workspace.");
        if (current) {
          // The organization membership is replaced: the new role applies from the next request.
          requireRoleAuthority(caller, current.role);
          if (current.role === "owner" && body.role !== "owner" && liveOwners(db) <= 1)
            throw conflict("The last owner cannot be demoted.");
          endMembership(db, current.membership_id, caller.principalId, now);
          setPrincipalRole(db, body.principal_id, body.role);
        }
        const row: MembershipRow = {
          membership_id: newId(ID_PREFIX.membership),
          principal_id: body.principal_id,
          workspace_id: body.workspace_id ?? null,
          role: body.role,
          created_by: caller.principalId,
          created_at: now,
          removed_at: null,
        };
        insertMembership(db, row);
        return {
          status: 201,
          data: membershipView(row),
          audit: {
            action: "membership.created",
            resourceType: "membership",
            resourceId: row.membership_id,
            detail: {
              principal_id: row.principal_id,
              workspace_id: row.workspace_id,
              role: row.role,
              replaced: current?.membership_id ?? null,
            },
          },
        };
      });
    },
  }),

  orgRoute({
    method: "GET",
    path: "/v1/memberships",
    scope: "memberships:read",
    query: membershipListQuery,
    response: { 200: membershipListResponse },
    summary:
      "Live memberships (owners and admins: all; others their own and those of their workspaces); workspace_id filters to one workspace.",
    operationId: "listMemberships",
    tag: "Access",
    description:
      "Lists live memberships, optionally of one `workspace_id`: all for owners and admins, otherwise the caller's " +
      "own and those of its workspaces.",
    handler: ({ db, caller, query }) => {
      const [at, id] = afterPair(query.after);
      // A workspace the caller is not a member of lists nothing, exactly like a missing one.
      const mine = !isAdmin(caller);
      const rows = membershipsAfter(db, {
        after: [at, id],
        workspaceId: query.workspace_id,
        visibleTo: mine ? { principalId: caller.principalId, workspaces: Object.keys(caller.workspaces) } : null,
        limit: query.limit + 1,
      });
      const { page, ...more } = pageOf(rows, query.limit, (m) => [m.created_at, m.membership_id]);
      return ok({ memberships: page.map(membershipView), ...more });
    },
  }),

  orgRoute({
    method: "DELETE",
    path: "/v1/memberships/:id",
    scope: "memberships:write",
    roles: ADMIN_ROLES,
    response: { 200: membershipRemovedResponse },
    summary:
      "Soft-remove a membership; removing the organization membership removes the principal and revokes its keys.",
    operationId: "removeMembership",
    tag: "Access",
    description:
      "Removes a membership softly (history and audit stay). Removing an organization membership removes the " +
      "principal and revokes its keys.",
    handler: (rc) => {
      const m = liveMembership(rc.db, rc.params.id);
      if (!m) throw notFound("Membership");
      requireRoleAuthority(rc.caller, m.role);
      const revoked: IndexWrite[] = [];
      const reply = commitWrite(rc, (db) => {
        if (m.workspace_id === null && m.role === "owner" && liveOwners(db) <= 1)
          throw conflict("The last owner cannot be removed.");
        const now = clock.nowIso();
        let cascade = { keys_revoked: 0, grants_revoked: 0, webhooks_disabled: 0, accounts_disabled: 0 };
        if (m.workspace_id === null) {
          // Leaving the organization: every membership ends, and every key of the principal and of the
          // principals it created stops working, with every grant it held or they gave (and their
          // delegations), their webhooks and the dashboard accounts they created.
          endMembershipsOf(db, m.principal_id, rc.caller.principalId, now);
          removePrincipal(db, m.principal_id, now);
          const reached = revokeWhatPrincipalReaches(db, m.principal_id, rc.caller.principalId, now);
          for (const keyHash of reached.credentialHashes) revoked.push({ op: "remove_credential", keyHash });
          cascade = {
            keys_revoked: reached.keysRevoked,
            grants_revoked: reached.grantsRevoked,
            webhooks_disabled: reached.webhooksDisabled,
            accounts_disabled: reached.accountsDisabled,
          };
        } else {
          endMembership(db, m.membership_id, rc.caller.principalId, now);
        }
        return {
          status: 200,
          data: { ...membershipView(m), removed: true, removed_at: now, ...cascade },
          audit: {
            action: "membership.removed",
            resourceType: "membership",
            resourceId: m.membership_id,
            detail: { principal_id: m.principal_id, workspace_id: m.workspace_id, ...cascade },
          },
        };
      });
      return { ...reply, indexWrites: revoked };
    },
  }),
];
