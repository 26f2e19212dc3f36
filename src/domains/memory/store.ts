// Views of memory records as a caller sees them, and the reference checks routes share. No SQL here:
// the records themselves are read and written only through ./records (re-exported for other domains).
import { sha256Hex } from "../../auth/credentials";
import { unresolved } from "../../http/errors";
import type { Db } from "../../org/db";
import type { Caller } from "../../org/request";
import {
  type ClaimRow, type ObservationRow, type SourceRow, canRetrieve, getClaim, getObservation, getProject, retrievableClaimIds,
  sourcesByClaim,
} from "./records";

export {
  type ClaimRow, type ObservationRow, type ProjectRow, type SourceRow, getClaim, getObservation, getProject, guarded, isCurrent,
} from "./records";

export const contentHash = (content: string) => "sha256:" + sha256Hex(content);

/** A body reference to a project that does not exist: 400 UNRESOLVED_REFERENCE. */
export function requireProject(db: Db, projectId: string | undefined): string | null {
  if (projectId === undefined) return null;
  if (!getProject(db, projectId)) throw unresolved("project", [projectId]);
  return projectId;
}

export { unresolved }; // defined in http/errors; re-exported for this domain's importers

export function readableObservation(db: Db, caller: Caller, id: string): ObservationRow | null {
  const row = getObservation(db, id);
  return row && canRetrieve(caller, row) ? row : null;
}

export function readableClaim(db: Db, caller: Caller, id: string): ClaimRow | null {
  const row = getClaim(db, id);
  return row && canRetrieve(caller, row) ? row : null;
}

export function claimView(c: ClaimRow, sources: SourceRow[]) {
  return {
    claim_id: c.claim_id, subject_id: c.subject_id, project_id: c.project_id, kind: c.kind, statement: c.statement,
    status: c.status, visibility: c.visibility, trust: c.trust, version: c.version, valid_from: c.valid_from,
    valid_to: c.valid_to, superseded_by: c.superseded_by, disputes: JSON.parse(c.disputes) as string[],
    sources: sources.map((s) => ({ observation_id: s.observation_id, relation: s.relation })),
    created_at: c.created_at, updated_at: c.updated_at,
  };
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
  const visible = retrievableClaimIds(db, caller, claimReferences(rows));
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
