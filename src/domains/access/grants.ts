// Grants: additive, append-and-revoke delegations of read, write, approve or admin authority over the
// organization, a project (null: unscoped memory) or a subject. You may only grant what you hold
// (policy.ts holds: an owner everything, an admin all but read by its role, anyone what its grants
// give); the decision to refuse comes before any lookup of the target, so a target you cannot reach
// looks exactly like a missing one. A grant re-shared from a grant you
// hold records it in delegated_from, and revoking a grant revokes everything delegated from it.
import { type GrantTarget, PERMISSIONS, type Permission } from "../../access/caller";
import { grantHolds, holds, isAdmin, roleHolds } from "../../access/policy";
import { clock } from "../../http/clock";
import { afterPair, pageOf } from "../../http/cursor";
import { forbidden, notFound, unresolved } from "../../http/errors";
import { ID_PREFIX, newId } from "../../http/ids";
import { orgRoute } from "../../org/route";
import type { Db } from "../../sql/db";
import type { Caller } from "../../org/request";
import { ok } from "../../org/request";
import { commitWrite } from "../../org/write";
import type { z } from "zod";
import { getPrincipal } from "../identity/store";
import { getProject } from "../memory/store";
import { revokeGrantsCascade } from "../identity/revocation";
import { grantBody, grantListResponse, grantResponse, grantRevokedResponse, listQuery } from "./schema";
import { getGrant, type GrantRow, grantsAfter, insertGrant } from "./store";

const permissionsOf = (g: GrantRow): Permission[] =>
  PERMISSIONS.filter((p) => (g as unknown as Record<string, number>)[`can_${p}`] === 1);

export const grantView = (g: GrantRow) => ({
  grant_id: g.grant_id,
  principal_id: g.grantee_id,
  target: { type: g.target_type, id: g.target_id },
  permissions: permissionsOf(g),
  status: g.revoked_at ? "revoked" : "active",
  granted_by: g.granted_by,
  delegated_from: g.delegated_from,
  created_at: g.created_at,
  revoked_at: g.revoked_at,
});

export const targetOf = (body: z.infer<typeof grantBody>): GrantTarget =>
  "organization" in body
    ? { type: "organization", id: null }
    : "project" in body
      ? { type: "project", id: body.project }
      : { type: "subject", id: body.subject };

/**
 * Where a new grant's authority comes from: null when the caller's role holds every requested
 * permission (policy.ts roleHolds), otherwise the one active grant of the caller that holds every
 * requested permission its role does not (so that revoking it revokes the new grant too). Permissions
 * held only across several grants are delegated one grant at a time.
 */
function delegationSource(
  caller: Caller,
  permissions: Permission[],
  target: GrantTarget,
): { from: string | null } | { missing: Permission[] } {
  const missing = permissions.filter((p) => !holds(caller, p, target));
  if (missing.length) return { missing };
  const fromGrant = permissions.filter((p) => !roleHolds(caller, p));
  if (!fromGrant.length) return { from: null };
  const source = caller.grants.find((g) => fromGrant.every((p) => grantHolds(g, p, target)));
  return source ? { from: source.grantId } : { missing: fromGrant };
}

/** Owners and admins see every grant; others see the grants they hold or gave. */
function visibleGrant(db: Db, caller: Caller, id: string): GrantRow | null {
  const g = getGrant(db, id);
  if (!g) return null;
  return isAdmin(caller) || g.grantee_id === caller.principalId || g.granted_by === caller.principalId ? g : null;
}

export const grantRoutes = [
  orgRoute({
    method: "POST",
    path: "/v1/grants",
    scope: "grants:write",
    body: grantBody,
    response: { 201: grantResponse },
    summary: "Delegate read, write, approve or admin over the organization, a project (null: unscoped) or a subject.",
    operationId: "createGrant",
    tag: "Access",
    description:
      "Delegates read, write, approve or admin authority over the organization, a project (null: unscoped memory) or " +
      "a subject. The caller must hold every permission it delegates.",
    handler: (rc) => {
      const target = targetOf(rc.body);
      const permissions = [...new Set(rc.body.permissions)];
      const source = delegationSource(rc.caller, permissions, target);
      if ("missing" in source)
        throw forbidden(
          `You may only delegate authority you hold, from one grant of yours; missing "${source.missing.join('", "')}" on this target.`,
        );
      if (!getPrincipal(rc.db, rc.body.principal_id)) throw unresolved("principal", [rc.body.principal_id]);
      if (target.type === "project" && target.id !== null && !getProject(rc.db, target.id))
        throw unresolved("project", [target.id]);
      return commitWrite(rc, (db) => {
        const row: GrantRow = {
          grant_id: newId(ID_PREFIX.grant),
          grantee_id: rc.body.principal_id,
          target_type: target.type,
          target_id: target.id,
          can_read: +permissions.includes("read"),
          can_write: +permissions.includes("write"),
          can_approve: +permissions.includes("approve"),
          can_admin: +permissions.includes("admin"),
          granted_by: rc.caller.principalId,
          delegated_from: source.from,
          created_at: clock.nowIso(),
          revoked_at: null,
          revoked_by: null,
        };
        insertGrant(db, row);
        return {
          status: 201,
          data: grantView(row),
          audit: {
            action: "grant.created",
            resourceType: "grant",
            resourceId: row.grant_id,
            detail: {
              principal_id: row.grantee_id,
              target_type: row.target_type,
              permissions,
              delegated_from: row.delegated_from,
            },
          },
        };
      });
    },
  }),

  orgRoute({
    method: "GET",
    path: "/v1/grants",
    scope: "grants:read",
    query: listQuery,
    response: { 200: grantListResponse },
    summary: "Active and revoked grants: all for owners and admins, otherwise those you hold or gave.",
    operationId: "listGrants",
    tag: "Access",
    description:
      "Lists active and revoked grants: all for owners and admins, otherwise those the caller holds or gave.",
    handler: ({ db, caller, query }) => {
      const mine = !isAdmin(caller);
      const rows = grantsAfter(db, afterPair(query.after), mine ? caller.principalId : null, query.limit + 1);
      const { page, ...more } = pageOf(rows, query.limit, (g) => [g.created_at, g.grant_id]);
      return ok({ grants: page.map(grantView), ...more });
    },
  }),

  orgRoute({
    method: "DELETE",
    path: "/v1/grants/:id",
    scope: "grants:write",
    response: { 200: grantRevokedResponse },
    summary:
      "Revoke a grant and every grant delegated from it (owner, admin or its grantor); keys narrow on their next request.",
    operationId: "revokeGrant",
    tag: "Access",
    description:
      "Revokes a grant and every grant delegated from it (owner, admin or its grantor); keys relying on it narrow on " +
      "their next request.",
    handler: (rc) => {
      const g = visibleGrant(rc.db, rc.caller, rc.params.id);
      if (!g) throw notFound("Grant");
      if (!isAdmin(rc.caller) && g.granted_by !== rc.caller.principalId)
        throw forbidden("Only the grantor, an owner or an admin may revoke a grant.");
      return commitWrite(rc, (db) => {
        const already = g.revoked_at != null;
        // Also sweeps delegations of an already revoked grant that predate delegated_from cascades.
        const revoked = revokeGrantsCascade(db, [g.grant_id], rc.caller.principalId, clock.nowIso());
        const delegatedRevoked = revoked.filter((id) => id !== g.grant_id).length;
        return {
          status: 200,
          data: {
            ...grantView(getGrant(db, g.grant_id)!),
            already_revoked: already,
            delegated_revoked: delegatedRevoked,
          },
          audit: {
            action: "grant.revoked",
            resourceType: "grant",
            resourceId: g.grant_id,
            detail: { delegated_revoked: delegatedRevoked },
          },
        };
      });
    },
  }),
];
