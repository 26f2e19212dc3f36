// Context compile ranking. Candidates are authorized, current claims (filters applied in SQL before
// anything is ranked); each gets a score from lexical relevance (FTS5 bm25), subject/project match,
// trust, recency and past feedback; the pack takes them greedily by score into the token budget.
// Deterministic: equal input and equal state give the same pack (ties break on newest claim first).
import { TRUST_LEVELS, type Trust } from "../../auth/trust";
import { clock } from "../../http/clock";
import type { Db } from "../../org/db";
import type { Caller } from "../../org/request";
import { matchAny, queryTerms } from "./fts";
import { type ClaimRow, readableClause } from "./store";
import { estimateTokens } from "./tokens";

export const CANDIDATE_LIMIT = 1000;

export const WEIGHTS = {
  lexical: 1.0,
  subject: 0.3,
  project: 0.2,
  trust: 0.15,
  recency: 0.1,
  recencyHalfLifeDays: 30,
  feedback: 0.05,
  feedbackClamp: 4,
  disputed: -0.05,
} as const;

export interface CompileFilters {
  query?: string;
  subject_id?: string;
  project_id?: string;
  kinds?: string[];
}

export interface RankedClaim {
  claim: ClaimRow;
  score: number;
  tokens: number;
}

type Candidate = ClaimRow & { rank: number | null; feedback: number | null };

function selectCandidates(db: Db, caller: Caller, f: CompileFilters): Candidate[] {
  const [readable, ...who] = readableClause(caller, "c");
  const where = [readable, "c.status IN ('active', 'disputed')", "(c.valid_to IS NULL OR c.valid_to > ?)"];
  const args: unknown[] = [...who, clock.nowIso()];
  if (f.kinds?.length) {
    where.push("c.kind IN (SELECT value FROM json_each(?))");
    args.push(JSON.stringify(f.kinds));
  }
  const cols = "c.*, fb.score AS feedback";
  const joinFb = "LEFT JOIN claim_feedback_score fb ON fb.claim_id = c.claim_id";
  const byId = new Map<string, Candidate>();
  const terms = queryTerms(f.query);
  if (terms.length) {
    for (const row of db.all<Candidate>(
      `SELECT ${cols}, f.rank AS rank FROM claims_fts f JOIN claims c ON c.seq = f.rowid ${joinFb}
        WHERE claims_fts MATCH ? AND ${where.join(" AND ")} ORDER BY f.rank LIMIT ?`,
      matchAny(terms), ...args, CANDIDATE_LIMIT)) byId.set(row.claim_id, row);
  }
  // Claims about the named subject or project are candidates even without a lexical match; with
  // neither a query nor a scope, the newest claims are.
  const scoped: [string, string][] = [];
  if (f.subject_id) scoped.push(["subject_id", f.subject_id]);
  if (f.project_id) scoped.push(["project_id", f.project_id]);
  if (!terms.length && !scoped.length) scoped.push(["1", "1"]);
  for (const [col, value] of scoped)
    for (const row of db.all<Candidate>(
      `SELECT ${cols}, NULL AS rank FROM claims c ${joinFb} WHERE ${col === "1" ? "1 = ?" : `c.${col} = ?`} AND ${where.join(" AND ")}
        ORDER BY c.seq DESC LIMIT ?`,
      col === "1" ? 1 : value, ...args, CANDIDATE_LIMIT))
      if (!byId.has(row.claim_id)) byId.set(row.claim_id, row);
  return [...byId.values()];
}

export function rankClaims(db: Db, caller: Caller, f: CompileFilters): RankedClaim[] {
  const candidates = selectCandidates(db, caller, f);
  // bm25 ranks are negative, more negative = better; normalize against the best match to 0..1.
  const best = Math.min(0, ...candidates.map((c) => c.rank ?? 0));
  const now = clock.nowMs();
  const maxTrust = TRUST_LEVELS.length - 1;
  const ranked = candidates.map((c) => {
    const lexical = best < 0 && c.rank != null ? c.rank / best : 0;
    const ageDays = Math.max(0, (now - Date.parse(c.created_at)) / 86_400_000);
    const feedback = Math.max(-WEIGHTS.feedbackClamp, Math.min(WEIGHTS.feedbackClamp, c.feedback ?? 0));
    const score =
      WEIGHTS.lexical * lexical +
      (f.subject_id && c.subject_id === f.subject_id ? WEIGHTS.subject : 0) +
      (f.project_id && c.project_id === f.project_id ? WEIGHTS.project : 0) +
      WEIGHTS.trust * (TRUST_LEVELS.indexOf(c.trust as Trust) / maxTrust) +
      WEIGHTS.recency * Math.pow(0.5, ageDays / WEIGHTS.recencyHalfLifeDays) +
      WEIGHTS.feedback * feedback +
      (c.status === "disputed" ? WEIGHTS.disputed : 0);
    return { claim: c, score: Math.round(score * 1e6) / 1e6, tokens: estimateTokens(c.statement) };
  });
  ranked.sort((a, b) => b.score - a.score || b.claim.seq - a.claim.seq);
  return ranked;
}

/** Greedy pack: highest score first; an item that does not fit is skipped so smaller ones may still fit. */
export function pack(ranked: RankedClaim[], tokenBudget: number, maxItems: number): RankedClaim[] {
  const out: RankedClaim[] = [];
  let used = 0;
  for (const r of ranked) {
    if (out.length >= maxItems) break;
    if (used + r.tokens > tokenBudget) continue;
    out.push(r);
    used += r.tokens;
  }
  return out;
}
