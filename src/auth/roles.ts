import { z } from "zod";

// Organization roles, ascending authority.
export const ROLES = ["reader", "member", "admin", "owner"] as const;
export type Role = (typeof ROLES)[number];
export const roleSchema = z.enum(ROLES);
export const roleRank = (r: Role) => ROLES.indexOf(r);
/** The roles that administer an organization (a route's `roles`, policy.ts isAdmin). */
export const ADMIN_ROLES = ["owner", "admin"] as const satisfies readonly Role[];
