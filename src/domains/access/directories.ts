// Directories of what the caller may read: projects and subjects backed by readable records, and
// their bounded lists of canonical references. A project or subject with nothing readable is a 404,
// exactly like a missing one.
import { afterPair, decodeCursor, pageOf } from "../../http/cursor";
import { notFound } from "../../http/errors";
import { orgRoute } from "../../http/route";
import type { Db } from "../../org/db";
import type { Caller } from "../../org/request";
import { ok } from "../../org/request";
import { type RecordScope, getProject, recordReferences, retrievableProjects, retrievableSubjects } from "../memory/records";
import { listQuery, projectListResponse, projectReferencesResponse, subjectListResponse, subjectReferencesResponse } from "./schema";

/** `~` selects explicit unscoped memory (records with no project). */
export const UNSCOPED = "~";

function hasReadable(db: Db, caller: Caller, scope: RecordScope): boolean {
  return recordReferences(db, caller, scope, ["", ""], 0).length > 0;
}

export const directoryRoutes = [
  orgRoute({
    method: "GET", path: "/v1/projects", scope: "projects:read", query: listQuery,
    response: { 200: projectListResponse },
    summary: "Projects backed by records the caller may read.",
    handler: ({ db, caller, query }) => {
      const rows = retrievableProjects(db, caller, afterPair(query.after), query.limit);
      const p = pageOf(rows, query.limit, (r) => [r.created_at, r.project_id]);
      return ok({ projects: p.page, has_more: p.has_more, next_cursor: p.next_cursor });
    },
  }),

  orgRoute({
    method: "GET", path: "/v1/projects/:id/references", scope: "projects:read", query: listQuery,
    response: { 200: projectReferencesResponse },
    summary: "Readable observation and claim ids of a project; `~` selects unscoped memory.",
    handler: ({ db, caller, params, query }) => {
      const projectId = params.id === UNSCOPED ? null : params.id;
      const project = projectId === null ? null : getProject(db, projectId);
      const scope: RecordScope = { column: "project_id", value: projectId };
      if ((projectId !== null && !project) || !hasReadable(db, caller, scope)) throw notFound("Project");
      const after = afterPair(query.after);
      const p = pageOf(recordReferences(db, caller, scope, after, query.limit), query.limit, (r) => [r.created_at, r.id]);
      return ok({
        project_id: projectId, reference: project?.reference ?? null,
        references: p.page.map(({ type, id, subject_id, created_at }) => ({ type, id, subject_id, created_at })),
        has_more: p.has_more, next_cursor: p.next_cursor,
      });
    },
  }),

  orgRoute({
    method: "GET", path: "/v1/subjects", scope: "subjects:read", query: listQuery,
    response: { 200: subjectListResponse },
    summary: "Subjects of records the caller may read, in order.",
    handler: ({ db, caller, query }) => {
      const after = query.after ? decodeCursor(query.after, (v): v is [string] => Array.isArray(v) && typeof v[0] === "string")[0] : "";
      const rows = retrievableSubjects(db, caller, after, query.limit);
      const p = pageOf(rows, query.limit, (r) => [r.subject_id]);
      return ok({ subjects: p.page, has_more: p.has_more, next_cursor: p.next_cursor });
    },
  }),

  orgRoute({
    method: "GET", path: "/v1/subjects/:id/references", scope: "subjects:read", query: listQuery,
    response: { 200: subjectReferencesResponse },
    summary: "Readable observation and claim ids about a subject, and its namespaced references.",
    handler: ({ db, caller, params, query }) => {
      const scope: RecordScope = { column: "subject_id", value: params.id };
      if (!hasReadable(db, caller, scope)) throw notFound("Subject");
      const after = afterPair(query.after);
      const p = pageOf(recordReferences(db, caller, scope, after, query.limit), query.limit, (r) => [r.created_at, r.id]);
      // Namespaced references: the subject itself and the projects (by reference) its readable records belong to.
      const projects = [...new Set(p.page.flatMap((r) => (r.project_id ? [r.project_id] : [])))]
        .flatMap((id) => { const pr = getProject(db, id); return pr ? [`project:${pr.reference}`] : []; });
      return ok({
        subject_id: params.id, namespaced: [`subject:${params.id}`, ...projects],
        references: p.page.map(({ type, id, project_id, created_at }) => ({ type, id, project_id, created_at })),
        has_more: p.has_more, next_cursor: p.next_cursor,
      });
    },
  }),
];
