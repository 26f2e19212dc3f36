// The one authorization module: "may principal P do A on record R", from the key's scopes (checked
// per route in src/org/execute.ts), the organization role, grants and record visibility.
//   read:  team records -> every principal holding the route's read scope; private records -> their
//          writer, or a principal holding an active read grant covering the record's organization,
//          project (or unscoped memory) or subject.
//   write: every role but reader; a reader only where a write grant covers the target.
//   workspaces (DESIGN "Workspaces scope records"): a record of a workspace's project is scoped to that
//          workspace. Its team records are read by the workspace's members (any role) and by
//          organization owners/admins; its private records by their writer, a covering read grant,
//          or the workspace's admins/owners. Writing there takes workspace role member or above, an
//          organization owner/admin role, or a covering write grant. Memberships load with the caller.
//          Events about a workspace's records carry its id and are read like its team records.
// Hidden records contribute nothing anywhere; the evidence view's hidden_source_count is the only trace.
import { ADMIN_ROLES } from "../auth/roles";
import { ApiError } from "../http/errors";
import type { Db } from "../sql/db";
import { type Caller, type GrantTarget, type HeldGrant, PERMISSIONS, type Permission } from "./caller";
import { VISIBILITIES } from "./visibility";

/** A record as authorization sees it. */
export interface Guarded {
  visibility: string;
  owner: string;
  subject_id?: string | null;
  project_id?: string | null;
  /** The workspace of the record's project (null or absent: none). */
  workspace_id?: string | null;
}

/** Workspace roles that read private records of the workspace, and that write its records. */
const WORKSPACE_PRIVATE_READERS = ["owner", "admin"];
const WORKSPACE_WRITERS = ["owner", "admin", "member"];

/** The caller's role in a workspace, if it is a live member. */
export const workspaceRole = (caller: Pick<Caller, "workspaces">, workspaceId: string) =>
  Object.hasOwn(caller.workspaces, workspaceId) ? caller.workspaces[workspaceId] : undefined;

/** The caller's active grants: one indexed query per request, so revocation applies on the next one. */
export function loadGrants(db: Db, principalId: string): HeldGrant[] {
  return db
    .all<{
      grant_id: string;
      target_type: GrantTarget["type"];
      target_id: string | null;
      can_read: number;
      can_write: number;
      can_approve: number;
      can_admin: number;
    }>(
      "SELECT grant_id, target_type, target_id, can_read, can_write, can_approve, can_admin FROM grants WHERE grantee_id = ? AND revoked_at IS NULL",
      principalId,
    )
    .map((g) => ({
      grantId: g.grant_id,
      type: g.target_type,
      id: g.target_id,
      permissions: PERMISSIONS.filter((p) => (g as unknown as Record<string, number>)[`can_${p}`] === 1),
    }));
}

/** A principal's live workspace memberships, workspace id -> role (loadCaller reads the same in its one statement). */
export function principalWorkspaces(db: Db, principalId: string): Record<string, Caller["role"]> {
  const row = db.first<{ w: string }>(
    "SELECT json_group_object(workspace_id, role) AS w FROM memberships WHERE principal_id = ? AND workspace_id IS NOT NULL AND removed_at IS NULL",
    principalId,
  );
  return JSON.parse(row?.w ?? "{}");
}

/**
 * May the caller name this workspace (a project's workspace on creation, the Atlas's workspace_graph)?
 * It exists and the caller is a live member or an organization owner/admin; otherwise it answers like
 * a missing one.
 */
export function workspaceVisible(db: Db, caller: Caller, workspaceId: string): boolean {
  if (!db.first("SELECT 1 FROM workspaces WHERE workspace_id = ?", workspaceId)) return false;
  return isAdmin(caller) || workspaceRole(caller, workspaceId) !== undefined;
}

/** Does a grant's target cover a record (or a target) with this subject and project? */
export const covers = (g: GrantTarget, r: { subject_id?: string | null; project_id?: string | null }) =>
  g.type === "organization" ||
  (g.type === "project" && r.project_id !== undefined && g.id === (r.project_id ?? null)) ||
  (g.type === "subject" && r.subject_id != null && g.id === r.subject_id);

/** Owners and admins: the organization-wide roles that administer (the one definition). */
export const isAdmin = (caller: Pick<Caller, "role">) => (ADMIN_ROLES as readonly string[]).includes(caller.role);

/** Shared resources (webhooks, channels, releases) are managed by their creator or an owner/admin. */
export const managesShared = (caller: Pick<Caller, "principalId" | "role">, createdBy: string) =>
  createdBy === caller.principalId || isAdmin(caller);

/**
 * What the organization role alone holds over every grant target, for delegation. An owner holds
 * everything: delegation starts there (no role reads every private record of a target, so read grants
 * would otherwise have no origin, and an owner may mint a key for any principal anyway). An admin
 * holds write (canWrite lets it write everywhere, workspaces included), approve and admin, but not
 * read: it does not read others' private records by its role, so it delegates read only through a read
 * grant of its own. Other roles hold nothing by role.
 */
export function roleHolds(caller: Pick<Caller, "role">, permission: Permission): boolean {
  if (caller.role === "owner") return true;
  return caller.role === "admin" && permission !== "read";
}

/** A grant of the caller that holds `permission` over the whole target (an organization grant, or the same target). */
export const grantHolds = (g: HeldGrant, permission: Permission, target: GrantTarget) =>
  g.permissions.includes(permission) && (g.type === "organization" || (g.type === target.type && g.id === target.id));

/** Does the caller hold `permission` over a target (for delegation: you may only grant what you hold)? Its role, or one of its grants. */
export function holds(caller: Caller, permission: Permission, target: GrantTarget): boolean {
  return roleHolds(caller, permission) || caller.grants.some((g) => grantHolds(g, permission, target));
}

/** The caller's active grants that hold `permission` and cover the record or target. */
export const grantsCovering = (
  caller: Pick<Caller, "grants">,
  permission: Permission,
  r: { subject_id?: string | null; project_id?: string | null },
) => caller.grants.filter((g) => g.permissions.includes(permission) && covers(g, r));

/**
 * May the caller read the record without any grant: it wrote it, or the record's visibility and
 * workspace let it (team outside workspaces; in a workspace, team for its members and organization
 * owners/admins, private for the workspace's admins/owners). Access simulation shows it as its own gate.
 */
export function readsByVisibility(caller: Pick<Caller, "principalId" | "role" | "workspaces">, r: Guarded): boolean {
  if (r.owner === caller.principalId) return true;
  if (!r.workspace_id) return r.visibility === "team";
  const role = workspaceRole(caller, r.workspace_id);
  if (r.visibility === "team") return role !== undefined || isAdmin(caller);
  return role !== undefined && WORKSPACE_PRIVATE_READERS.includes(role);
}

export const canRead = (caller: Caller, r: Guarded): boolean =>
  readsByVisibility(caller, r) || grantsCovering(caller, "read", r).length > 0;

/** Does the organization role write (outside workspaces, without a grant)? Every role but reader. */
export const roleWrites = (role: Caller["role"]) => role !== "reader";

/** What a write lands on, for write grants: its subject and project (null: unscoped memory). */
export type WriteTarget = { subject_id?: string | null; project_id?: string | null; workspace_id?: string | null };

export function canWrite(caller: Caller, target: WriteTarget): boolean {
  if (grantsCovering(caller, "write", target).length > 0) return true;
  if (!target.workspace_id) return roleWrites(caller.role);
  const role = workspaceRole(caller, target.workspace_id);
  return isAdmin(caller) || (role !== undefined && WORKSPACE_WRITERS.includes(role));
}

/** canWrite as a check for the routes a reader may use under a write grant (see grantWritable). */
export function requireWrite(caller: Caller, target: WriteTarget): void {
  if (!canWrite(caller, target)) {
    throw new ApiError(
      "FORBIDDEN",
      target.workspace_id
        ? "Writing to this workspace's records takes workspace role member or above, or a write grant."
        : "The reader role cannot write here without a write grant.",
    );
  }
}

/**
 * SQL form of canRead, for queries that filter before search and pagination. `alias` names a table
 * with visibility, subject_id and project_id columns (pass targets: false when it has no such
 * columns, e.g. events: then only an organization-wide grant widens it, and a workspace's private
 * rows stay their writer's). Tables with a workspace_id column (observations, claims, events) are
 * scoped by workspace as canRead describes; pass workspaces: false for a table without one.
 * Returns the clause and its bind values, in order.
 */
export function readableWhere(
  caller: Caller,
  alias: string,
  ownerColumn = "author_id",
  opts: { targets?: boolean; workspaces?: boolean } = {},
): [string, ...unknown[]] {
  const ways = readableWays(caller, alias, ownerColumn, opts);
  return [`(${ways.map(([clause]) => clause).join(" OR ")})`, ...ways.flatMap(([, ...args]) => args)];
}

/**
 * One condition of a way to read a record: a column of the record (`owner`: its writer's column) equal
 * to a value (null: the column is null), or (`in`) to one of several values.
 */
export type WayCondition =
  | { column: "visibility" | "workspace_id" | "owner" | "project_id" | "subject_id"; value: string | null }
  | { column: "workspace_id" | "project_id" | "subject_id"; in: string[] };

/** A way a record can be readable: all of its conditions hold (none: every record). */
export type ReadableWay = WayCondition[];

/**
 * Each way a record can be readable by the caller (team outside workspaces, team of the caller's
 * workspaces, authorship, a grant's projects, …) as conditions on the record's columns: the one
 * decomposition of canRead that readableWays renders as SQL and the vector index renders as metadata
 * filters (src/vector/metadata.ts, for compile: src/domains/memory/vector-candidates.ts). Options as readableWays'.
 */
export function readableWayConditions(
  caller: Caller,
  opts: { targets?: boolean; workspaces?: boolean; singleValues?: boolean } = {},
): ReadableWay[] {
  const each = opts.singleValues === true;
  /** `column` is one of `values`: one way, or one per value. */
  const oneOf = (
    column: "workspace_id" | "project_id" | "subject_id",
    values: string[],
    within: WayCondition[] = [],
  ): ReadableWay[] =>
    each ? values.map((value) => [...within, { column, value }]) : [[...within, { column, in: values }]];
  const team: WayCondition = { column: "visibility", value: "team" };
  const reads = caller.grants.filter((g) => g.permissions.includes("read"));
  if (reads.some((g) => g.type === "organization"))
    return each ? VISIBILITIES.map((value) => [{ column: "visibility", value }]) : [[]];
  const ways: ReadableWay[] = [];
  if (opts.workspaces === false || isAdmin(caller)) ways.push([team]);
  else {
    ways.push([team, { column: "workspace_id", value: null }]);
    const member = Object.keys(caller.workspaces);
    if (member.length) ways.push(...oneOf("workspace_id", member, [team]));
  }
  if (opts.workspaces !== false && opts.targets !== false) {
    const privateReader = Object.entries(caller.workspaces)
      .filter(([, role]) => WORKSPACE_PRIVATE_READERS.includes(role))
      .map(([id]) => id);
    if (privateReader.length) {
      if (each)
        for (const id of privateReader)
          for (const value of VISIBILITIES)
            ways.push([
              { column: "visibility", value },
              { column: "workspace_id", value: id },
            ]);
      else ways.push(...oneOf("workspace_id", privateReader));
    }
  }
  ways.push([{ column: "owner", value: caller.principalId }]);
  if (opts.targets !== false) {
    const projects = reads.filter((g) => g.type === "project");
    const named = projects.flatMap((g) => (g.id ? [g.id] : []));
    if (named.length) ways.push(...oneOf("project_id", named));
    if (projects.some((g) => g.id === null)) ways.push([{ column: "project_id", value: null }]);
    const subjects = reads.filter((g) => g.type === "subject").flatMap((g) => (g.id ? [g.id] : []));
    if (subjects.length) ways.push(...oneOf("subject_id", subjects));
  }
  return each ? [...new Map(ways.map((w) => [JSON.stringify(w), w])).values()] : ways;
}

/**
 * readableWhere as its disjuncts: readableWayConditions rendered as SQL clauses, each with its bind
 * values. A read that must cost what it returns walks one index per way (see retrieval.ts retrievableWays).
 *
 * With singleValues, no way holds a list or takes every visibility: each is equalities on the columns of
 * one index and, with seq last in it, one range in write order (memory/compile.ts readableNeighbours). A list
 * becomes one way per value; a way that takes every visibility becomes one per visibility (VISIBILITIES
 * are all a record can hold: every writer validates against them). Ways that come out twice are kept once.
 */
export function readableWays(
  caller: Caller,
  alias: string,
  ownerColumn = "author_id",
  opts: { targets?: boolean; workspaces?: boolean; singleValues?: boolean } = {},
): [string, ...unknown[]][] {
  const condition = (c: WayCondition): [string, ...unknown[]] => {
    const column = `${alias}.${c.column === "owner" ? ownerColumn : c.column}`;
    if ("in" in c) return [`${column} IN (SELECT value FROM json_each(?))`, JSON.stringify(c.in)];
    if (c.value === null) return [`${column} IS NULL`];
    // Visibility values are the fixed VISIBILITIES: written inline, so a way on them keeps its index.
    return c.column === "visibility" ? [`${column} = '${c.value}'`] : [`${column} = ?`, c.value];
  };
  return readableWayConditions(caller, opts).map((way): [string, ...unknown[]] => {
    if (!way.length) return ["1 = 1"];
    const parts = way.map(condition);
    const clause = parts.length === 1 ? parts[0][0] : `(${parts.map(([p]) => p).join(" AND ")})`;
    return [clause, ...parts.flatMap(([, ...args]) => args)];
  });
}
