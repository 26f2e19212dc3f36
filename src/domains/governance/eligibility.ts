// THE release eligibility rule (DESIGN "Eligible"), one pure function checked at release create,
// approve and activate, and again for every release at channel compile time:
//   the claim's current version equals the pinned version; it is active, unexpired, and shared with
//   the whole organization (src/access/retrieval.ts notShared: not excluded by retention, team-visible
//   and outside every workspace; a channel's audience is outside every workspace);
//   every supporting source's trust is at least the channel's min_trust; its trust is `verified`; and,
//   when the active `release` policy has require_approved_claim, an approved claim approval of exactly
//   that version exists.
import { type Trust, trustRank } from "../../auth/trust";
import { clock } from "../../http/clock";
import type { Db } from "../../sql/db";
import { notShared } from "../../access/retrieval";
import { activeRules } from "./store";

export const INELIGIBLE = {
  stale_version: "the claim changed since this version was pinned",
  not_active: "the claim is not active",
  expired: "the claim has expired",
  retention_excluded: "retention has excluded the claim from retrieval",
  not_team: "the claim is not team-visible",
  workspace_scoped: "the claim belongs to a workspace's project, and a channel's audience is outside every workspace",
  source_below_min_trust: "a supporting source's trust is below the channel's min_trust",
  not_verified: "the claim's trust is not verified",
  not_approved: "the active release policy requires an approved claim approval of this version",
} as const;
export type Ineligible = keyof typeof INELIGIBLE;

/** What release eligibility needs to know about a claim now (governance). */
export interface ClaimFacts {
  claim_id: string;
  version: number;
  status: string;
  valid_to: string | null;
  visibility: string;
  /** The claim's project (null: none; fixed for the claim's life), which channel compile's project_id filters on. */
  project_id: string | null;
  /** The workspace of the claim's project (null: none). */
  workspace_id: string | null;
  trust: string;
  author_id: string;
  retention_excluded_at: string | null;
  /** Trust of each observation the claim names with relation `supports`. */
  supporting_trusts: string[];
}

/** Current facts of many claims in one statement (channel compile checks every release at once). */
export function claimFacts(db: Db, claimIds: string[]): Map<string, ClaimFacts> {
  const out = new Map<string, ClaimFacts>();
  if (!claimIds.length) return out;
  for (const c of db.all<Omit<ClaimFacts, "supporting_trusts"> & { supporting: string | null }>(
    `SELECT c.claim_id, c.version, c.status, c.valid_to, c.visibility, c.project_id, c.workspace_id, c.trust, c.author_id, c.retention_excluded_at,
            (SELECT group_concat(o.trust) FROM claim_sources s JOIN observations o ON o.observation_id = s.observation_id
              WHERE s.claim_id = c.claim_id AND s.relation = 'supports') AS supporting
       FROM claims c WHERE c.claim_id IN (SELECT value FROM json_each(?))`,
    JSON.stringify([...new Set(claimIds)]),
  )) {
    const { supporting, ...facts } = c;
    out.set(c.claim_id, { ...facts, supporting_trusts: supporting ? supporting.split(",") : [] });
  }
  return out;
}

export interface EligibilityContext {
  facts: Map<string, ClaimFacts>;
  /** null: no active release policy requires approval. Else `claim_id:version` of approved approvals. */
  approved: Set<string> | null;
  now: string;
}

export function ineligibility(
  ctx: EligibilityContext,
  pin: { claim_id: string; claim_version: number },
  minTrust: string,
): Ineligible | null {
  const c = ctx.facts.get(pin.claim_id);
  if (!c || c.version !== pin.claim_version) return "stale_version";
  if (c.status !== "active") return "not_active";
  if (c.valid_to != null && c.valid_to <= ctx.now) return "expired";
  const unshared = notShared(c);
  if (unshared) return unshared;
  // Before the claim's own trust: a claim's trust is the lowest of its supporting sources', so a
  // verified claim always passes this; checking it first names the channel's floor when it is the cause.
  if (c.supporting_trusts.some((t) => trustRank(t as Trust) < trustRank(minTrust as Trust)))
    return "source_below_min_trust";
  if (c.trust !== "verified") return "not_verified";
  if (ctx.approved && !ctx.approved.has(`${c.claim_id}:${c.version}`)) return "not_approved";
  return null;
}

/** Load what `ineligibility` needs for a set of claims, in a bounded number of statements. */
export function eligibilityContext(db: Db, claimIds: string[]): EligibilityContext {
  const rules = activeRules(db, "release");
  let approved: Set<string> | null = null;
  if (rules?.require_approved_claim) {
    approved = new Set(
      db
        .all<{ k: string }>(
          `SELECT claim_id || ':' || claim_version AS k FROM claim_approvals
        WHERE status = 'approved' AND claim_id IN (SELECT value FROM json_each(?))`,
          JSON.stringify([...new Set(claimIds)]),
        )
        .map((r) => r.k),
    );
  }
  return { facts: claimFacts(db, claimIds), approved, now: clock.nowIso() };
}

export const ineligibleMessage = (reason: Ineligible) =>
  `The claim is not eligible for release (${reason}): ${INELIGIBLE[reason]}.`;
