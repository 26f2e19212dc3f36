// Directories of what the caller may read: projects and subjects backed by readable records, and
// their bounded lists of canonical references. A project or subject with nothing readable is a 404,
// exactly like a missing one. Their reads (also the Atlas's scope_preview) apply retrievable in the walk.
import { afterPair, decodeCursor, pageOf } from "../../http/cursor";
import { notFound } from "../../http/errors";
import { orgRoute } from "../../org/route";
import type { Db } from "../../sql/db";
import type { Caller } from "../../org/request";
import { ok } from "../../org/request";
import { projectVisibleWhere, retrievable } from "../../access/retrieval";
import { getProject } from "../memory/records";
import {
  listQuery,
  projectListResponse,
  projectReferencesResponse,
  subjectListResponse,
  subjectReferencesResponse,
} from "./schema";

/** `~` selects explicit unscoped memory (records with no project). */
export const UNSCOPED = "~";

export type RecordScope = { column: "project_id" | "subject_id"; value: string | null };

/** Retrievable observation and claim ids in one project or subject, oldest first, after a (created_at, id) cursor. */
export function recordReferences(db: Db, caller: Caller, scope: RecordScope, after: [string, string], limit: number) {
  const [ro, ...roArgs] = retrievable(caller, "o");
  const [rc, ...rcArgs] = retrievable(caller, "c");
  const match = (alias: string) =>
    scope.value === null ? `${alias}.${scope.column} IS NULL` : `${alias}.${scope.column} = ?`;
  const value = scope.value === null ? [] : [scope.value];
  return db.all<{ type: string; id: string; subject_id: string; project_id: string | null; created_at: string }>(
    `SELECT * FROM (
       SELECT 'observation' AS type, o.observation_id AS id, o.subject_id, o.project_id, o.created_at FROM observations o
        WHERE ${match("o")} AND ${ro}
       UNION ALL
       SELECT 'claim' AS type, c.claim_id AS id, c.subject_id, c.project_id, c.created_at FROM claims c
        WHERE ${match("c")} AND ${rc})
     WHERE (created_at, id) > (?, ?) ORDER BY created_at, id LIMIT ?`,
    ...value,
    ...roArgs,
    ...value,
    ...rcArgs,
    ...after,
    limit + 1,
  );
}

/** Projects holding a retrievable record, after a (created_at, project_id) cursor. */
export function retrievableProjects(db: Db, caller: Caller, after: [string, string], limit: number) {
  const [visible, ...args] = projectVisibleWhere(caller, "p", { orCreator: false });
  return db.all<{ project_id: string; reference: string; created_at: string }>(
    `SELECT p.project_id, p.reference, p.created_at FROM projects p
      WHERE (p.created_at, p.project_id) > (?, ?) AND ${visible}
      ORDER BY p.created_at, p.project_id LIMIT ?`,
    ...after,
    ...args,
    limit + 1,
  );
}

/**
 * Subjects of retrievable records, in order, after a subject id. Each table is walked in subject order
 * (its by-subject index) and stopped once it has the page, so the cost follows the subjects read, not
 * every record of the organization.
 */
export function retrievableSubjects(db: Db, caller: Caller, after: string, limit: number) {
  const [ro, ...roArgs] = retrievable(caller, "o");
  const [rc, ...rcArgs] = retrievable(caller, "c");
  return db.all<{ subject_id: string }>(
    `SELECT subject_id FROM (
       SELECT * FROM (SELECT DISTINCT o.subject_id FROM observations o WHERE o.subject_id > ? AND ${ro} ORDER BY o.subject_id LIMIT ?)
       UNION SELECT * FROM (SELECT DISTINCT c.subject_id FROM claims c WHERE c.subject_id > ? AND ${rc} ORDER BY c.subject_id LIMIT ?))
     ORDER BY subject_id LIMIT ?`,
    after,
    ...roArgs,
    limit + 1,
    after,
    ...rcArgs,
    limit + 1,
    limit + 1,
  );
}

function hasReadable(db: Db, caller: Caller, scope: RecordScope): boolean {
  return recordReferences(db, caller, scope, ["", ""], 0).length > 0;
}

export const directoryRoutes = [
  orgRoute({
    method: "GET",
    path: "/v1/projects",
    scope: "projects:read",
    query: listQuery,
    response: { 200: projectListResponse },
    summary: "Projects backed by records the caller may read.",
    operationId: "listProjects",
    tag: "Access",
    description: "Lists the projects that back records the caller may read.",
    handler: ({ db, caller, query }) => {
      const rows = retrievableProjects(db, caller, afterPair(query.after), query.limit);
      const p = pageOf(rows, query.limit, (r) => [r.created_at, r.project_id]);
      return ok({ projects: p.page, has_more: p.has_more, next_cursor: p.next_cursor });
    },
  }),

  orgRoute({
    method: "GET",
    path: "/v1/projects/:id/references",
    scope: "projects:read",
    query: listQuery,
    response: { 200: projectReferencesResponse },
    summary: "Readable observation and claim ids of a project; `~` selects unscoped memory.",
    operationId: "listProjectReferences",
    tag: "Access",
    description:
      "Lists the observation and claim ids of a project the caller may read; the id `~` selects memory outside any " +
      "project.",
    handler: ({ db, caller, params, query }) => {
      const projectId = params.id === UNSCOPED ? null : params.id;
      const project = projectId === null ? null : getProject(db, projectId);
      const scope: RecordScope = { column: "project_id", value: projectId };
      if ((projectId !== null && !project) || !hasReadable(db, caller, scope)) throw notFound("Project");
      const after = afterPair(query.after);
      const p = pageOf(recordReferences(db, caller, scope, after, query.limit), query.limit, (r) => [
        r.created_at,
        r.id,
      ]);
      return ok({
        project_id: projectId,
        reference: project?.reference ?? null,
        references: p.page.map(({ type, id, subject_id, created_at }) => ({ type, id, subject_id, created_at })),
        has_more: p.has_more,
        next_cursor: p.next_cursor,
      });
    },
  }),

  orgRoute({
    method: "GET",
    path: "/v1/subjects",
    scope: "subjects:read",
    query: listQuery,
    response: { 200: subjectListResponse },
    summary: "Subjects of records the caller may read, in order.",
    operationId: "listSubjects",
    tag: "Access",
    description: "Lists the subjects of records the caller may read, in order.",
    handler: ({ db, caller, query }) => {
      const after = query.after
        ? decodeCursor(query.after, (v): v is [string] => Array.isArray(v) && typeof v[0] === "string")[0]
        : "";
      const rows = retrievableSubjects(db, caller, after, query.limit);
      const p = pageOf(rows, query.limit, (r) => [r.subject_id]);
      return ok({ subjects: p.page, has_more: p.has_more, next_cursor: p.next_cursor });
    },
  }),

  orgRoute({
    method: "GET",
    path: "/v1/subjects/:id/references",
    scope: "subjects:read",
    query: listQuery,
    response: { 200: subjectReferencesResponse },
    summary: "Readable observation and claim ids about a subject, and its namespaced references.",
    operationId: "listSubjectReferences",
    tag: "Access",
    description:
      "Lists the observation and claim ids about a subject that the caller may read, and its namespaced external " +
      "references.",
    handler: ({ db, caller, params, query }) => {
      const scope: RecordScope = { column: "subject_id", value: params.id };
      if (!hasReadable(db, caller, scope)) throw notFound("Subject");
      const after = afterPair(query.after);
      const p = pageOf(recordReferences(db, caller, scope, after, query.limit), query.limit, (r) => [
        r.created_at,
        r.id,
      ]);
      // Namespaced references: the subject itself and the projects (by reference) its readable records belong to.
      const projects = [...new Set(p.page.flatMap((r) => (r.project_id ? [r.project_id] : [])))].flatMap((id) => {
        const pr = getProject(db, id);
        return pr ? [`project:${pr.reference}`] : [];
      });
      return ok({
        subject_id: params.id,
        namespaced: [`subject:${params.id}`, ...projects],
        references: p.page.map(({ type, id, project_id, created_at }) => ({ type, id, project_id, created_at })),
        has_more: p.has_more,
        next_cursor: p.next_cursor,
      });
    },
  }),
];
