// moves into memory/records.ts at merge
// The few statements federation needs on the memory tables (observations, claims, claim_sources,
// claims_fts) that no exported function offers yet. Nothing else in src/domains/federation touches them.
import type { Db } from "../../org/db";
import type { ClaimRow, ObservationRow, SourceRow } from "../memory/store";

/** Claims by id, in one statement. */
export const claimsByIds = (db: Db, ids: string[]) =>
  db.all<ClaimRow>("SELECT * FROM claims WHERE claim_id IN (SELECT value FROM json_each(?))", JSON.stringify(ids));

/** Observations by id, in one statement. */
export const observationsByIds = (db: Db, ids: string[]) =>
  db.all<ObservationRow>("SELECT * FROM observations WHERE observation_id IN (SELECT value FROM json_each(?))", JSON.stringify(ids));

/** What a filter judges (kind, subject, trust) and visibility, without content: cheap for a long scan. */
export interface RecordFacets {
  id: string;
  kind: string;
  subject_id: string;
  trust: string;
  visibility: string;
}

export const observationFacets = (db: Db, ids: string[]) =>
  db.all<RecordFacets>(
    "SELECT observation_id AS id, kind, subject_id, trust, visibility FROM observations WHERE observation_id IN (SELECT value FROM json_each(?))",
    JSON.stringify(ids));

export const claimFacets = (db: Db, ids: string[]) =>
  db.all<RecordFacets>(
    "SELECT claim_id AS id, kind, subject_id, trust, visibility FROM claims WHERE claim_id IN (SELECT value FROM json_each(?))",
    JSON.stringify(ids));

/** Every source of each claim (not only those some caller may read), in order. */
export function allSourcesByClaim(db: Db, claimIds: string[]): Map<string, SourceRow[]> {
  const out = new Map<string, SourceRow[]>();
  for (const r of db.all<SourceRow>(
    "SELECT * FROM claim_sources WHERE claim_id IN (SELECT value FROM json_each(?)) ORDER BY claim_id, position", JSON.stringify(claimIds)))
    out.set(r.claim_id, [...(out.get(r.claim_id) ?? []), r]);
  return out;
}

export function insertObservationRow(db: Db, o: ObservationRow): void {
  db.run(
    `INSERT INTO observations (observation_id, subject_id, project_id, kind, content, content_hash, source_type,
       source_ref, trust, visibility, author_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    o.observation_id, o.subject_id, o.project_id, o.kind, o.content, o.content_hash, o.source_type, o.source_ref,
    o.trust, o.visibility, o.author_id, o.created_at);
}

/** A claim, its full-text row and its sources (in order). */
export function insertClaimRow(db: Db, c: Omit<ClaimRow, "seq">, sources: { observation_id: string; relation: string }[]): void {
  const { seq } = db.first<{ seq: number }>(
    `INSERT INTO claims (claim_id, subject_id, project_id, kind, statement, status, visibility, trust, version,
       valid_from, valid_to, superseded_by, disputes, author_id, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING seq`,
    c.claim_id, c.subject_id, c.project_id, c.kind, c.statement, c.status, c.visibility, c.trust, c.version,
    c.valid_from, c.valid_to, c.superseded_by, c.disputes, c.author_id, c.created_at, c.updated_at)!;
  db.run("INSERT INTO claims_fts (rowid, statement) VALUES (?, ?)", seq, c.statement);
  sources.forEach((s, position) =>
    db.run("INSERT INTO claim_sources (claim_id, position, observation_id, relation) VALUES (?, ?, ?, ?)",
      c.claim_id, position, s.observation_id, s.relation));
}
