// POST /v1/import: restores exported projects, observations and claims with their ids, hashes, trust,
// visibility, statuses, sources and timestamps, as one atomic batch. Restored history emits no domain
// events (nothing new happened); the batch writes one `import.applied` audit entry with counts.
import { trustAtMost } from "../../auth/trust";
import { ApiError, conflict, forbidden, invalid } from "../../http/errors";
import { validate } from "../../http/validate";
import type { Db } from "../../org/db";
import type { Caller, Reply, RequestCtx } from "../../org/request";
import { canonical, commitWrite, type WriteOutcome } from "../../org/write";
import { insertPrincipal } from "../identity/store";
import {
  allSourcesOf, canRetrieve, getClaim, getObservation, getProject, insertClaim, insertObservation, insertProject, projectByReference,
} from "../memory/records";
import { contentHash, unresolved } from "../memory/store";
import { touchedAll } from "../../org/outbox";
import { claimLineOf, observationLineOf, projectLineOf } from "./export";
import {
  type ClaimLine, type ObservationLine, type ProjectLine, EXPORT_FORMAT_VERSION, MAX_IMPORT_LINES, claimLine,
  observationLine, projectLine,
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

/** D1 allows 100 bound parameters per statement. */
const OWNER_LOOKUP_CHUNK = 100;

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
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      throw invalid(`Line ${line}: not valid JSON.`);
    }
    const type = value && typeof value === "object" ? (value as { type?: unknown }).type : undefined;
    if (type === "svc.export.header") {
      if ((value as { format_version?: unknown }).format_version !== EXPORT_FORMAT_VERSION)
        throw invalid(`Line ${line}: unsupported format_version (this service reads ${EXPORT_FORMAT_VERSION}).`);
      continue;
    }
    if (++records > MAX_IMPORT_LINES) throw invalid(`An import holds at most ${MAX_IMPORT_LINES} record lines.`);
    const schema = type === "project" ? projectLine : type === "observation" ? observationLine : type === "claim" ? claimLine : null;
    if (!schema) throw invalid(`Line ${line}: Invalid field "type": must be "project", "observation" or "claim".`);
    const parsed = validate(schema, value);
    if (!parsed.success) throw invalid(`Line ${line}: ${parsed.message}`);
    const rec = parsed.data;
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
  if (!records) throw invalid("The import body holds no record lines (NDJSON: one project, observation or claim per line).");
  return file;
}

export const importIds = (file: ImportFile) =>
  [...file.projects, ...file.observations, ...file.claims].map((e) => idOf(e.rec));

/**
 * 409 when any id already belongs to another organization of this deployment, per the global D1
 * ownership index. That index trails each organization's writes by its outbox drain (see README).
 */
export async function refuseForeignIds(indexDb: D1Database, orgId: string, ids: string[]): Promise<void> {
  const statements: D1PreparedStatement[] = [];
  for (let i = 0; i < ids.length; i += OWNER_LOOKUP_CHUNK) {
    const chunk = ids.slice(i, i + OWNER_LOOKUP_CHUNK);
    statements.push(indexDb.prepare(
      `SELECT record_id, org_id FROM record_owners WHERE record_id IN (${chunk.map(() => "?").join(", ")})`).bind(...chunk));
  }
  let results: D1Result<{ record_id: string; org_id: string }>[];
  try {
    results = await indexDb.batch<{ record_id: string; org_id: string }>(statements);
  } catch (err) {
    console.error("record ownership lookup failed", err);
    throw new ApiError("UNAVAILABLE", "The record ownership index is unavailable; nothing was imported.");
  }
  const foreign = results.flatMap((r) => r.results).filter((r) => r.org_id !== orgId).map((r) => r.record_id);
  if (foreign.length)
    throw conflict(`${foreign.length} imported id(s) already belong to another organization: ${foreign.slice(0, 3).join(", ")}${foreign.length > 3 ? ", …" : ""}.`);
}

/** The record as it exists here, in line form, or null when the id is new to this organization. */
function currentLine(db: Db, rec: ProjectLine | ObservationLine | ClaimLine): object | null {
  if (rec.type === "project") {
    const row = getProject(db, rec.project_id);
    return row && projectLineOf(row);
  }
  if (rec.type === "observation") {
    const row = getObservation(db, rec.observation_id);
    return row && observationLineOf(row);
  }
  const row = getClaim(db, rec.claim_id);
  // All of its sources: a line exported by someone who could not read one of them is not identical.
  return row && claimLineOf(row, allSourcesOf(db, row.claim_id));
}

/** New entries only: an identical existing record is skipped (idempotent re-import), a different one is 409. */
function onlyNew<T extends ProjectLine | ObservationLine | ClaimLine>(db: Db, entries: Entry<T>[]): Entry<T>[] {
  return entries.filter(({ line, rec }) => {
    const existing = currentLine(db, rec);
    if (!existing) return true;
    if (canonical(existing) !== canonical(rec))
      throw conflict(`Line ${line}: ${idOf(rec)} already exists in this organization with different fields.`);
    return false;
  });
}

const unique = (ids: (string | null)[]) => [...new Set(ids.filter((id): id is string => id !== null))];

/** The transactional half: re-checks everything against this organization's rows, then writes. */
function applyImport(db: Db, rc: RequestCtx, file: ImportFile): WriteOutcome {
  const projects = onlyNew(db, file.projects);
  const observations = onlyNew(db, file.observations);
  const claims = onlyNew(db, file.claims);

  for (const { line, rec } of projects)
    if (projectByReference(db, rec.reference))
      throw conflict(`Line ${line}: another project of this organization already uses this reference.`);

  // A reference resolves to a record in this request or one that already exists here (readable, for observations).
  const batchProjects = new Set(file.projects.map((e) => e.rec.project_id));
  const missingProjects = unique([...observations, ...claims].map((e) => e.rec.project_id))
    .filter((id) => !batchProjects.has(id) && !getProject(db, id));
  if (missingProjects.length) throw unresolved("project", missingProjects);
  const batchObservations = new Set(file.observations.map((e) => e.rec.observation_id));
  const missingObservations = unique(claims.flatMap((e) => e.rec.sources.map((s) => s.observation_id)))
    .filter((id) => {
      if (batchObservations.has(id)) return false;
      const row = getObservation(db, id);
      return !row || !canRetrieve(rc.caller, row);
    });
  if (missingObservations.length) throw unresolved("observation", missingObservations);

  // Authorship is restored as exported. An author who is not a principal here gets a key-less member
  // principal with that id, so private records stay readable by their author once an owner or admin
  // mints that principal a key (POST /v1/keys with principal_id).
  let principalsCreated = 0;
  for (const id of unique([...projects.map((e) => e.rec.created_by), ...[...observations, ...claims].map((e) => e.rec.author_id)])) {
    if (db.first("SELECT 1 FROM principals WHERE principal_id = ?", id)) continue; // removed ones too: ids are never reused
    insertPrincipal(db, "agent", "imported author", "member", { principalId: id, createdBy: rc.caller.principalId });
    principalsCreated++;
  }

  const touched = [
    ...projects.map(({ rec: p }) => insertProject(db, p)),
    ...observations.map(({ rec: o }) => insertObservation(db, {
      observation_id: o.observation_id, subject_id: o.subject_id, project_id: o.project_id, kind: o.kind, content: o.content,
      content_hash: o.content_hash, source_type: o.source.type, source_ref: o.source.ref ?? null, trust: o.trust,
      visibility: o.visibility, author_id: o.author_id, created_at: o.created_at, purged_at: o.purged_at,
    })),
    ...claims.map(({ rec: c }) => insertClaim(db, {
      claim_id: c.claim_id, subject_id: c.subject_id, project_id: c.project_id, kind: c.kind, statement: c.statement,
      status: c.status, visibility: c.visibility, trust: c.trust, version: c.version, valid_from: c.valid_from,
      valid_to: c.valid_to, superseded_by: c.superseded_by, disputes: JSON.stringify(c.disputes), author_id: c.author_id,
      created_at: c.created_at, updated_at: c.updated_at,
    }, c.sources)),
  ];

  const imported = { projects: projects.length, observations: observations.length, claims: claims.length };
  const skipped = {
    projects: file.projects.length - projects.length,
    observations: file.observations.length - observations.length,
    claims: file.claims.length - claims.length,
  };
  return {
    status: touched.length ? 201 : 200,
    data: { imported, skipped, principals_created: principalsCreated },
    audit: {
      action: "import.applied", resourceType: "organization", resourceId: rc.orgId,
      detail: { imported, skipped, principals_created: principalsCreated },
    },
    touched: touchedAll(...touched),
  };
}

export async function importBatch(rc: RequestCtx): Promise<Reply> {
  const file = parseImport(rc.rawBody, rc.caller);
  // The one read outside the Durable Object; everything it cannot know is re-checked in the transaction.
  await refuseForeignIds(rc.env.INDEX_DB, rc.orgId, importIds(file));
  return commitWrite(rc, (db) => applyImport(db, rc, file));
}
