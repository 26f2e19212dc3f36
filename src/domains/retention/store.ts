// The SQL of retention: legal holds, identity mappings, and retention's and legal holds' reads of the
// record tables. Those reads act on records whoever may read them (an administrator's sweep, a hold's
// coverage of dependents), so no read rule applies: they return ids and timestamps only, never content
// (the routes report what they did as counts).
import { type Db, list, sql } from "../../sql/db";

// Record tables ----------------------------------------------------------------------------------

export type RecordType = "observation" | "claim";

const RECORD_TABLE: Record<RecordType, { table: string; id: string }> = {
  observation: { table: "observations", id: "observation_id" },
  claim: { table: "claims", id: "claim_id" },
};

/**
 * The source links touching these records: every (claim, observation) pair where the claim is one of
 * `claims` or the observation one of `observations` (the edges legal-hold coverage follows).
 */
export function sourceLinks(db: Db, records: { observations: string[]; claims: string[] }) {
  if (!records.observations.length && !records.claims.length) return [];
  return db.all<{ claim_id: string; observation_id: string }>(
    `SELECT claim_id, observation_id FROM claim_sources WHERE claim_id IN (SELECT value FROM json_each(?))
     UNION SELECT claim_id, observation_id FROM claim_sources WHERE observation_id IN (SELECT value FROM json_each(?))`,
    JSON.stringify(records.claims),
    JSON.stringify(records.observations),
  );
}

/** One rule of a retention policy as the candidate scan applies it (cutoff: created before it). */
export interface RetentionMatch {
  cutoff: string;
  kinds?: string[];
  visibility?: string;
}

/**
 * One page of retention candidates of a type, oldest first after a (created_at, id) cursor: records
 * not yet excluded that some rule matches. Walks the (created_at, id) index, so a page costs its size.
 */
export function retentionCandidates(
  db: Db,
  type: RecordType,
  rules: RetentionMatch[],
  after: [string, string],
  limit: number,
) {
  if (!rules.length) return [];
  const t = RECORD_TABLE[type];
  const args: unknown[] = [];
  const any = rules.map((r) => {
    const parts = ["x.created_at < ?"];
    args.push(r.cutoff);
    if (r.kinds) {
      parts.push("x.kind IN (SELECT value FROM json_each(?))");
      args.push(JSON.stringify(r.kinds));
    }
    if (r.visibility) {
      parts.push("x.visibility = ?");
      args.push(r.visibility);
    }
    return `(${parts.join(" AND ")})`;
  });
  const latest = rules
    .map((r) => r.cutoff)
    .sort()
    .at(-1)!;
  return db.all<{ id: string; created_at: string }>(
    `SELECT x.${t.id} AS id, x.created_at FROM ${t.table} x
      WHERE x.created_at < ? AND (x.created_at, x.${t.id}) > (?, ?) AND x.retention_excluded_at IS NULL AND (${any.join(" OR ")})
      ORDER BY x.created_at, x.${t.id} LIMIT ?`,
    latest,
    ...after,
    ...args,
    limit,
  );
}

/** Which of these records retention has excluded. */
export function excludedAmong(db: Db, records: { observations: string[]; claims: string[] }) {
  const of = (type: RecordType, ids: string[]) =>
    ids.length
      ? db
          .all<{ id: string }>(
            `SELECT ${RECORD_TABLE[type].id} AS id FROM ${RECORD_TABLE[type].table}
      WHERE ${RECORD_TABLE[type].id} IN (SELECT value FROM json_each(?)) AND retention_excluded_at IS NOT NULL`,
            JSON.stringify(ids),
          )
          .map((r) => r.id)
      : [];
  return { observations: of("observation", records.observations), claims: of("claim", records.claims) };
}

// Legal holds ------------------------------------------------------------------------------------

export interface HoldRow {
  hold_id: string;
  target_type: "claim" | "observation";
  target_id: string;
  reason: string;
  status: string;
  created_by: string;
  created_at: string;
  released_by: string | null;
  released_at: string | null;
}

export const getHold = (db: Db, holdId: string) =>
  db.first<HoldRow>(sql`SELECT * FROM legal_holds WHERE hold_id = ${holdId}`);

export const insertHold = (db: Db, h: HoldRow) =>
  db.run(sql`INSERT INTO legal_holds (hold_id, target_type, target_id, reason, status, created_by, created_at)
    VALUES (${h.hold_id}, ${h.target_type}, ${h.target_id}, ${h.reason}, ${h.status}, ${h.created_by}, ${h.created_at})`);

export const releaseHold = (db: Db, holdId: string, by: string, at: string) =>
  db.run(
    sql`UPDATE legal_holds SET status = 'released', released_by = ${by}, released_at = ${at} WHERE hold_id = ${holdId}`,
  );

/** The targets of active holds naming any of these record ids, as `type:id` keys. */
export const activeHoldTargets = (db: Db, targetIds: string[]) =>
  targetIds.length
    ? db
        .all<{ k: string }>(
          sql`SELECT target_type || ':' || target_id AS k FROM legal_holds
          WHERE status = 'active' AND target_id IN ${list(targetIds)}`,
        )
        .map((r) => r.k)
    : [];

// Identity mappings ------------------------------------------------------------------------------

export interface MappingRow {
  mapping_id: string;
  external_system: string;
  external_id: string;
  subject_id: string;
  version: number;
  status: string;
  created_by: string;
  created_at: string;
  retired_by: string | null;
  retired_at: string | null;
}

export const getMapping = (db: Db, mappingId: string) =>
  db.first<MappingRow>(sql`SELECT * FROM identity_mappings WHERE mapping_id = ${mappingId}`);

/** The external identity's active mapping (at most one: a partial unique index). */
export const activeMapping = (db: Db, externalSystem: string, externalId: string) =>
  db.first<MappingRow>(
    sql`SELECT * FROM identity_mappings WHERE external_system = ${externalSystem} AND external_id = ${externalId} AND status = 'active'`,
  );

/** The external identity's highest mapping version, active or retired (0: none yet). */
export const latestMappingVersion = (db: Db, externalSystem: string, externalId: string) =>
  db.first<{ v: number }>(
    sql`SELECT coalesce(max(version), 0) AS v FROM identity_mappings WHERE external_system = ${externalSystem} AND external_id = ${externalId}`,
  )!.v;

export const insertMapping = (db: Db, m: MappingRow) =>
  db.run(sql`INSERT INTO identity_mappings (mapping_id, external_system, external_id, subject_id, version, status, created_by, created_at)
    VALUES (${m.mapping_id}, ${m.external_system}, ${m.external_id}, ${m.subject_id}, ${m.version}, ${m.status}, ${m.created_by}, ${m.created_at})`);

export const retireMapping = (db: Db, mappingId: string, by: string, at: string) =>
  db.run(
    sql`UPDATE identity_mappings SET status = 'retired', retired_by = ${by}, retired_at = ${at} WHERE mapping_id = ${mappingId}`,
  );

/** A page of mappings, active and retired, after (created_at, mapping_id), optionally filtered. */
export const mappingsAfter = (
  db: Db,
  f: {
    after: [string, string];
    external_system?: string;
    external_id?: string;
    subject_id?: string;
    status?: string;
    limit: number;
  },
) =>
  db.all<MappingRow>(sql`SELECT * FROM identity_mappings WHERE (created_at, mapping_id) > (${f.after[0]}, ${f.after[1]})
    ${f.external_system !== undefined ? sql`AND external_system = ${f.external_system}` : sql``}
    ${f.external_id !== undefined ? sql`AND external_id = ${f.external_id}` : sql``}
    ${f.subject_id !== undefined ? sql`AND subject_id = ${f.subject_id}` : sql``}
    ${f.status !== undefined ? sql`AND status = ${f.status}` : sql``}
    ORDER BY created_at, mapping_id LIMIT ${f.limit}`);
