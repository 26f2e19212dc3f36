// The one authorization module: "may principal P do A on record R", from the key's scopes (checked
// per route in src/org/execute.ts), the organization role, grants and record visibility.
//   read:  team records -> every principal holding the route's read scope; private records -> their
//          writer, or a principal holding an active read grant covering the record's organization,
//          project (or unscoped memory) or subject.
//   write: every role but reader; a reader only where a write grant covers the target.
// Hidden records contribute nothing anywhere; the evidence view's hidden_source_count is the only trace.
import { ApiError } from "../http/errors";
import type { Db } from "../org/db";
import type { Caller } from "../org/request";

export const PERMISSIONS = ["read", "write", "approve", "admin"] as const;
export type Permission = (typeof PERMISSIONS)[number];

export interface GrantTarget {
  type: "organization" | "project" | "subject";
  /** project id (null: unscoped memory) or subject id; null for the organization. */
  id: string | null;
}

export interface HeldGrant extends GrantTarget {
  grantId: string;
  permissions: Permission[];
}

/** A record as authorization sees it. */
export interface Guarded {
  visibility: string;
  owner: string;
  subject_id?: string | null;
  project_id?: string | null;
}

/** The caller's active grants: one indexed query per request, so revocation applies on the next one. */
export function loadGrants(db: Db, principalId: string): HeldGrant[] {
  return db.all<{ grant_id: string; target_type: GrantTarget["type"]; target_id: string | null; can_read: number; can_write: number; can_approve: number; can_admin: number }>(
    "SELECT grant_id, target_type, target_id, can_read, can_write, can_approve, can_admin FROM grants WHERE grantee_id = ? AND revoked_at IS NULL",
    principalId,
  ).map((g) => ({
    grantId: g.grant_id, type: g.target_type, id: g.target_id,
    permissions: PERMISSIONS.filter((p) => (g as unknown as Record<string, number>)[`can_${p}`] === 1),
  }));
}

/** Does a grant's target cover a record (or a target) with this subject and project? */
export const covers = (g: GrantTarget, r: { subject_id?: string | null; project_id?: string | null }) =>
  g.type === "organization" ||
  (g.type === "project" && r.project_id !== undefined && g.id === (r.project_id ?? null)) ||
  (g.type === "subject" && r.subject_id != null && g.id === r.subject_id);

/** Owners and admins: the organization-wide roles that administer (the one definition). */
export const isAdmin = (caller: Pick<Caller, "role">) => caller.role === "owner" || caller.role === "admin";

/** Does the caller hold `permission` over a target (for delegation: you may only grant what you hold)? */
export function holds(caller: Caller, permission: Permission, target: GrantTarget): boolean {
  if (isAdmin(caller)) return true;
  return caller.grants.some((g) => g.permissions.includes(permission) &&
    (g.type === "organization" || (g.type === target.type && g.id === target.id)));
}

export function canRead(caller: Caller, r: Guarded): boolean {
  if (r.visibility === "team" || r.owner === caller.principalId) return true;
  return caller.grants.some((g) => g.permissions.includes("read") && covers(g, r));
}

/** What a write lands on, for write grants: its subject and project (null: unscoped memory). */
export type WriteTarget = { subject_id?: string | null; project_id?: string | null };

/** The write target a request body names (appends and consolidations): for grantWritable routes. */
export const targetInBody = (rc: { body: { subject_id: string; project_id?: string | null } }): WriteTarget =>
  ({ subject_id: rc.body.subject_id, project_id: rc.body.project_id ?? null });

export function canWrite(caller: Caller, target: WriteTarget): boolean {
  if (caller.role !== "reader") return true;
  return caller.grants.some((g) => g.permissions.includes("write") && covers(g, target));
}

/** canWrite as a check for the routes a reader may use under a write grant (see grantWritable). */
export function requireWrite(caller: Caller, target: WriteTarget): void {
  if (!canWrite(caller, target)) throw new ApiError("FORBIDDEN", "The reader role cannot write here without a write grant.");
}

/**
 * SQL form of canRead, for queries that filter before search and pagination. `alias` names a table
 * with visibility, subject_id and project_id columns (pass targets: false when it has no such
 * columns, e.g. events: then only an organization-wide grant widens it). Returns the clause and its
 * bind values, in order.
 */
export function readableWhere(caller: Caller, alias: string, ownerColumn = "author_id", opts: { targets?: boolean } = {}): [string, ...unknown[]] {
  const reads = caller.grants.filter((g) => g.permissions.includes("read"));
  if (reads.some((g) => g.type === "organization")) return ["1 = 1"];
  const parts = [`${alias}.visibility = 'team'`, `${alias}.${ownerColumn} = ?`];
  const args: unknown[] = [caller.principalId];
  if (opts.targets !== false) {
    const projects = reads.filter((g) => g.type === "project");
    const named = projects.flatMap((g) => (g.id ? [g.id] : []));
    if (named.length) {
      parts.push(`${alias}.project_id IN (SELECT value FROM json_each(?))`);
      args.push(JSON.stringify(named));
    }
    if (projects.some((g) => g.id === null)) parts.push(`${alias}.project_id IS NULL`);
    const subjects = reads.filter((g) => g.type === "subject").map((g) => g.id);
    if (subjects.length) {
      parts.push(`${alias}.subject_id IN (SELECT value FROM json_each(?))`);
      args.push(JSON.stringify(subjects));
    }
  }
  return [`(${parts.join(" OR ")})`, ...args];
}
