// What a credential may create (DESIGN part 3, "Nothing a credential creates holds more than the
// credential"). Each rule is decided here once and asked by every route that creates authority:
//   key          its scopes and trust ceiling are held by the minting credential (SPEC Auth rule 6);
//                a key for another principal needs owner/admin and never reaches a higher role.
//   account      a dashboard account's full sessions hold SESSION_SCOPES and sessionCeiling(role), so
//                creating one (or giving its principal an organization role) needs a credential that
//                holds both, and a role not below the account's.
//   role         a new principal or a membership never carries a role above the caller's.
//   grant        you delegate only what you hold (policy.ts `holds`, used by the grants route).
import { ALL_SCOPES, holdsAll } from "../auth/scopes";
import { type Role, roleRank } from "../auth/roles";
import { type Trust, trustAtMost } from "../auth/trust";
import { forbidden } from "../http/errors";
import type { Caller } from "./caller";
import { isAdmin } from "./policy";

/** The scopes a full dashboard session holds. */
export const SESSION_SCOPES: readonly string[] = [ALL_SCOPES];

/** The trust ceiling of a full dashboard session: `verified` for owners, `high` otherwise. */
export const sessionCeiling = (role: Role): Trust => (role === "owner" ? "verified" : "high");

/** A key with these scopes and this ceiling: only what the minting credential holds itself. */
export function requireMintable(caller: Caller, scopes: readonly string[], maxTrust: Trust): void {
  if (!holdsAll(caller.scopes, scopes)) throw forbidden("A key cannot mint scopes it does not hold.");
  // Such a key pulls and pushes as a federation peer (a "*" key does so only for owners and admins).
  if (scopes.includes("federation:write") && !isAdmin(caller))
    throw forbidden(
      'Only an owner or admin may mint a key that names "federation:write": it acts as a federation peer.',
    );
  if (!trustAtMost(maxTrust, caller.maxTrust))
    throw forbidden(`This credential may not mint a "${maxTrust}" trust ceiling.`);
}

/**
 * Minting or revoking a key of another principal: owner or admin only (others get `hidden`, answered
 * like a missing record), and never for a principal of a higher role.
 */
export function keyAuthority(caller: Caller, target: { role: Role } | null): "ok" | "hidden" | "higher" {
  if (!target || !isAdmin(caller)) return "hidden";
  return roleRank(target.role) > roleRank(caller.role) ? "higher" : "ok";
}

/** A role given to a principal (a new one, or by a membership): only an owner gives `owner`; never above the caller's. */
export function requireRoleAuthority(caller: Caller, role: Role): void {
  if (role === "owner" && caller.role !== "owner") throw forbidden("Only an owner may grant or change the owner role.");
  if (roleRank(role) > roleRank(caller.role)) throw forbidden(`The ${role} role is above your own (${caller.role}).`);
}

/**
 * A dashboard account with `role` (created, or its principal given that organization role): its full
 * sessions hold scopes "*" and sessionCeiling(role), so the caller's credential must hold both and its
 * role must not be below. 403 names everything missing.
 */
export function requireAccountAuthority(caller: Caller, role: Role): void {
  const ceiling = sessionCeiling(role);
  const missing: string[] = [];
  if (!holdsAll(caller.scopes, SESSION_SCOPES)) missing.push('scopes "*"');
  if (!trustAtMost(ceiling, caller.maxTrust))
    missing.push(`a "${ceiling}" trust ceiling (it holds "${caller.maxTrust}")`);
  if (roleRank(role) > roleRank(caller.role)) missing.push(`the ${role} role (it holds ${caller.role})`);
  if (missing.length)
    throw forbidden(
      `A dashboard account with the ${role} role holds scopes "*" and a "${ceiling}" trust ceiling; ` +
        `this credential lacks ${missing.join(" and ")}.`,
    );
}
