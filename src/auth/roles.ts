import { z } from "zod";

// Organization roles, ascending authority.
export const ROLES = ["reader", "member", "admin", "owner"] as const;
export type Role = (typeof ROLES)[number];
export const roleSchema = z.enum(ROLES);
export const roleRank = (r: Role) => ROLES.indexOf(r);
