// Projects and observations: resolve a project reference, append evidence, tombstone it.
import { observationResponse, projectResolveResponse, purgeResponse } from "./responses";
import { canWrite, isAdmin, workspaceVisible } from "../../access/policy";
import { projectNameable } from "../../access/retrieval";
import { DEFAULT_VISIBILITY } from "../../access/visibility";
import { hasScope, missingScopeMessage } from "../../auth/scopes";
import { DEFAULT_OBSERVATION_TRUST, trustAtMost } from "../../auth/trust";
import { clock } from "../../http/clock";
import { ApiError, conflict, forbidden, notFound } from "../../http/errors";
import { ID_PREFIX } from "../../http/ids";
import { orgRoute } from "../../org/route";
import type { Db } from "../../sql/db";
import type { Caller } from "../../org/request";
import { ok } from "../../org/request";
import { commitWrite, type WriteScope } from "../../org/write";
import { observationBody, resolveProjectBody } from "./schema";
import {
  type ObservationRow,
  type ProjectRow,
  getObservation,
  insertObservation,
  insertProject,
  newRecordId,
  projectByReference,
  projectWorkspace,
  targetInBody,
  tombstone,
} from "./records";
import { contentHash, observationView, readableObservation, requireProject, unresolved } from "./store";
import type { z } from "zod";

/**
 * Append one observation. Shared by POST /v1/observations and the MCP remember tool, so both answer
 * with the same reply (`data`). The caller commits, passing `touched` on. The write grant was checked
 * by the pipeline (the routes are grantWritable).
 */
export function appendObservation(db: Db, write: WriteScope, caller: Caller, body: z.infer<typeof observationBody>) {
  const trust = body.trust ?? DEFAULT_OBSERVATION_TRUST;
  if (!trustAtMost(trust, caller.maxTrust)) throw forbidden(`This credential may not assert "${trust}" trust.`);
  const createdAt = clock.nowIso();
  const row: Omit<ObservationRow, "workspace_id"> = {
    observation_id: newRecordId(db, write, ID_PREFIX.observation),
    subject_id: body.subject_id,
    project_id: requireProject(db, body.project_id),
    kind: body.kind,
    content: body.content,
    content_hash: contentHash(body.content),
    source_type: body.source.type,
    source_ref: body.source.ref ?? null,
    trust,
    visibility: body.visibility ?? DEFAULT_VISIBILITY,
    author_id: caller.principalId,
    created_at: createdAt,
    occurred_at: body.occurred_at ? new Date(body.occurred_at).toISOString() : createdAt,
    purged_at: null,
  };
  const touched = insertObservation(db, row);
  const data = {
    observation_id: row.observation_id,
    content_hash: row.content_hash,
    subject_id: row.subject_id,
    project_id: row.project_id,
    kind: row.kind,
    trust: row.trust,
    visibility: row.visibility,
    created_at: row.created_at,
    occurred_at: row.occurred_at,
  };
  return { row, data, touched };
}

/** A new project's reference is taken (by a project the caller may not see: visible ones resolve). */
export const TAKEN_REFERENCE = "Another project of this organization already uses this reference.";

export const observationRoutes = [
  orgRoute({
    method: "POST",
    path: "/v1/projects/resolve",
    scope: "projects:resolve",
    body: resolveProjectBody,
    response: { 201: projectResolveResponse, 200: projectResolveResponse },
    summary: "Resolve a project reference to its opaque prj_ id; create: true also needs projects:create.",
    operationId: "resolveProject",
    tag: "Memory",
    description:
      "Turns a human project reference into the opaque project id that observations and claims carry. With `create: " +
      "true` a missing project is created, which also needs the `projects:create` scope.",
    handler: (rc) => {
      // A project of a workspace the caller cannot read is resolved like a missing reference; creating
      // it anyway is a taken reference (references are unique), which names no id.
      const existing = projectByReference(rc.db, rc.body.reference);
      if (existing && projectNameable(rc.db, rc.caller, existing))
        return ok({
          project_id: existing.project_id,
          reference: existing.reference,
          created: false,
          workspace_id: existing.workspace_id ?? null,
        });
      if (!rc.body.create) throw notFound("Project");
      if (!hasScope(rc.caller.scopes, "projects:create")) throw forbidden(missingScopeMessage("projects:create"));
      const workspaceId = rc.body.workspace_id ?? null;
      if (workspaceId !== null) {
        if (!workspaceVisible(rc.db, rc.caller, workspaceId)) throw unresolved("workspace", [workspaceId]);
        if (!canWrite(rc.caller, { workspace_id: workspaceId }))
          throw forbidden("Creating a project in this workspace takes workspace role member or above.");
      }
      if (existing) throw conflict(TAKEN_REFERENCE);
      return commitWrite(rc, (db, write) => {
        const project: ProjectRow = {
          project_id: newRecordId(db, write, ID_PREFIX.project),
          reference: rc.body.reference,
          created_by: rc.caller.principalId,
          created_at: clock.nowIso(),
          workspace_id: workspaceId,
        };
        const touched = insertProject(db, project);
        return {
          status: 201,
          data: {
            project_id: project.project_id,
            reference: project.reference,
            created: true,
            workspace_id: workspaceId,
          },
          audit: { action: "project.created", resourceType: "project", resourceId: project.project_id },
          touched,
        };
      });
    },
  }),

  orgRoute({
    method: "POST",
    path: "/v1/observations",
    scope: "observations:write",
    body: observationBody,
    idempotent: true,
    grantWritable: targetInBody,
    response: { 201: observationResponse, 200: observationResponse },
    summary: "Append evidence; content-hashed; trust may not exceed the key's ceiling.",
    operationId: "appendObservation",
    tag: "Memory",
    description:
      "Appends one piece of evidence about a subject and returns its id and content hash. The asserted `trust` may " +
      "not exceed the credential's ceiling (403); an `Idempotency-Key` makes a retry answer the first result.",
    handler: (rc) =>
      commitWrite(rc, (db, write) => {
        const { row, data, touched } = appendObservation(db, write, rc.caller, rc.body);
        return {
          status: 201,
          data,
          events: [
            {
              kind: "observation.appended",
              resourceType: "observation",
              resourceId: row.observation_id,
              visibility: row.visibility,
              workspaceId: projectWorkspace(db, row.project_id),
              payload: { subject_id: row.subject_id, kind: row.kind, trust: row.trust, visibility: row.visibility },
            },
          ],
          audit: { action: "observation.appended", resourceType: "observation", resourceId: row.observation_id },
          touched,
        };
      }),
  }),

  orgRoute({
    method: "DELETE",
    path: "/v1/observations/:id",
    scope: "observations:purge",
    response: { 200: purgeResponse },
    // evenExcluded: purging deletes, so what retention hid may still be purged (a hold still blocks it).
    grantWritable: (rc) => readableObservation(rc.db, rc.caller, rc.params.id, { evenExcluded: true }),
    summary: "Irreversibly tombstone an observation: content gone, id, hash and provenance kept.",
    operationId: "purgeObservation",
    tag: "Memory",
    description:
      "Tombstones an observation for good: its content becomes unreadable while its id, hash and provenance stay. An " +
      "active legal hold on it blocks the purge.",
    handler: (rc) => {
      const obs = readableObservation(rc.db, rc.caller, rc.params.id, { evenExcluded: true });
      if (!obs) throw notFound("Observation");
      if (obs.author_id !== rc.caller.principalId && !isAdmin(rc.caller))
        throw forbidden("Only the observation's author, an owner or an admin may purge it.");
      for (const guard of rc.deps.purgeGuards) {
        const blocked = guard(rc.db, obs.observation_id);
        if (blocked) throw new ApiError("CONFLICT", blocked);
      }
      return commitWrite(rc, (db) => {
        const already = obs.purged_at != null;
        const touched = already ? undefined : tombstone(db, obs.observation_id);
        const after = getObservation(db, obs.observation_id)!;
        return {
          status: 200,
          data: { ...observationView(after), already_purged: already },
          audit: {
            action: "observation.purged",
            resourceType: "observation",
            resourceId: obs.observation_id,
            detail: { content_hash: obs.content_hash, already_purged: already },
          },
          touched,
        };
      });
    },
  }),
];
