// Governance's reads of the claims it governs. An approval or release is seen exactly as far as its
// claim is retrievable (src/access/retrieval.ts governedVisible in JS, governedJoin in SQL, applied
// before paging, so a hidden one leaves no gap and no count); elsewhere it answers like a missing one.
import { type Retrieval, governedJoin, governedVisible } from "../../access/retrieval";
import type { Db } from "../../sql/db";
import type { Caller } from "../../org/request";
import { getClaim } from "../memory/records";

/** The governance row if the caller may see it (its claim is retrievable, with `opts`), else null. */
export function seenThroughClaim<R extends { claim_id: string }>(
  db: Db,
  caller: Caller,
  row: R | null,
  opts: Retrieval = {},
): R | null {
  return row && governedVisible(caller, getClaim(db, row.claim_id), opts) ? row : null;
}

/**
 * One page of claim approvals the caller may see, ordered by (created_at, approval_id), after a
 * (created_at, approval_id) pair: limit + 1 rows, to tell has_more.
 */
export function approvalsPage<T>(
  db: Db,
  caller: Caller,
  f: { claim_id?: string; status?: string },
  after: [string, string],
  limit: number,
): T[] {
  const [join, ...args] = governedJoin(caller, "a");
  const where = ["(a.created_at, a.approval_id) > (?, ?)"];
  args.push(...after);
  if (f.claim_id) {
    where.push("a.claim_id = ?");
    args.push(f.claim_id);
  }
  if (f.status) {
    where.push("a.status = ?");
    args.push(f.status);
  }
  return db.all<T>(
    `SELECT a.* FROM claim_approvals a ${join} WHERE ${where.join(" AND ")}
      ORDER BY a.created_at, a.approval_id LIMIT ?`,
    ...args,
    limit + 1,
  );
}

/** One page of knowledge releases the caller may see, ordered by seq, after a seq: limit + 1 rows. */
export function releasesPage<T>(
  db: Db,
  caller: Caller,
  f: { channel_id?: string; status?: string },
  afterSeq: number,
  limit: number,
): T[] {
  const [join, ...args] = governedJoin(caller, "r");
  const where = ["r.seq > ?"];
  args.push(afterSeq);
  if (f.channel_id) {
    where.push("r.channel_id = ?");
    args.push(f.channel_id);
  }
  if (f.status) {
    where.push("r.status = ?");
    args.push(f.status);
  }
  return db.all<T>(
    `SELECT r.* FROM knowledge_releases r ${join} WHERE ${where.join(" AND ")}
      ORDER BY r.seq LIMIT ?`,
    ...args,
    limit + 1,
  );
}

/** The position of a release the caller may see (the release list's cursor), else null. */
export function releaseSeqOf(db: Db, caller: Caller, releaseId: string): number | null {
  const [join, ...args] = governedJoin(caller, "r");
  return (
    db.first<{ seq: number }>(
      `SELECT r.seq FROM knowledge_releases r ${join} WHERE r.release_id = ?`,
      ...args,
      releaseId,
    )?.seq ?? null
  );
}

/**
 * Every source of a claim, readable or not, with the hash that pins its content: a release snapshot
 * pins them all, and an approval counts them; each view then drops (and counts) what its caller cannot read.
 */
export const claimSourceHashes = (db: Db, claimId: string) =>
  db.all<{ observation_id: string; relation: string; content_hash: string }>(
    `SELECT s.observation_id, s.relation, o.content_hash FROM claim_sources s
       JOIN observations o ON o.observation_id = s.observation_id WHERE s.claim_id = ? ORDER BY s.position`,
    claimId,
  );
