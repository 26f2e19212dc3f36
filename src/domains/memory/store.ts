// Views of memory records as a caller sees them, the reference checks routes share, and the
// authorized reads those views and other domains' views make (sources, referenced claims, readable ids):
// each applies retrievable in its statement.
import { type Retrieval, canRetrieve, retrievable } from "../../access/retrieval";
import { sha256Hex } from "../../auth/credentials";
import { unresolved } from "../../http/errors";
import type { Db } from "../../sql/db";
import type { Caller } from "../../org/request";
import { type ClaimRow, type ObservationRow, type SourceRow, getClaim, getObservation, getProject } from "./records";

export {
  type ClaimRow,
  type ObservationRow,
  type ProjectRow,
  type SourceRow,
  getClaim,
  getObservation,
  getProject,
} from "./records";
export { isCurrent } from "../../access/retrieval";

export const contentHash = (content: string) => "sha256:" + sha256Hex(content);

/** A body reference to a project that does not exist: 400 UNRESOLVED_REFERENCE. */
export function requireProject(db: Db, projectId: string | undefined): string | null {
  if (projectId === undefined) return null;
  if (!getProject(db, projectId)) throw unresolved("project", [projectId]);
  return projectId;
}

export { unresolved }; // defined in http/errors; re-exported for this domain's importers

export function readableObservation(db: Db, caller: Caller, id: string, opts: Retrieval = {}): ObservationRow | null {
  const row = getObservation(db, id);
  return row && canRetrieve(caller, row, opts) ? row : null;
}

export function readableClaim(db: Db, caller: Caller, id: string): ClaimRow | null {
  const row = getClaim(db, id);
  return row && canRetrieve(caller, row) ? row : null;
}

export function claimView(c: ClaimRow, sources: SourceRow[]) {
  return {
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
    disputes: JSON.parse(c.disputes) as string[],
    sources: sources.map((s) => ({ observation_id: s.observation_id, relation: s.relation })),
    created_at: c.created_at,
    updated_at: c.updated_at,
    occurred_at: c.occurred_at,
  };
}

/** The claim ids a claim names (disputes, superseded_by). */
export const claimReferences = (rows: ClaimRow[]) => [
  ...new Set(
    rows.flatMap((c) => [...(JSON.parse(c.disputes) as string[]), ...(c.superseded_by ? [c.superseded_by] : [])]),
  ),
];

/** Drop references to claims the caller cannot read: hidden records contribute no ids. */
export function withVisibleReferences<T extends { disputes: string[]; superseded_by: string | null }>(
  view: T,
  visible: Set<string>,
): T {
  return {
    ...view,
    disputes: view.disputes.filter((id) => visible.has(id)),
    superseded_by: view.superseded_by && visible.has(view.superseded_by) ? view.superseded_by : null,
  };
}

/**
 * Sources of claims as the caller may see them: a source observation the caller cannot retrieve is
 * left out entirely (its id never appears; the evidence view reports only hidden_source_count).
 */
export function sourcesByClaim(db: Db, caller: Caller, claimIds: string[]): Map<string, SourceRow[]> {
  const out = new Map<string, SourceRow[]>();
  if (!claimIds.length) return out;
  const [ok, ...args] = retrievable(caller, "o");
  const rows = db.all<SourceRow>(
    `SELECT s.* FROM claim_sources s JOIN observations o ON o.observation_id = s.observation_id
      WHERE s.claim_id IN (SELECT value FROM json_each(?)) AND ${ok} ORDER BY s.claim_id, s.position`,
    JSON.stringify(claimIds),
    ...args,
  );
  for (const r of rows) out.set(r.claim_id, [...(out.get(r.claim_id) ?? []), r]);
  return out;
}

/** Sources of one claim as the caller may see them (see sourcesByClaim). */
export const sourcesOf = (db: Db, caller: Caller, claimId: string) =>
  sourcesByClaim(db, caller, [claimId]).get(claimId) ?? [];

/** Claim ids among `ids` that the caller may retrieve. */
export function retrievableClaimIds(db: Db, caller: Caller, ids: string[]): Set<string> {
  if (!ids.length) return new Set();
  const [ok, ...args] = retrievable(caller, "c");
  return new Set(
    db
      .all<{ claim_id: string }>(
        `SELECT c.claim_id FROM claims c WHERE c.claim_id IN (SELECT value FROM json_each(?)) AND ${ok}`,
        JSON.stringify(ids),
        ...args,
      )
      .map((r) => r.claim_id),
  );
}

/** Observation ids among `ids` that the caller may retrieve. */
export function retrievableObservationIds(db: Db, caller: Caller, ids: string[]): Set<string> {
  if (!ids.length) return new Set();
  const [ok, ...args] = retrievable(caller, "o");
  return new Set(
    db
      .all<{ observation_id: string }>(
        `SELECT o.observation_id FROM observations o WHERE o.observation_id IN (SELECT value FROM json_each(?)) AND ${ok}`,
        JSON.stringify([...new Set(ids)]),
        ...args,
      )
      .map((r) => r.observation_id),
  );
}

/** Claims as the caller sees them: sources, disputes and superseded_by limited to what it may read. */
export function claimViewsFor(db: Db, caller: Caller, rows: ClaimRow[]) {
  const sources = sourcesByClaim(
    db,
    caller,
    rows.map((c) => c.claim_id),
  );
  const visible = retrievableClaimIds(db, caller, claimReferences(rows));
  return rows.map((c) => withVisibleReferences(claimView(c, sources.get(c.claim_id) ?? []), visible));
}

export const claimViewFor = (db: Db, caller: Caller, row: ClaimRow) => claimViewsFor(db, caller, [row])[0];

export function observationView(o: ObservationRow) {
  return {
    observation_id: o.observation_id,
    subject_id: o.subject_id,
    project_id: o.project_id,
    kind: o.kind,
    content: o.content,
    content_hash: o.content_hash,
    source: { type: o.source_type, ...(o.source_ref != null ? { ref: o.source_ref } : {}) },
    trust: o.trust,
    visibility: o.visibility,
    author_id: o.author_id,
    created_at: o.created_at,
    occurred_at: o.occurred_at,
    purged: o.purged_at != null,
    purged_at: o.purged_at,
  };
}
