// The stage gate: which credentials may call a route. A dashboard session in stage `password_change`
// or `staged` can call only the routes that name that stage; a `full` session acts as its account's
// principal wherever an API key may. Enforced in ONE place (executeRoute) from the route's `stages` flag.
import { forbidden, notFound } from "../http/errors";

export const SESSION_STAGES = ["password_change", "staged", "full"] as const;
export type SessionStage = (typeof SESSION_STAGES)[number];
export type CredentialStage = "api_key" | SessionStage;

/** Every product route: an API key or a full dashboard session. */
export const DEFAULT_STAGES: readonly CredentialStage[] = ["api_key", "full"];

/** A caller as the gate sees it: a dashboard session's stage, or none for an API key. */
export interface StagedCaller {
  session?: { stage: SessionStage };
}

export const credentialStage = (caller: StagedCaller): CredentialStage => caller.session?.stage ?? "api_key";

/**
 * An API key on a route of the caller's own account (`ownAccount`) that takes only sessions — its
 * second factor, passkeys and recovery codes — answers like any `/current` route when the key's
 * principal has no account (404), and 403 when it has one.
 */
export function checkStage(
  caller: StagedCaller,
  route: { stages?: readonly CredentialStage[]; ownAccount?: boolean },
  hasAccount: () => boolean,
): void {
  const allowed = route.stages ?? DEFAULT_STAGES;
  const stage = credentialStage(caller);
  if (allowed.includes(stage)) return;
  if (stage === "api_key" && route.ownAccount && !hasAccount()) throw notFound("Operator account");
  if (stage === "password_change")
    throw forbidden(
      "Replace the temporary password first (PATCH /v1/operator-accounts/current/password); then log in again.",
    );
  if (stage === "staged") throw forbidden("Complete the second factor first: a passkey assertion or a recovery code.");
  if (allowed.includes("staged") && !allowed.includes("full"))
    throw forbidden("This route requires a staged dashboard session (after the password, before the second factor).");
  if (stage === "full") throw forbidden("This route takes an API key; a dashboard session cannot call it.");
  throw forbidden("This route requires a full dashboard session.");
}
