import { keyAuthority, requireMintable } from "../../access/authority";
import { isAdmin } from "../../access/policy";
import { normalizeScopes } from "../../auth/scopes";
import { ADMIN_ROLES } from "../../auth/roles";
import { DEFAULT_KEY_CEILING, lowerTrust } from "../../auth/trust";
import { afterPair, pageOf } from "../../http/cursor";
import { forbidden, notFound, unresolved } from "../../http/errors";
import { orgRoute } from "../../org/route";
import { type IndexWrite, ok } from "../../org/request";
import { commitWrite } from "../../org/write";
import { principalHasCredential, revokeWhatPrincipalReaches } from "./revocation";
import { clock } from "../../http/clock";
import {
  keyListResponse,
  listQuery,
  mintedKeyResponse,
  mintKeyBody,
  principalListResponse,
  principalResponse,
  revokedKeyResponse,
} from "./schema";
import {
  getKey,
  getPrincipal,
  insertKey,
  insertPrincipal,
  keysAfter,
  keyView,
  liveMembershipsOf,
  principalRole,
  principalsAfter,
  principalView,
  revokeKey,
  type PrincipalRow,
} from "./store";

export const identityRoutes = [
  orgRoute({
    method: "GET",
    path: "/v1/principal",
    scope: null,
    response: { 200: principalResponse },
    summary:
      "The calling credential: principal, scopes, trust ceiling, organization role, organization id and operator account username.",
    operationId: "getCurrentPrincipal",
    tag: "Operator",
    description:
      "Describes the calling credential: its principal, scopes, trust ceiling and organization role, the " +
      "organization's id, and the operator account's username (null for a principal without one).",
    handler: ({ db, caller, orgId, deps }) =>
      ok({
        principal_id: caller.principalId,
        key_id: caller.keyId,
        scopes: caller.scopes.includes("*") ? "*" : caller.scopes,
        max_trust: caller.maxTrust,
        role: caller.role,
        org_id: orgId,
        // A session's account is its principal's one account.
        username: deps.accountUsername(db, caller.principalId),
      }),
  }),

  orgRoute({
    method: "POST",
    path: "/v1/keys",
    scope: "keys:manage",
    body: mintKeyBody,
    response: { 201: mintedKeyResponse },
    summary: "Mint a key (raw value returned once) for a new agent principal, or for principal_id.",
    operationId: "createKey",
    tag: "Operator",
    description:
      "Mints an API key for a new agent principal, or for `principal_id`. The raw `svc_sk_` value is returned once; a " +
      "key cannot grant scopes or a trust ceiling its creator lacks (403).",
    handler: (rc) => {
      const { caller, body } = rc;
      const scopes = normalizeScopes(body.scopes);
      const maxTrust = body.max_trust ?? lowerTrust(DEFAULT_KEY_CEILING, caller.maxTrust);
      requireMintable(caller, scopes, maxTrust);
      let minted: { keyHash: string; keyId: string } | null = null;
      const reply = commitWrite(rc, (db) => {
        let principal: PrincipalRow;
        if (body.principal_id && body.principal_id !== caller.principalId) {
          const target = getPrincipal(db, body.principal_id);
          const authority = keyAuthority(caller, target);
          if (authority === "hidden") throw unresolved("principal", [body.principal_id]);
          if (authority === "higher") throw forbidden("A key cannot be minted for a principal with a higher role.");
          principal = target!;
        } else if (body.principal_id) {
          principal = getPrincipal(db, caller.principalId)!;
        } else {
          principal = insertPrincipal(db, "agent", body.label, "member", { createdBy: caller.principalId });
        }
        const { raw, keyHash, row } = insertKey(
          db,
          principal.principal_id,
          body.label,
          scopes,
          maxTrust,
          caller.principalId,
        );
        minted = { keyHash, keyId: row.key_id };
        return {
          status: 201,
          data: { ...keyView(row), key: raw },
          audit: {
            action: "key.created",
            resourceType: "key",
            resourceId: row.key_id,
            detail: { principal_id: principal.principal_id, scopes, max_trust: maxTrust },
          },
        };
      });
      return { ...reply, indexWrites: [{ op: "add_credential", ...minted! }] };
    },
  }),

  orgRoute({
    method: "GET",
    path: "/v1/keys",
    scope: "keys:manage",
    query: listQuery,
    response: { 200: keyListResponse },
    summary: "Key metadata with status; owner/admin see every key, others their own principal's.",
    operationId: "listKeys",
    tag: "Operator",
    description:
      "Lists key metadata and status, never a hash or secret. Owners and admins see every key, others their own " +
      "principal's.",
    handler: ({ db, caller, query }) => {
      const after = afterPair(query.after);
      const mine = !isAdmin(caller);
      const rows = keysAfter(db, after, mine ? caller.principalId : null, query.limit + 1);
      const { page, ...more } = pageOf(rows, query.limit, (k) => [k.created_at, k.key_id]);
      return ok({ keys: page.map(keyView), ...more });
    },
  }),

  orgRoute({
    method: "DELETE",
    path: "/v1/keys/:id",
    scope: "keys:manage",
    response: { 200: revokedKeyResponse },
    summary:
      "Revoke a key; it fails with 401 from the next request on. A principal's last credential takes what it created with it (cascade).",
    operationId: "revokeKey",
    tag: "Operator",
    description:
      "Revokes a key; it fails with 401 from the next request on. When it was its principal's last credential, what " +
      "that principal created is revoked with it.",
    handler: (rc) => {
      const key = getKey(rc.db, rc.params.id);
      if (!key) throw notFound("Key");
      if (key.principal_id !== rc.caller.principalId) {
        // The minting rule: an admin cannot revoke an owner's key (nor lock the organization out).
        const holder = principalRole(rc.db, key.principal_id);
        const authority = keyAuthority(rc.caller, holder);
        if (authority === "hidden") throw notFound("Key");
        if (authority === "higher") throw forbidden("A key of a principal with a higher role cannot be revoked.");
      }
      const removed: IndexWrite[] = [{ op: "remove_credential", keyHash: key.key_hash }];
      const reply = commitWrite(rc, (db) => {
        const already = key.status === "revoked";
        let cascade = null;
        if (!already) {
          revokeKey(db, key.key_id);
          // The principal's last credential: what it created loses its standing, as on its removal.
          if (!principalHasCredential(db, key.principal_id)) {
            const reached = revokeWhatPrincipalReaches(db, key.principal_id, rc.caller.principalId, clock.nowIso());
            for (const keyHash of reached.credentialHashes) removed.push({ op: "remove_credential", keyHash });
            cascade = {
              keys_revoked: reached.keysRevoked,
              grants_revoked: reached.grantsRevoked,
              webhooks_disabled: reached.webhooksDisabled,
              accounts_disabled: reached.accountsDisabled,
            };
          }
        }
        return {
          status: 200,
          data: { ...keyView(getKey(db, key.key_id)!), already_revoked: already, cascade },
          audit: {
            action: "key.revoked",
            resourceType: "key",
            resourceId: key.key_id,
            ...(cascade ? { detail: { cascade } } : {}),
          },
        };
      });
      return { ...reply, indexWrites: removed };
    },
  }),

  orgRoute({
    method: "GET",
    path: "/v1/principals",
    scope: "principals:read",
    roles: ADMIN_ROLES,
    query: listQuery,
    response: { 200: principalListResponse },
    summary: "Bounded, non-secret directory of the organization's principals (owner or admin).",
    operationId: "listPrincipals",
    tag: "Operator",
    description: "A bounded directory of the organization's principals without secrets; owner or admin only.",
    handler: ({ db, query }) => {
      const after = afterPair(query.after);
      const rows = principalsAfter(db, after, query.limit + 1);
      const { page, ...more } = pageOf(rows, query.limit, (p) => [p.created_at, p.principal_id]);
      const memberships = liveMembershipsOf(
        db,
        page.map((p) => p.principal_id),
      );
      return ok({
        principals: page.map((p) => ({
          ...principalView(p),
          memberships: memberships
            .filter((m) => m.principal_id === p.principal_id)
            .map(({ membership_id, workspace_id, role }) => ({ membership_id, workspace_id, role })),
        })),
        ...more,
      });
    },
  }),
];
