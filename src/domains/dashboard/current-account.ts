// What the `/current` routes share: the credential stages they admit, the calling principal's account
// and re-authentication.
import type { CredentialStage } from "../../auth/stages";
import { conflict, forbidden, notFound } from "../../http/errors";
import type { RequestCtx } from "../../org/request";
import type { Db } from "../../sql/db";
import { pepperOf, verifyPassword } from "../identity/passwords";
import { type AccountRow, accountById, accountOfPrincipal } from "./store";

export const ANY_CREDENTIAL: readonly CredentialStage[] = ["api_key", "password_change", "staged", "full"];
export const STAGED_ONLY: readonly CredentialStage[] = ["staged"];
export const FULL_ONLY: readonly CredentialStage[] = ["full"];

/** `/current`: the account of the calling principal; a principal without one gets 404. */
export function currentAccount(rc: RequestCtx): AccountRow {
  const account = rc.caller.session
    ? accountById(rc.db, rc.caller.session.accountId)
    : accountOfPrincipal(rc.db, rc.caller.principalId);
  if (!account) throw notFound("Operator account");
  return account;
}

/** Re-authentication: missing is 400 (the schema), wrong is 403. */
export async function requirePassword(rc: RequestCtx, account: AccountRow, password: string): Promise<void> {
  if (!(await verifyPassword(password, account, pepperOf(rc.env))).ok)
    throw forbidden("current_password is not the account's password.");
}

/** The password checked above must still be the account's when the write commits. */
export function samePassword(db: Db, account: AccountRow): void {
  if (accountById(db, account.account_id)?.password_hash !== account.password_hash)
    throw conflict("The account's password changed meanwhile; try again.");
}
