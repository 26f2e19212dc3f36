// POST /v1/import: restores exported projects, observations and claims with their ids, hashes, trust,
// visibility, statuses, sources and timestamps, as one atomic batch. Restored history emits no domain
// events (nothing new happened); the batch writes one `import.applied` audit entry with counts.
import { canWrite, isAdmin, workspaceVisible } from "../../access/policy";
import { hasScope, missingScopeMessage } from "../../auth/scopes";
import { trustAtMost } from "../../auth/trust";
import { clock } from "../../http/clock";
import type { OwnershipRegistry } from "../../registry/client";
import { ApiError, conflict, forbidden, invalid } from "../../http/errors";
import { parseJson, validate } from "../../http/validate";
import type { Db } from "../../sql/db";
import type { Caller, Reply, RequestCtx } from "../../org/request";
import { canonical, commitWrite, type WriteOutcome } from "../../org/write";
import { insertPrincipal } from "../identity/store";
import { canRetrieve, projectNameable } from "../../access/retrieval";
import {
  type SourceRow,
  getClaim,
  getObservation,
  getProject,
  insertClaim,
  insertObservation,
  insertProject,
  projectByReference,
  projectWorkspace,
} from "../memory/records";
import { insertWorkspace } from "../access/store";
import { contentHash, unresolved } from "../memory/store";
import { touchedAll } from "../../org/outbox";
import { claimLineOf, observationLineOf, projectLineOf } from "./export";
import {
  type ClaimLine,
  type ObservationLine,
  type ProjectLine,
  EXPORT_FORMAT_VERSION,
  MAX_IMPORT_LINES,
  claimLine,
  observationLine,
  projectLine,
} from "./schema";

interface Entry<T> {
  /** 1-based line number in the request body, for error messages. */
  line: number;
  rec: T;
}

export interface ImportFile {
  projects: Entry<ProjectLine>[];
  observations: Entry<ObservationLine>[];
  claims: Entry<ClaimLine>[];
}

const idOf = (r: ProjectLine | ObservationLine | ClaimLine) =>
  r.type === "project" ? r.project_id : r.type === "observation" ? r.observation_id : r.claim_id;

/**
 * Parse and validate the NDJSON body without touching storage: JSON, line schemas, content hashes,
 * duplicate ids, the trust ceiling and the line limit. Export header lines are skipped.
 */
export function parseImport(body: string | null, caller: Caller): ImportFile {
  const file: ImportFile = { projects: [], observations: [], claims: [] };
  const ids = new Set<string>();
  const references = new Set<string>();
  let records = 0;
  const lines = (body ?? "").split("\n");
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i].trim();
    if (!raw) continue;
    const line = i + 1;
    const json = parseJson(raw, `Line ${line}`);
    if (!json.ok) throw invalid(`Line ${line}: not valid JSON.`);
    const value = json.value;
    const type = value && typeof value === "object" ? (value as { type?: unknown }).type : undefined;
    if (type === "svc.export.header") {
      if ((value as { format_version?: unknown }).format_version !== EXPORT_FORMAT_VERSION)
        throw invalid(`Line ${line}: unsupported format_version (this service reads ${EXPORT_FORMAT_VERSION}).`);
      continue;
    }
    if (++records > MAX_IMPORT_LINES) throw invalid(`An import holds at most ${MAX_IMPORT_LINES} record lines.`);
    const schema =
      type === "project" ? projectLine : type === "observation" ? observationLine : type === "claim" ? claimLine : null;
    if (!schema) throw invalid(`Line ${line}: Invalid field "type": must be "project", "observation" or "claim".`);
    const parsed = validate(schema, value);
    if (!parsed.success) throw invalid(`Line ${line}: ${parsed.message}`);
    // A line from a file written before event time existed: its record happened when it was written.
    const rec =
      parsed.data.type === "project"
        ? parsed.data
        : { ...parsed.data, occurred_at: parsed.data.occurred_at ?? parsed.data.created_at };
    const id = idOf(rec);
    if (ids.has(id)) throw invalid(`Line ${line}: duplicate id ${id}.`);
    ids.add(id);
    if (rec.type === "project") {
      if (references.has(rec.reference)) throw invalid(`Line ${line}: duplicate project reference.`);
      references.add(rec.reference);
      file.projects.push({ line, rec });
      continue;
    }
    // Same rule as every write: a credential cannot assert trust above its ceiling.
    if (!trustAtMost(rec.trust, caller.maxTrust))
      throw forbidden(`Line ${line}: This credential may not assert "${rec.trust}" trust.`);
    if (rec.type === "observation") {
      if (rec.content !== null && contentHash(rec.content) !== rec.content_hash)
        throw invalid(`Line ${line}: content_hash does not match the content.`);
      file.observations.push({ line, rec });
    } else file.claims.push({ line, rec });
  }
  if (!records)
    throw invalid("The import body holds no record lines (NDJSON: one project, observation or claim per line).");
  return file;
}

export const importIds = (file: ImportFile) =>
  [...file.projects, ...file.observations, ...file.claims].map((e) => idOf(e.rec));

/**
 * Claims every id for this organization in the ownership registry (one RPC per shard, first claimer
 * wins, all-or-nothing per shard). 409 when any id belongs to another organization; 503 when the
 * registry cannot answer. Returns the ids this call newly claimed, to release if the import fails.
 */
export async function claimIds(
  registry: OwnershipRegistry,
  orgId: string,
  ids: string[],
  hidden: string[] = [],
): Promise<string[]> {
  let result: { foreign: string[]; added: string[] };
  try {
    result = await registry.claim(orgId, ids, clock.nowIso());
  } catch (err) {
    console.error("record ownership claim failed", err);
    throw new ApiError("UNAVAILABLE", "The record ownership registry is unavailable; nothing was imported.");
  }
  const { added } = result;
  // Ids that exist here but the caller may not see answer exactly as foreign ones, in request order.
  const outside = new Set([...result.foreign, ...hidden]);
  const foreign = ids.filter((id) => outside.has(id));
  if (foreign.length) {
    await releaseQuietly(registry, orgId, added);
    throw foreignIds(foreign);
  }
  return added;
}

/** 409: ids that exist outside the organization (or, to this caller, outside what it may see). */
const foreignIds = (ids: string[]) =>
  conflict(
    `${ids.length} imported id(s) already belong to another organization: ${ids.slice(0, 3).join(", ")}${ids.length > 3 ? ", …" : ""}.`,
  );

/**
 * Lines whose id exists here on a record the caller may not retrieve (a project: may not name). They
 * are never compared or skipped (that would confirm a hidden record's fields): they answer exactly as
 * an id of another organization does.
 */
function hiddenIds(db: Db, caller: Caller, file: ImportFile): string[] {
  // Visibility decides, not retention: a record of ours that retention excluded is still ours to re-import.
  const hidden = (row: Parameters<typeof canRetrieve>[1] | null | undefined) =>
    row != null && !canRetrieve(caller, row, { evenExcluded: true });
  return [
    ...file.projects.filter(({ rec }) => {
      const p = getProject(db, rec.project_id);
      return p != null && !projectNameable(db, caller, p);
    }),
    ...file.observations.filter(({ rec }) => hidden(getObservation(db, rec.observation_id))),
    ...file.claims.filter(({ rec }) => hidden(getClaim(db, rec.claim_id))),
  ].map((e) => idOf(e.rec));
}

/** Undo claims of an import that did not commit; a failure only leaves unused reservations. */
async function releaseQuietly(registry: OwnershipRegistry, orgId: string, ids: string[]): Promise<void> {
  if (!ids.length) return;
  await registry.release(orgId, ids).catch((err) => console.error("releasing import claims failed", err));
}

/**
 * All sources of a claim, readable or not: import compares an existing claim with an imported line, and
 * only an identical line (one exported by someone who could read every source) is skipped.
 */
const allSourcesOf = (db: Db, claimId: string) =>
  db.all<SourceRow>("SELECT * FROM claim_sources WHERE claim_id = ? ORDER BY position", claimId);

/** The record as it exists here, in line form, or null when the id is new to this organization. */
function currentLine(db: Db, rec: ProjectLine | ObservationLine | ClaimLine): object | null {
  if (rec.type === "project") {
    const row = getProject(db, rec.project_id);
    // A workspace's name may change after the export: only its id is compared.
    return row && projectLineOf(row, row.workspace_id ? rec.workspace_name : null);
  }
  if (rec.type === "observation") {
    const row = getObservation(db, rec.observation_id);
    return row && observationLineOf(row);
  }
  const row = getClaim(db, rec.claim_id);
  // All of its sources: a line exported by someone who could not read one of them is not identical.
  return row && claimLineOf(row, allSourcesOf(db, row.claim_id));
}

/**
 * Authorship as this caller may record it. Restoring another principal's authorship is an owner/admin
 * act: anyone else's import records itself as the author (and project creator) of what it imports, so
 * a member cannot plant a record, e.g. a private instruction, that another principal then reads as its own.
 */
function authoredBy<T extends ProjectLine | ObservationLine | ClaimLine>(caller: Caller, rec: T): T {
  if (isAdmin(caller)) return rec;
  return rec.type === "project"
    ? { ...rec, created_by: caller.principalId }
    : { ...rec, author_id: caller.principalId };
}

/**
 * New entries only, with the authorship the caller may record: an existing record identical to the line
 * as given or as this caller would write it is skipped (idempotent re-import), a different one is 409.
 */
function onlyNew<T extends ProjectLine | ObservationLine | ClaimLine>(
  db: Db,
  caller: Caller,
  entries: Entry<T>[],
): Entry<T>[] {
  return entries.flatMap(({ line, rec: given }) => {
    const rec = authoredBy(caller, given);
    const existing = currentLine(db, rec);
    if (!existing) return [{ line, rec }];
    if (canonical(existing) !== canonical(rec) && canonical(existing) !== canonical(given))
      throw conflict(`Line ${line}: ${idOf(rec)} already exists in this organization with different fields.`);
    return [];
  });
}

/**
 * The workspaces of new projects, restored under their exported ids: one that exists here must be one
 * the caller may name and create projects in (as POST /v1/projects/resolve asks); a missing one is
 * created with its exported name (its creator, the importer, becomes its owner; memberships are not
 * exported), which takes an organization owner or admin holding workspaces:write. Without a name, or
 * for anyone else, a missing workspace is an unresolved reference. Returns how many were created.
 */
function restoreWorkspaces(db: Db, caller: Caller, projects: Entry<ProjectLine>[]): number {
  const created = new Set<string>();
  for (const { line, rec } of projects) {
    const id = rec.workspace_id;
    if (id === null || created.has(id)) continue;
    if (db.first("SELECT 1 FROM workspaces WHERE workspace_id = ?", id)) {
      if (!workspaceVisible(db, caller, id)) throw unresolved("workspace", [id]);
      if (!canWrite(caller, { workspace_id: id }))
        throw forbidden(`Line ${line}: creating a project in this workspace takes workspace role member or above.`);
      continue;
    }
    if (rec.workspace_name === null || !isAdmin(caller)) throw unresolved("workspace", [id]);
    if (!hasScope(caller.scopes, "workspaces:write"))
      throw forbidden(`Line ${line}: ${missingScopeMessage("workspaces:write")}`);
    insertWorkspace(db, {
      workspace_id: id,
      name: rec.workspace_name,
      created_by: caller.principalId,
      created_at: clock.nowIso(),
    });
    created.add(id);
  }
  return created.size;
}

const unique = (ids: (string | null)[]) => [...new Set(ids.filter((id): id is string => id !== null))];

/** The transactional half: re-checks everything against this organization's rows, then writes. */
function applyImport(db: Db, rc: RequestCtx, file: ImportFile): WriteOutcome {
  const hidden = hiddenIds(db, rc.caller, file);
  if (hidden.length) throw foreignIds(hidden);
  const projects = onlyNew(db, rc.caller, file.projects);
  const observations = onlyNew(db, rc.caller, file.observations);
  const claims = onlyNew(db, rc.caller, file.claims);

  for (const { line, rec } of projects)
    if (projectByReference(db, rec.reference))
      throw conflict(`Line ${line}: another project of this organization already uses this reference.`);
  const workspacesCreated = restoreWorkspaces(db, rc.caller, projects);
  // A project reference resolves to a project in this request or one here the caller may name (or
  // write into): a hidden workspace's project is as unresolved as a missing one, checked before the
  // write check below, so its 403 never confirms a project the caller cannot see.
  const batchProjects = new Set(file.projects.map((e) => e.rec.project_id));
  const missingProjects = unique(
    [...observations, ...claims]
      .filter(({ rec }) => {
        if (rec.project_id === null || batchProjects.has(rec.project_id)) return false;
        const row = getProject(db, rec.project_id);
        return (
          !row ||
          (!projectNameable(db, rc.caller, row) &&
            !canWrite(rc.caller, {
              subject_id: rec.subject_id,
              project_id: rec.project_id,
              workspace_id: row.workspace_id ?? null,
            }))
        );
      })
      .map((e) => e.rec.project_id),
  );
  if (missingProjects.length) throw unresolved("project", missingProjects);
  // Writing into a workspace's projects takes what any write there takes (member or above, an
  // organization owner/admin role, or a covering write grant), whether the project is new or exists here.
  for (const { line, rec } of [...observations, ...claims]) {
    const workspace =
      rec.project_id === null
        ? null
        : (projects.find((p) => p.rec.project_id === rec.project_id)?.rec.workspace_id ??
          projectWorkspace(db, rec.project_id));
    if (
      workspace !== null &&
      !canWrite(rc.caller, { subject_id: rec.subject_id, project_id: rec.project_id, workspace_id: workspace })
    )
      throw forbidden(
        `Line ${line}: writing to this workspace's records takes workspace role member or above, or a write grant.`,
      );
  }

  // A source resolves to an observation in this request or a readable one here.
  // Only observations this request inserts count as present; an existing one must be readable.
  const batchObservations = new Set(observations.map((e) => e.rec.observation_id));
  const missingObservations = unique(claims.flatMap((e) => e.rec.sources.map((s) => s.observation_id))).filter((id) => {
    if (batchObservations.has(id)) return false;
    const row = getObservation(db, id);
    return !row || !canRetrieve(rc.caller, row);
  });
  if (missingObservations.length) throw unresolved("observation", missingObservations);

  // Authorship is restored as exported (owners and admins; see authoredBy). An author who is not a
  // principal here gets a key-less member principal with that id, so private records stay readable by their author once an owner or admin
  // mints that principal a key (POST /v1/keys with principal_id).
  let principalsCreated = 0;
  for (const id of unique([
    ...projects.map((e) => e.rec.created_by),
    ...[...observations, ...claims].map((e) => e.rec.author_id),
  ])) {
    if (db.first("SELECT 1 FROM principals WHERE principal_id = ?", id)) continue; // removed ones too: ids are never reused
    insertPrincipal(db, "agent", "imported author", "member", { principalId: id, createdBy: rc.caller.principalId });
    principalsCreated++;
  }

  const touched = [
    ...projects.map(({ rec: p }) =>
      insertProject(db, {
        project_id: p.project_id,
        reference: p.reference,
        created_by: p.created_by,
        created_at: p.created_at,
        workspace_id: p.workspace_id,
      }),
    ),
    ...observations.map(({ rec: o }) =>
      insertObservation(db, {
        observation_id: o.observation_id,
        subject_id: o.subject_id,
        project_id: o.project_id,
        kind: o.kind,
        content: o.content,
        content_hash: o.content_hash,
        source_type: o.source.type,
        source_ref: o.source.ref ?? null,
        trust: o.trust,
        visibility: o.visibility,
        author_id: o.author_id,
        created_at: o.created_at,
        occurred_at: o.occurred_at,
        purged_at: o.purged_at,
      }),
    ),
    ...claims.map(({ rec: c }) =>
      insertClaim(
        db,
        {
          claim_id: c.claim_id,
          subject_id: c.subject_id,
          project_id: c.project_id,
          kind: c.kind,
          statement: c.statement,
          status: c.status,
          visibility: c.visibility,
          trust: c.trust,
          version: c.version,
          valid_from: c.valid_from,
          valid_to: c.valid_to,
          superseded_by: c.superseded_by,
          disputes: JSON.stringify(c.disputes),
          author_id: c.author_id,
          created_at: c.created_at,
          updated_at: c.updated_at,
          occurred_at: c.occurred_at,
        },
        c.sources,
      ),
    ),
  ];

  const imported = { projects: projects.length, observations: observations.length, claims: claims.length };
  const skipped = {
    projects: file.projects.length - projects.length,
    observations: file.observations.length - observations.length,
    claims: file.claims.length - claims.length,
  };
  return {
    status: touched.length ? 201 : 200,
    data: { imported, skipped, principals_created: principalsCreated, workspaces_created: workspacesCreated },
    audit: {
      action: "import.applied",
      resourceType: "organization",
      resourceId: rc.orgId,
      detail: { imported, skipped, principals_created: principalsCreated, workspaces_created: workspacesCreated },
    },
    touched: touchedAll(...touched),
  };
}

/** Which of these ids name a project, observation or claim of this organization (any state). */
export function existingRecordIds(db: Db, ids: string[]): string[] {
  if (!ids.length) return [];
  return db
    .all<{ id: string }>(
      `SELECT j.value AS id FROM json_each(?) j WHERE EXISTS (SELECT 1 FROM projects WHERE project_id = j.value)
        OR EXISTS (SELECT 1 FROM observations WHERE observation_id = j.value) OR EXISTS (SELECT 1 FROM claims WHERE claim_id = j.value)`,
      JSON.stringify(ids),
    )
    .map((r) => r.id);
}

export async function importBatch(rc: RequestCtx): Promise<Reply> {
  const file = parseImport(rc.rawBody, rc.caller);
  // The one call outside the Durable Object; everything it cannot know is re-checked in the transaction.
  const claimed = await claimIds(rc.deps.registry, rc.orgId, importIds(file), hiddenIds(rc.db, rc.caller, file));
  try {
    return commitWrite(rc, (db) => applyImport(db, rc, file));
  } catch (err) {
    // Only ids that name no record here go back: an id this organization's own write created while the
    // import waited (its registration still on the way) was "newly claimed" too, and must stay ours.
    const held = new Set(existingRecordIds(rc.db, claimed));
    await releaseQuietly(
      rc.deps.registry,
      rc.orgId,
      claimed.filter((id) => !held.has(id)),
    );
    throw err;
  }
}
