// SQL of the memory loop: projects, observations, claims and their sources, context runs, feedback.
import { canRead, readableWhere } from "../../access/policy";
import { sha256Hex } from "../../auth/credentials";
import { clock } from "../../http/clock";
import { unresolved } from "../../http/errors";
import type { Db } from "../../org/db";
import type { Caller } from "../../org/request";

export interface ProjectRow {
  project_id: string;
  reference: string;
  created_by: string;
  created_at: string;
}

export interface ObservationRow {
  observation_id: string;
  subject_id: string;
  project_id: string | null;
  kind: string;
  content: string | null;
  content_hash: string;
  source_type: string;
  source_ref: string | null;
  trust: string;
  visibility: string;
  author_id: string;
  created_at: string;
  purged_at: string | null;
}

export interface ClaimRow {
  seq: number;
  claim_id: string;
  subject_id: string;
  project_id: string | null;
  kind: string;
  statement: string;
  status: string;
  visibility: string;
  trust: string;
  version: number;
  valid_from: string;
  valid_to: string | null;
  superseded_by: string | null;
  disputes: string;
  author_id: string;
  created_at: string;
  updated_at: string;
}

export interface SourceRow {
  claim_id: string;
  position: number;
  observation_id: string;
  relation: string;
}

export const contentHash = (content: string) => "sha256:" + sha256Hex(content);

export const getProject = (db: Db, projectId: string) =>
  db.first<ProjectRow>("SELECT * FROM projects WHERE project_id = ?", projectId);

/** A body reference to a project that does not exist: 400 UNRESOLVED_REFERENCE. */
export function requireProject(db: Db, projectId: string | undefined): string | null {
  if (projectId === undefined) return null;
  if (!getProject(db, projectId)) throw unresolved("project", [projectId]);
  return projectId;
}

export { unresolved }; // defined in http/errors; re-exported for this domain's importers

/** A memory record (observation or claim) as the authorization module sees it. */
export const guarded = (r: { visibility: string; author_id: string; subject_id: string; project_id: string | null }) =>
  ({ visibility: r.visibility, owner: r.author_id, subject_id: r.subject_id, project_id: r.project_id });

export const getObservation = (db: Db, id: string) => db.first<ObservationRow>("SELECT * FROM observations WHERE observation_id = ?", id);
export const getClaim = (db: Db, id: string) => db.first<ClaimRow>("SELECT * FROM claims WHERE claim_id = ?", id);

export function readableObservation(db: Db, caller: Caller, id: string): ObservationRow | null {
  const row = getObservation(db, id);
  return row && canRead(caller, guarded(row)) ? row : null;
}

export function readableClaim(db: Db, caller: Caller, id: string): ClaimRow | null {
  const row = getClaim(db, id);
  return row && canRead(caller, guarded(row)) ? row : null;
}

/**
 * Sources of claims as the caller may see them: a source observation the caller cannot read is left
 * out entirely (its id never appears; the evidence view reports only hidden_source_count).
 */
export function sourcesByClaim(db: Db, caller: Caller, claimIds: string[]): Map<string, SourceRow[]> {
  const out = new Map<string, SourceRow[]>();
  if (!claimIds.length) return out;
  const [readable, ...who] = readableWhere(caller, "o");
  const rows = db.all<SourceRow>(
    `SELECT s.* FROM claim_sources s JOIN observations o ON o.observation_id = s.observation_id
      WHERE s.claim_id IN (SELECT value FROM json_each(?)) AND ${readable} ORDER BY s.claim_id, s.position`,
    JSON.stringify(claimIds), ...who);
  for (const r of rows) out.set(r.claim_id, [...(out.get(r.claim_id) ?? []), r]);
  return out;
}

export const sourcesOf = (db: Db, caller: Caller, claimId: string) => sourcesByClaim(db, caller, [claimId]).get(claimId) ?? [];

export const isCurrent = (c: Pick<ClaimRow, "valid_to">, nowIso = clock.nowIso()) => c.valid_to == null || c.valid_to > nowIso;

export function claimView(c: ClaimRow, sources: SourceRow[]) {
  return {
    claim_id: c.claim_id, subject_id: c.subject_id, project_id: c.project_id, kind: c.kind, statement: c.statement,
    status: c.status, visibility: c.visibility, trust: c.trust, version: c.version, valid_from: c.valid_from,
    valid_to: c.valid_to, superseded_by: c.superseded_by, disputes: JSON.parse(c.disputes) as string[],
    sources: sources.map((s) => ({ observation_id: s.observation_id, relation: s.relation })),
    created_at: c.created_at, updated_at: c.updated_at,
  };
}

/** Claim ids among `ids` that the caller may read. */
export function readableClaimIds(db: Db, caller: Caller, ids: string[]): Set<string> {
  if (!ids.length) return new Set();
  const [readable, ...who] = readableWhere(caller, "c");
  return new Set(db.all<{ claim_id: string }>(
    `SELECT c.claim_id FROM claims c WHERE c.claim_id IN (SELECT value FROM json_each(?)) AND ${readable}`,
    JSON.stringify(ids), ...who).map((r) => r.claim_id));
}

/** The claim ids a claim names (disputes, superseded_by). */
export const claimReferences = (rows: ClaimRow[]) =>
  [...new Set(rows.flatMap((c) => [...(JSON.parse(c.disputes) as string[]), ...(c.superseded_by ? [c.superseded_by] : [])]))];

/** Drop references to claims the caller cannot read: hidden records contribute no ids. */
export function withVisibleReferences<T extends { disputes: string[]; superseded_by: string | null }>(view: T, visible: Set<string>): T {
  return { ...view, disputes: view.disputes.filter((id) => visible.has(id)),
    superseded_by: view.superseded_by && visible.has(view.superseded_by) ? view.superseded_by : null };
}

/** Claims as the caller sees them: sources, disputes and superseded_by limited to what it may read. */
export function claimViewsFor(db: Db, caller: Caller, rows: ClaimRow[]) {
  const sources = sourcesByClaim(db, caller, rows.map((c) => c.claim_id));
  const visible = readableClaimIds(db, caller, claimReferences(rows));
  return rows.map((c) => withVisibleReferences(claimView(c, sources.get(c.claim_id) ?? []), visible));
}

export const claimViewFor = (db: Db, caller: Caller, row: ClaimRow) => claimViewsFor(db, caller, [row])[0];

export function observationView(o: ObservationRow) {
  return {
    observation_id: o.observation_id, subject_id: o.subject_id, project_id: o.project_id, kind: o.kind,
    content: o.content, content_hash: o.content_hash,
    source: { type: o.source_type, ...(o.source_ref != null ? { ref: o.source_ref } : {}) },
    trust: o.trust, visibility: o.visibility, author_id: o.author_id, created_at: o.created_at,
    purged: o.purged_at != null, purged_at: o.purged_at,
  };
}

/** Mutate a claim row (status moves, expiry) and bump its version. */
export function updateClaim(db: Db, claimId: string, changes: Partial<Pick<ClaimRow, "status" | "valid_to" | "superseded_by">>): void {
  const sets = Object.keys(changes).map((k) => `${k} = ?`);
  db.run(`UPDATE claims SET ${sets.join(", ")}, version = version + 1, updated_at = ? WHERE claim_id = ?`,
    ...Object.values(changes), clock.nowIso(), claimId);
}
