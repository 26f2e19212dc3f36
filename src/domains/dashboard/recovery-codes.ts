// Recovery codes: replacing the set (current_password) and spending one as a staged login's second factor.
import { orgRoute } from "../../org/route";
import { commitWrite } from "../../org/write";
import { FULL_ONLY, STAGED_ONLY, currentAccount, requirePassword, samePassword } from "./current-account";
import { currentPasswordBody, recoveryCodeBody, recoveryCodesResponse, upgradedSessionResponse } from "./schema";
import { completeSecondFactor } from "./sessions";
import { replaceRecoveryCodes, unusedRecoveryCodes, useRecoveryCode } from "./store";

export const replaceRecoveryCodesRoute = orgRoute({
  method: "POST",
  path: "/v1/operator-accounts/current/recovery-codes",
  scope: null,
  body: currentPasswordBody,
  stages: FULL_ONLY,
  ownAccount: true,
  response: { 201: recoveryCodesResponse },
  summary: "Replace all recovery codes (current_password); the new set is returned once.",
  operationId: "replaceRecoveryCodes",
  tag: "Dashboard",
  description: "Replaces all recovery codes after checking `current_password`; the new set is returned once.",
  handler: async (rc) => {
    const account = currentAccount(rc);
    await requirePassword(rc, account, rc.body.current_password);
    return commitWrite(rc, (db) => {
      samePassword(db, account);
      const codes = replaceRecoveryCodes(db, account.account_id);
      return {
        status: 201,
        data: { recovery_codes: codes },
        audit: { action: "recovery_codes.replaced", resourceType: "operator_account", resourceId: account.account_id },
      };
    });
  },
});

export const recoveryCodeLoginRoute = orgRoute({
  method: "POST",
  path: "/v1/dashboard-sessions/current/recovery-code",
  scope: null,
  body: recoveryCodeBody,
  stages: STAGED_ONLY,
  ownAccount: true,
  response: { 201: upgradedSessionResponse },
  summary: "Consume one recovery code; the staged session is replaced by a full one. Answers how many codes remain.",
  operationId: "redeemRecoveryCode",
  tag: "Dashboard",
  description:
    "Consumes one recovery code in place of a passkey, replacing the staged session with a full one, and says how " +
    "many codes remain.",
  handler: async (rc) => {
    const account = currentAccount(rc);
    return completeSecondFactor(
      rc,
      account,
      "recovery_code",
      (db) =>
        useRecoveryCode(db, account.account_id, rc.body.code)
          ? { recovery_codes_remaining: unusedRecoveryCodes(db, account.account_id) }
          : null,
      "The recovery code is not valid.",
    );
  },
});
