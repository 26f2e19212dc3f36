// Separation of duty (SPEC Authentication 10; DESIGN "Governance"): who may not approve what, decided
// here from the organization's active policy, with the rest of authorization, never in handlers.
//   claim approval decide: with an active `approval` policy that has separation_of_duty, neither the
//     submitter of the approval nor the author of the claim may decide it.
//   release approve: with an active `release` policy that has separation_of_duty, the release's
//     creator may not approve it. Activation is not subject to it.
import { forbidden } from "../http/errors";
import type { Db } from "../org/db";
import type { Caller } from "../org/request";
import { activeRules } from "../domains/governance/store";

export type DutyAct =
  | { act: "decide_approval"; submitted_by: string; claim_author: string }
  | { act: "approve_release"; created_by: string };

/** Why the caller may not perform `act` under the active policy, or null when it may. */
export function dutyRefusal(db: Db, caller: Caller, a: DutyAct): string | null {
  const me = caller.principalId;
  if (a.act === "decide_approval") {
    if (!activeRules(db, "approval")?.separation_of_duty) return null;
    if (a.submitted_by === me) return "Separation of duty: the submitter of an approval may not decide it.";
    if (a.claim_author === me) return "Separation of duty: the author of a claim may not decide its approval.";
    return null;
  }
  if (!activeRules(db, "release")?.separation_of_duty) return null;
  return a.created_by === me ? "Separation of duty: the creator of a release may not approve it." : null;
}

/** The one call handlers make: 403 FORBIDDEN when the active policy refuses the caller. */
export function requireSeparationOfDuty(db: Db, caller: Caller, a: DutyAct): void {
  const refusal = dutyRefusal(db, caller, a);
  if (refusal) throw forbidden(refusal);
}
