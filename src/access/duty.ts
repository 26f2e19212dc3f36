// Separation of duty (SPEC Authentication 10; DESIGN "Governance"): who may not approve what, decided
// here from the organization's active policy, with the rest of authorization, never in handlers.
//   claim approval decide: with an active `approval` policy that has separation_of_duty, neither the
//     submitter of the approval nor the author of the claim may decide it.
//   release approve: with an active `release` policy that has separation_of_duty, the release's
//     creator may not approve it. Activation is not subject to it.
// "Neither X nor Y" means neither the same actor as X: principals are compared by the actor standing
// behind them (actorOf), so a member cannot approve its own work through a principal it minted.
// What the rule reads of the organization (the active policy, the creation chain) it is handed as
// DutyFacts by the governance routes (src/domains/governance/store.ts dutyFacts), whose stores hold that SQL.
import type { Role } from "../auth/roles";
import { forbidden } from "../http/errors";
import type { Caller } from "./caller";
import { isAdmin } from "./policy";

export interface DutyFacts {
  /** The rules of the organization's active policy of a type, or null when none is active. */
  activeRules(type: "approval" | "release"): { separation_of_duty: boolean } | null;
  /** The principals that created `principalId`, nearest first, at most `max` links up. */
  creatorsOf(principalId: string, max: number): { principal_id: string; role: Role | null }[];
}

export type DutyAct =
  | { act: "decide_approval"; submitted_by: string; claim_author: string }
  | { act: "approve_release"; created_by: string };

/** How many creation links the same-actor rule follows; a longer chain cannot be cleared (refused). */
export const MAX_CREATION_DEPTH = 32;

/**
 * The actor standing behind a principal: follow `created_by` upwards while the creator is neither an
 * owner nor an admin, and take the last principal reached. Whoever creates a principal receives its
 * first key, so a principal is its non-admin creator's proxy, and so on up the chain; principals
 * created by one member (directly or through principals it created) and that member are one actor.
 * A link from an owner or admin is not followed: they may mint a key for any principal of their role
 * or below whoever created it, which no comparison of principals can stop, so they stay distinct
 * principals (an organization's owner, from whom every principal descends, can still review).
 * null: the chain is longer than MAX_CREATION_DEPTH (or loops), so the actor cannot be established.
 */
function actorOf(facts: DutyFacts, principalId: string): string | null {
  const chain = facts.creatorsOf(principalId, MAX_CREATION_DEPTH + 1);
  let actor = principalId;
  for (const creator of chain) {
    if (creator.role && isAdmin({ role: creator.role })) return actor;
    actor = creator.principal_id;
  }
  return chain.length > MAX_CREATION_DEPTH ? null : actor;
}

/** Why `me` may not act on work of `other` (described as `who`), or null when they are different actors. */
function sameActor(
  facts: DutyFacts,
  me: string,
  myActor: string | null,
  other: string,
  who: string,
  act: string,
): string | null {
  if (other === me) return `Separation of duty: ${who} may not ${act}.`;
  const theirs = actorOf(facts, other);
  if (myActor === null || theirs === null)
    return `Separation of duty: a creation chain longer than ${MAX_CREATION_DEPTH} principals hides who stands behind you or ${who}.`;
  return myActor === theirs
    ? `Separation of duty: you and ${who} count as one actor (one created the other, or both were created by the same member, directly or through principals it created), so you may not ${act}.`
    : null;
}

/** Why the caller may not perform `act` under the active policy, or null when it may. */
export function dutyRefusal(facts: DutyFacts, caller: Caller, a: DutyAct): string | null {
  const me = caller.principalId;
  if (a.act === "decide_approval") {
    if (!facts.activeRules("approval")?.separation_of_duty) return null;
    const mine = actorOf(facts, me);
    return (
      sameActor(facts, me, mine, a.submitted_by, "the submitter of an approval", "decide it") ??
      sameActor(facts, me, mine, a.claim_author, "the author of a claim", "decide its approval")
    );
  }
  if (!facts.activeRules("release")?.separation_of_duty) return null;
  return sameActor(facts, me, actorOf(facts, me), a.created_by, "the creator of a release", "approve it");
}

/** The one call handlers make: 403 FORBIDDEN when the active policy refuses the caller. */
export function requireSeparationOfDuty(facts: DutyFacts, caller: Caller, a: DutyAct): void {
  const refusal = dutyRefusal(facts, caller, a);
  if (refusal) throw forbidden(refusal);
}
