// moves into memory/records.ts at merge.
// The few statements governance needs on claims, observations and claim_sources, kept in one place so
// the records branch can take them over whole. Everything else goes through memory/store.ts exports.
import { readableWhere } from "../../access/policy";
import type { Db } from "../../org/db";
import type { Caller } from "../../org/request";

/** What eligibility needs to know about a claim now. */
export interface ClaimFacts {
  claim_id: string;
  version: number;
  status: string;
  valid_to: string | null;
  visibility: string;
  trust: string;
  author_id: string;
  /** Trust of each observation the claim names with relation `supports`. */
  supporting_trusts: string[];
}

/** Current facts of many claims in one statement (channel compile checks every release at once). */
export function claimFacts(db: Db, claimIds: string[]): Map<string, ClaimFacts> {
  const out = new Map<string, ClaimFacts>();
  if (!claimIds.length) return out;
  for (const c of db.all<Omit<ClaimFacts, "supporting_trusts"> & { supporting: string | null }>(
    `SELECT c.claim_id, c.version, c.status, c.valid_to, c.visibility, c.trust, c.author_id,
            (SELECT group_concat(o.trust) FROM claim_sources s JOIN observations o ON o.observation_id = s.observation_id
              WHERE s.claim_id = c.claim_id AND s.relation = 'supports') AS supporting
       FROM claims c WHERE c.claim_id IN (SELECT value FROM json_each(?))`, JSON.stringify([...new Set(claimIds)]))) {
    const { supporting, ...facts } = c;
    out.set(c.claim_id, { ...facts, supporting_trusts: supporting ? supporting.split(",") : [] });
  }
  return out;
}

/** Every source of a claim, readable or not, with the hash that pins its content (for snapshots). */
export const claimSourceHashes = (db: Db, claimId: string) =>
  db.all<{ observation_id: string; relation: string; content_hash: string }>(
    `SELECT s.observation_id, s.relation, o.content_hash FROM claim_sources s
       JOIN observations o ON o.observation_id = s.observation_id WHERE s.claim_id = ? ORDER BY s.position`, claimId);

/** Observation ids among `ids` that the caller may read. */
export function readableObservationIds(db: Db, caller: Caller, ids: string[]): Set<string> {
  if (!ids.length) return new Set();
  const [readable, ...who] = readableWhere(caller, "o");
  return new Set(db.all<{ observation_id: string }>(
    `SELECT o.observation_id FROM observations o WHERE o.observation_id IN (SELECT value FROM json_each(?)) AND ${readable}`,
    JSON.stringify([...new Set(ids)]), ...who).map((r) => r.observation_id));
}

/**
 * One page of claim approvals whose claim the caller may read (filtered in SQL before paging, so
 * hidden approvals leave no gap and no count), ordered by (created_at, approval_id).
 */
export function readableApprovalsPage<T>(db: Db, caller: Caller, f: { claim_id?: string; status?: string },
  after: [string, string], limit: number): T[] {
  const [readable, ...who] = readableWhere(caller, "c");
  const where = [readable, "(a.created_at, a.approval_id) > (?, ?)"];
  const args: unknown[] = [...who, ...after];
  if (f.claim_id) { where.push("a.claim_id = ?"); args.push(f.claim_id); }
  if (f.status) { where.push("a.status = ?"); args.push(f.status); }
  return db.all<T>(
    `SELECT a.* FROM claim_approvals a JOIN claims c ON c.claim_id = a.claim_id WHERE ${where.join(" AND ")}
      ORDER BY a.created_at, a.approval_id LIMIT ?`, ...args, limit + 1);
}
