// Retention's and legal holds' reads of the record tables. They act on records whoever may read them
// (an administrator's sweep, a hold's coverage of dependents), so no read rule applies: they return
// ids and timestamps only, never content (the routes report what they did as counts).
import type { Db } from "../../sql/db";

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
