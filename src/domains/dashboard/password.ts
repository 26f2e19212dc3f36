// Password routes: creating an account (it starts with a temporary password) and replacing the password.
// The login itself is the public POST /v1/dashboard-sessions (./login.ts, ./sessions.ts).
import { requireAccountAuthority } from "../../access/authority";
import { clock } from "../../http/clock";
import { ApiError, conflict, invalid } from "../../http/errors";
import { claimUsername, orgOfUsername } from "../../index-db";
import { orgRoute } from "../../org/route";
import { commitWrite, insertAudit } from "../../org/write";
import { hashPassword, pepperOf, temporaryPassword } from "../identity/passwords";
import { insertPrincipal, withdrawPrincipal } from "../identity/store";
import { currentAccount, requirePassword, samePassword } from "./current-account";
import { accountResponse, changePasswordBody, createAccountBody, createdAccountResponse } from "./schema";
import {
  accountById,
  accountView,
  deleteAccount,
  insertAccount,
  revokeSessions,
  setPassword,
  usernameInUse,
} from "./store";

export const passwordRoutes = [
  orgRoute({
    method: "POST",
    path: "/v1/operator-accounts",
    scope: "keys:manage",
    body: createAccountBody,
    response: { 201: createdAccountResponse },
    summary:
      "Create a human account (principal, organization membership, account); the temporary password is returned once.",
    operationId: "createOperatorAccount",
    tag: "Dashboard",
    description:
      "Creates a human operator account with its principal and organization membership in one write; the temporary " +
      "password is returned once. The account gets no authority the caller lacks.",
    handler: async (rc) => {
      const { body, caller } = rc;
      // Before anything looks at the username: a credential that may not create the account learns nothing about it.
      requireAccountAuthority(caller, body.role);
      const index = rc.env.INDEX_DB;
      const taken = () => conflict(`The username "${body.username}" is taken.`);
      if (await orgOfUsername(index, body.username)) {
        // Usernames are unique across the deployment, so this answer tells whether one exists anywhere:
        // each such answer is audited, for owners to see who probes.
        rc.storage.transactionSync(() =>
          insertAudit(
            rc.db,
            { actorId: caller.principalId, keyId: caller.keyId, requestId: rc.requestId },
            {
              action: "operator_account.username_taken",
              resourceType: "operator_account",
              detail: { username: body.username },
            },
            clock.nowIso(),
          ),
        );
        throw taken();
      }
      const password = temporaryPassword();
      const hash = await hashPassword(password, pepperOf(rc.env));
      let accountId = "";
      let principalId = "";
      const reply = commitWrite(rc, (db) => {
        if (usernameInUse(db, body.username)) throw taken();
        const principal = insertPrincipal(db, "human", body.display_name ?? body.username, body.role, {
          createdBy: caller.principalId,
        });
        principalId = principal.principal_id;
        accountId = insertAccount(db, principal.principal_id, body.username, body.display_name ?? null, hash);
        return {
          status: 201,
          data: { ...accountView(accountById(db, accountId)!), temporary_password: password },
          audit: {
            action: "operator_account.created",
            resourceType: "operator_account",
            resourceId: accountId,
            detail: { username: body.username, role: body.role, principal_id: principal.principal_id },
          },
        };
      });
      // DO first, the deployment-wide username row second; without it the account is removed again.
      let failure: ApiError | null = null;
      try {
        await claimUsername(index, body.username, rc.orgId, clock.nowIso());
      } catch (err) {
        failure = /UNIQUE/i.test(String(err))
          ? taken()
          : new ApiError("UNAVAILABLE", "The username index is unavailable; the account was not created.");
      }
      if (failure) {
        // By the ids this request created, not through the live-account view: while the index write was in
        // flight the creator may have been removed, and that cascade disables the new account.
        rc.storage.transactionSync(() => {
          deleteAccount(rc.db, accountId);
          withdrawPrincipal(rc.db, principalId, caller.principalId, clock.nowIso());
          insertAudit(
            rc.db,
            { actorId: caller.principalId, keyId: caller.keyId, requestId: rc.requestId },
            {
              action: "operator_account.removed",
              resourceType: "operator_account",
              resourceId: accountId,
              detail: { reason: "username index" },
            },
            clock.nowIso(),
          );
        });
        throw failure;
      }
      return reply;
    },
  }),

  orgRoute({
    method: "PATCH",
    path: "/v1/operator-accounts/current/password",
    scope: null,
    body: changePasswordBody,
    response: { 200: accountResponse },
    stages: ["api_key", "password_change", "full"],
    ownAccount: true,
    summary:
      "Replace the account's password (current_password, new_password); revokes every dashboard session of the account.",
    operationId: "changePassword",
    tag: "Dashboard",
    description:
      "Replaces the calling account's password after checking the current one, and revokes every dashboard session of " +
      "the account: a fresh login follows.",
    handler: async (rc) => {
      const account = currentAccount(rc);
      const { current_password, new_password } = rc.body;
      await requirePassword(rc, account, current_password);
      if (new_password === current_password)
        throw invalid('Invalid field "new_password": must differ from the current password.');
      const hash = await hashPassword(new_password, pepperOf(rc.env));
      let revoked: string[] = [];
      const reply = commitWrite(rc, (db) => {
        samePassword(db, account);
        setPassword(db, account.account_id, hash, false);
        revoked = revokeSessions(db, account.account_id);
        return {
          status: 200,
          data: accountView(accountById(db, account.account_id)!),
          audit: {
            action: "operator_account.password_changed",
            resourceType: "operator_account",
            resourceId: account.account_id,
            detail: { sessions_revoked: revoked.length },
          },
        };
      });
      return { ...reply, indexWrites: revoked.map((keyHash) => ({ op: "remove_credential", keyHash })) };
    },
  }),
];
