// Memories search's first page as main had it before issue 23's fifth pass (5b9e1bc), for the in-process
// profile to time old against new in the same run, interleaved, and to check that both give the same
// order: every match's claim id read, bm25 over arrays of stored stems, the first page read by claim
// id, the rest stored as a JSON array of claim ids (in a table of its own, search_snapshots_before).
import { clock } from "../src/http/clock";
import { randomHex } from "../src/http/ids";
import type { Db } from "../src/org/db";
import type { Caller } from "../src/org/request";
import { bm25, matchAll, phraseStems, queryTerms, stemsOf, storedStems } from "../src/domains/memory/fts";
import { type ClaimRow, retrievable, sharedTermStats } from "../src/domains/memory/records";
import { SEARCH_WINDOW, SNAPSHOT_TTL_MS } from "../src/domains/memory/search";

export const beforeTable = `CREATE TABLE IF NOT EXISTS search_snapshots_before (snapshot_id TEXT PRIMARY KEY, principal_id TEXT NOT NULL,
  query_key TEXT NOT NULL, claim_ids TEXT NOT NULL, expires_at TEXT NOT NULL);
  CREATE INDEX IF NOT EXISTS search_snapshots_before_by_expiry ON search_snapshots_before(expires_at)`;

/** The first page and the whole order (claim ids), no filters (the profile's searches use none). */
export function searchBefore(db: Db, caller: Caller, q: string, limit: number, scheduleAlarm: (atMs: number) => void,
  mark: (phase: string) => void = () => {}): { page: ClaimRow[]; order: string[] } {
  const words = queryTerms(q);
  const [where, ...args] = retrievable(caller, "c", { current: true });
  const queryKey = JSON.stringify([words, null, null, null, null, null]);
  const phrases = words.map(phraseStems);
  const stats = sharedTermStats(db, phrases.flat());
  mark("term statistics");
  const rows = db.all<{ seq: number; claim_id: string; stems: string | null; statement: string | null }>(
    `SELECT c.seq, c.claim_id, c.stems, CASE WHEN c.stems IS NULL THEN (SELECT statement FROM claims WHERE seq = c.seq) END AS statement
      FROM claims_fts f CROSS JOIN claim_ranking c ON c.seq = f.rowid
      WHERE claims_fts MATCH ? AND ${where} ORDER BY f.rowid DESC LIMIT ?`, matchAll(words), ...args, SEARCH_WINDOW);
  mark("FTS read");
  const scored = rows.map((c) => ({ c, score: bm25(c.stems != null ? storedStems(c.stems) : stemsOf(c.statement ?? ""), phrases, stats) }));
  scored.sort((a, b) => b.score - a.score || a.c.seq - b.c.seq);
  const ranked = scored.map((x) => x.c.claim_id);
  mark("bm25 + sort");
  const firstIds = ranked.slice(0, limit);
  const found = new Map(db.all<ClaimRow>(`SELECT c.* FROM json_each(?) j CROSS JOIN claims c ON c.claim_id = j.value WHERE ${where}`,
    JSON.stringify(firstIds), ...args).map((c) => [c.claim_id, c]));
  const page = firstIds.flatMap((id) => found.get(id) ?? []);
  mark("first page read");
  if (ranked.length <= limit) return { page, order: ranked };
  const expiresAt = clock.nowMs() + SNAPSHOT_TTL_MS;
  const rest = JSON.stringify(ranked.slice(limit));
  mark("snapshot stringify");
  db.run("DELETE FROM search_snapshots_before WHERE expires_at <= ?", clock.nowIso());
  mark("snapshot expired DELETE");
  db.run("INSERT INTO search_snapshots_before (snapshot_id, principal_id, query_key, claim_ids, expires_at) VALUES (?, ?, ?, ?, ?)",
    randomHex(16), caller.principalId, queryKey, rest, new Date(expiresAt).toISOString());
  mark("snapshot INSERT");
  scheduleAlarm(expiresAt);
  mark("alarm scheduling");
  return { page, order: ranked };
}
