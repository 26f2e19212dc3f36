// The twelve dashboard routes of SPEC "Dashboard accounts" (DESIGN "Dashboard accounts, sessions,
// passkeys"). Which credential stage may call each is declared by its `stages` flag and enforced by
// executeRoute; nothing here emits an event (accounts are not among SPEC's eleven kinds), every write
// audits metadata only.
import { requireAccountAuthority } from "../../access/authority";
import { ApiError, conflict, forbidden, invalid, notFound } from "../../http/errors";
import { type PublicRoute, orgRoute } from "../../http/route";
import type { Db } from "../../org/db";
import type { IndexWrite, Reply, RequestCtx } from "../../org/request";
import { ok } from "../../org/request";
import { commitWrite, insertAudit } from "../../org/write";
import { clock } from "../../http/clock";
import { insertPrincipal } from "../identity/store";
import { hashPassword, pepperOf, temporaryPassword, verifyPassword } from "../identity/passwords";
import { loginAtEdge } from "./login";
import { accountResponse, addedPasskeyResponse, addPasskeyBody, assertionBody, assertionOptionsResponse, changePasswordBody, createAccountBody, createdAccountResponse, currentPasswordBody, passkeyListResponse, recoveryCodeBody, recoveryCodesResponse, registrationOptionsResponse, revokedPasskeyResponse, sessionResponse, sessionRevokedResponse, upgradedSessionResponse } from "./schema";
import type { CredentialStage } from "./stages";
import {
  type AccountRow, accountById, accountOfPrincipal, accountView, activePasskeys, consumeChallenge, hasUnusedRecoveryCode,
  insertAccount, insertChallenge, insertPasskey, insertSession, passkeyByCredential, passkeyView, replaceRecoveryCodes,
  revokePasskey, revokeSessions, sessionView, setPassword, unusedRecoveryCodes, usePasskey, useRecoveryCode,
} from "./store";
import { countFailure, loginClient, resetFailures } from "./throttle";
import {
  authenticationOptions, decodePublicKey, encodePublicKey, registrationOptions, relyingParty, verifyAssertion, verifyRegistration,
} from "./webauthn";

const ANY_CREDENTIAL: readonly CredentialStage[] = ["api_key", "password_change", "staged", "full"];
const STAGED_ONLY: readonly CredentialStage[] = ["staged"];
const FULL_ONLY: readonly CredentialStage[] = ["full"];

/** `/current`: the account of the calling principal; a principal without one gets 404. */
function currentAccount(rc: RequestCtx): AccountRow {
  const account = rc.caller.session ? accountById(rc.db, rc.caller.session.accountId) : accountOfPrincipal(rc.db, rc.caller.principalId);
  if (!account) throw notFound("Operator account");
  return account;
}

/** Re-authentication: missing is 400 (the schema), wrong is 403. */
async function requirePassword(rc: RequestCtx, account: AccountRow, password: string): Promise<void> {
  if (!(await verifyPassword(password, account, pepperOf(rc.env))).ok) throw forbidden("current_password is not the account's password.");
}

/** The password checked above must still be the account's when the write commits. */
function samePassword(db: Db, account: AccountRow): void {
  if (accountById(db, account.account_id)?.password_hash !== account.password_hash)
    throw conflict("The account's password changed meanwhile; try again.");
}

/** The login throttle's client of this request (throttle.ts loginClient). */
const clientOf = (rc: RequestCtx) => loginClient(rc.headers["cf-connecting-ip"]);

/** A failed second factor: counted as a login failure of this client for the progressive delay, then 400. */
async function secondFactorFailed(rc: RequestCtx, account: AccountRow, message: string): Promise<never> {
  try {
    await countFailure(rc.env.INDEX_DB, account.username, clientOf(rc));
  } catch (err) {
    console.error("login failure count failed", err);
    throw new ApiError("UNAVAILABLE", "Storage is unavailable.");
  }
  throw invalid(message);
}

/** Replaces the calling staged session with a full one (one transaction), then resets this client's failure count. */
async function finishLogin(rc: RequestCtx, account: AccountRow, method: string, work: (db: Db) => Record<string, unknown>): Promise<Reply> {
  const staged = rc.caller.session!;
  let writes: IndexWrite[] = [];
  const reply = commitWrite(rc, (db) => {
    const extra = work(db);
    const old = revokeSessions(db, account.account_id, staged.sessionId);
    const full = insertSession(db, account.account_id, "full");
    writes = [{ op: "add_credential", keyHash: full.row.key_hash, keyId: full.row.session_id, kind: "dashboard_session" },
      ...old.map((keyHash): IndexWrite => ({ op: "remove_credential", keyHash }))];
    return {
      status: 201, data: { ...sessionView(full), ...extra },
      audit: { action: "dashboard_session.created", resourceType: "dashboard_session", resourceId: full.row.session_id,
        detail: { account_id: account.account_id, stage: "full", method, replaces: staged.sessionId } },
    };
  });
  await resetFailures(rc.env.INDEX_DB, account.username, clientOf(rc)).catch((err) => console.error("login failure reset failed", err));
  return { ...reply, indexWrites: writes };
}

export const dashboardLoginRoute: PublicRoute = {
  auth: "public", method: "POST", path: "/v1/dashboard-sessions",
  response: { 201: sessionResponse },
  summary: "Public (no Authorization header): exchange username and password for a dashboard session (stage password_change, staged or full).",
  edge: loginAtEdge,
};

export const dashboardRoutes = [
  orgRoute({
    method: "POST", path: "/v1/operator-accounts", scope: "keys:manage", body: createAccountBody,
    response: { 201: createdAccountResponse },
    summary: "Create a human account (principal, organization membership, account); the temporary password is returned once.",
    handler: async (rc) => {
      const { body, caller } = rc;
      // Before anything looks at the username: a credential that may not create the account learns nothing about it.
      requireAccountAuthority(caller, body.role);
      const index = rc.env.INDEX_DB;
      const taken = () => conflict(`The username "${body.username}" is taken.`);
      if (await index.prepare("SELECT 1 FROM dashboard_usernames WHERE username = ?").bind(body.username).first()) {
        // Usernames are unique across the deployment, so this answer tells whether one exists anywhere:
        // each such answer is audited, for owners to see who probes.
        rc.storage.transactionSync(() => insertAudit(rc.db, { actorId: caller.principalId, keyId: caller.keyId, requestId: rc.requestId },
          { action: "operator_account.username_taken", resourceType: "operator_account", detail: { username: body.username } }, clock.nowIso()));
        throw taken();
      }
      const password = temporaryPassword();
      const hash = await hashPassword(password, pepperOf(rc.env));
      let accountId = "";
      let principalId = "";
      const reply = commitWrite(rc, (db) => {
        if (db.first("SELECT 1 FROM operator_accounts WHERE username = ?", body.username)) throw taken();
        const principal = insertPrincipal(db, "human", body.display_name ?? body.username, body.role, { createdBy: caller.principalId });
        principalId = principal.principal_id;
        accountId = insertAccount(db, principal.principal_id, body.username, body.display_name ?? null, hash);
        return {
          status: 201, data: { ...accountView(accountById(db, accountId)!), temporary_password: password },
          audit: { action: "operator_account.created", resourceType: "operator_account", resourceId: accountId,
            detail: { username: body.username, role: body.role, principal_id: principal.principal_id } },
        };
      });
      // DO first, the deployment-wide username row second; without it the account is removed again.
      let failure: ApiError | null = null;
      try {
        await index.prepare("INSERT INTO dashboard_usernames (username, org_id, created_at) VALUES (?, ?, ?)")
          .bind(body.username, rc.orgId, clock.nowIso()).run();
      } catch (err) {
        failure = /UNIQUE/i.test(String(err)) ? taken() : new ApiError("UNAVAILABLE", "The username index is unavailable; the account was not created.");
      }
      if (failure) {
        // By the ids this request created, not through the live-account view: while the index write was in
        // flight the creator may have been removed, and that cascade disables the new account.
        rc.storage.transactionSync(() => {
          rc.db.run("DELETE FROM operator_accounts WHERE account_id = ?", accountId);
          rc.db.run("UPDATE principals SET removed_at = ? WHERE principal_id = ? AND removed_at IS NULL", clock.nowIso(), principalId);
          rc.db.run("UPDATE memberships SET removed_at = ?, removed_by = ? WHERE principal_id = ? AND removed_at IS NULL",
            clock.nowIso(), caller.principalId, principalId);
          insertAudit(rc.db, { actorId: caller.principalId, keyId: caller.keyId, requestId: rc.requestId },
            { action: "operator_account.removed", resourceType: "operator_account", resourceId: accountId, detail: { reason: "username index" } },
            clock.nowIso());
        });
        throw failure;
      }
      return reply;
    },
  }),

  orgRoute({
    method: "PATCH", path: "/v1/operator-accounts/current/password", scope: null, body: changePasswordBody,
    response: { 200: accountResponse },
    stages: ["api_key", "password_change", "full"], ownAccount: true,
    summary: "Replace the account's password (current_password, new_password); revokes every dashboard session of the account.",
    handler: async (rc) => {
      const account = currentAccount(rc);
      const { current_password, new_password } = rc.body;
      await requirePassword(rc, account, current_password);
      if (new_password === current_password) throw invalid('Invalid field "new_password": must differ from the current password.');
      const hash = await hashPassword(new_password, pepperOf(rc.env));
      let revoked: string[] = [];
      const reply = commitWrite(rc, (db) => {
        samePassword(db, account);
        setPassword(db, account.account_id, hash, false);
        revoked = revokeSessions(db, account.account_id);
        return {
          status: 200, data: accountView(accountById(db, account.account_id)!),
          audit: { action: "operator_account.password_changed", resourceType: "operator_account", resourceId: account.account_id,
            detail: { sessions_revoked: revoked.length } },
        };
      });
      return { ...reply, indexWrites: revoked.map((keyHash) => ({ op: "remove_credential", keyHash })) };
    },
  }),

  orgRoute({
    method: "POST", path: "/v1/operator-accounts/current/passkeys/options", scope: null, stages: FULL_ONLY, ownAccount: true,
    response: { 200: registrationOptionsResponse },
    summary: "WebAuthn registration options bound to this account, session and purpose (5 minutes, single use).",
    handler: async (rc) => {
      const rp = relyingParty(rc.env);
      const account = currentAccount(rc);
      const options = await registrationOptions(rp, account, activePasskeys(rc.db, account.account_id));
      return commitWrite(rc, (db) => {
        insertChallenge(db, options.challenge, account.account_id, rc.caller.session!.sessionId, "register");
        return { status: 200, data: { options },
          audit: { action: "passkey.registration_started", resourceType: "operator_account", resourceId: account.account_id } };
      });
    },
  }),

  orgRoute({
    method: "POST", path: "/v1/operator-accounts/current/passkeys", scope: null, body: addPasskeyBody, stages: FULL_ONLY, ownAccount: true,
    response: { 201: addedPasskeyResponse },
    summary: "Verify a registration response and add the passkey; the first one returns eight recovery codes once.",
    handler: async (rc) => {
      const rp = relyingParty(rc.env);
      const account = currentAccount(rc);
      const sessionId = rc.caller.session!.sessionId;
      const verified = await verifyRegistration(rp, rc.body.response,
        (challenge) => consumeChallenge(rc.db, challenge, account.account_id, sessionId, "register"));
      if (!verified) throw invalid("The passkey registration could not be verified.");
      return commitWrite(rc, (db) => {
        if (db.first("SELECT 1 FROM passkeys WHERE credential_id = ?", verified.credentialId)) throw conflict("This passkey is already registered.");
        const first = activePasskeys(db, account.account_id).length === 0;
        const row = insertPasskey(db, account.account_id, {
          credentialId: verified.credentialId, publicKey: encodePublicKey(verified.publicKey), counter: verified.counter,
          transports: rc.body.response.response.transports ?? [], name: rc.body.name ?? "Passkey",
        });
        // The first passkey of an account (again after the last was removed) comes with a fresh set of codes.
        const codes = first ? replaceRecoveryCodes(db, account.account_id) : null;
        return {
          status: 201, data: { ...passkeyView(row), ...(codes ? { recovery_codes: codes } : {}) },
          audit: { action: "passkey.added", resourceType: "passkey", resourceId: row.passkey_id,
            detail: { account_id: account.account_id, recovery_codes_issued: !!codes } },
        };
      });
    },
  }),

  orgRoute({
    method: "GET", path: "/v1/operator-accounts/current/passkeys", scope: null, stages: FULL_ONLY, ownAccount: true,
    response: { 200: passkeyListResponse },
    summary: "The account's passkeys, without public keys or counters.",
    handler: (rc) => {
      const account = currentAccount(rc);
      return ok({ passkeys: activePasskeys(rc.db, account.account_id).map(passkeyView) });
    },
  }),

  orgRoute({
    method: "DELETE", path: "/v1/operator-accounts/current/passkeys/:id", scope: null, stages: FULL_ONLY, ownAccount: true,
    response: { 200: revokedPasskeyResponse },
    // Optional as a whole so that a missing body is answered by the schema, naming current_password.
    body: currentPasswordBody, bodyOptional: true,
    summary: "Revoke one passkey (current_password).",
    handler: async (rc) => {
      const account = currentAccount(rc);
      const passkeys = activePasskeys(rc.db, account.account_id);
      const target = passkeys.find((p) => p.passkey_id === rc.params.id);
      if (!target) throw notFound("Passkey");
      const last = passkeys.length === 1;
      await requirePassword(rc, account, rc.body.current_password);
      return commitWrite(rc, (db) => {
        samePassword(db, account);
        revokePasskey(db, target.passkey_id);
        return {
          status: 200, data: { ...passkeyView(target), revoked_at: clock.nowIso() },
          audit: { action: "passkey.removed", resourceType: "passkey", resourceId: target.passkey_id, detail: { account_id: account.account_id, last } },
        };
      });
    },
  }),

  orgRoute({
    method: "POST", path: "/v1/operator-accounts/current/recovery-codes", scope: null, body: currentPasswordBody, stages: FULL_ONLY, ownAccount: true,
    response: { 201: recoveryCodesResponse },
    summary: "Replace all recovery codes (current_password); the new set is returned once.",
    handler: async (rc) => {
      const account = currentAccount(rc);
      await requirePassword(rc, account, rc.body.current_password);
      return commitWrite(rc, (db) => {
        samePassword(db, account);
        const codes = replaceRecoveryCodes(db, account.account_id);
        return { status: 201, data: { recovery_codes: codes },
          audit: { action: "recovery_codes.replaced", resourceType: "operator_account", resourceId: account.account_id } };
      });
    },
  }),

  orgRoute({
    method: "POST", path: "/v1/dashboard-sessions/current/passkey-options", scope: null, stages: STAGED_ONLY, ownAccount: true,
    response: { 200: assertionOptionsResponse },
    summary: "WebAuthn assertion options bound to this staged session (5 minutes, single use).",
    handler: async (rc) => {
      const rp = relyingParty(rc.env);
      const account = currentAccount(rc);
      const passkeys = activePasskeys(rc.db, account.account_id);
      if (!passkeys.length) throw invalid("The account has no passkey; use a recovery code.");
      const options = await authenticationOptions(rp, passkeys);
      return commitWrite(rc, (db) => {
        insertChallenge(db, options.challenge, account.account_id, rc.caller.session!.sessionId, "authenticate");
        return { status: 200, data: { options },
          audit: { action: "passkey.assertion_started", resourceType: "dashboard_session", resourceId: rc.caller.session!.sessionId } };
      });
    },
  }),

  orgRoute({
    method: "POST", path: "/v1/dashboard-sessions/current/passkey", scope: null, body: assertionBody, stages: STAGED_ONLY, ownAccount: true,
    response: { 201: upgradedSessionResponse },
    summary: "Verify a passkey assertion; the staged session is replaced by a full one.",
    handler: async (rc) => {
      const rp = relyingParty(rc.env);
      const account = currentAccount(rc);
      const sessionId = rc.caller.session!.sessionId;
      const passkey = passkeyByCredential(rc.db, account.account_id, rc.body.response.id);
      const verified = passkey && await verifyAssertion(rp, rc.body.response, {
        id: passkey.credential_id, publicKey: decodePublicKey(passkey.public_key), counter: passkey.counter,
        transports: JSON.parse(passkey.transports),
      }, (challenge) => consumeChallenge(rc.db, challenge, account.account_id, sessionId, "authenticate"));
      if (!passkey || !verified) return secondFactorFailed(rc, account, "The passkey assertion could not be verified.");
      return finishLogin(rc, account, "passkey", (db) => {
        if (!usePasskey(db, passkey, verified.newCounter)) throw invalid("The passkey assertion could not be verified.");
        return {};
      });
    },
  }),

  orgRoute({
    method: "POST", path: "/v1/dashboard-sessions/current/recovery-code", scope: null, body: recoveryCodeBody, stages: STAGED_ONLY, ownAccount: true,
    response: { 201: upgradedSessionResponse },
    summary: "Consume one recovery code; the staged session is replaced by a full one. Answers how many codes remain.",
    handler: async (rc) => {
      const account = currentAccount(rc);
      if (!hasUnusedRecoveryCode(rc.db, account.account_id, rc.body.code))
        return secondFactorFailed(rc, account, "The recovery code is not valid.");
      return finishLogin(rc, account, "recovery_code", (db) => {
        if (!useRecoveryCode(db, account.account_id, rc.body.code)) throw invalid("The recovery code is not valid.");
        return { recovery_codes_remaining: unusedRecoveryCodes(db, account.account_id) };
      });
    },
  }),

  orgRoute({
    method: "DELETE", path: "/v1/dashboard-sessions/current", scope: null, stages: ANY_CREDENTIAL, ownAccount: true,
    response: { 200: sessionRevokedResponse },
    summary: "Revoke the calling dashboard session (log out). An API key has no session: 404.",
    handler: (rc) => {
      const session = rc.caller.session;
      if (!session) throw notFound("Dashboard session");
      let revoked: string[] = [];
      const reply = commitWrite(rc, (db) => {
        revoked = revokeSessions(db, session.accountId, session.sessionId);
        return { status: 200, data: { session_id: session.sessionId, revoked_at: clock.nowIso() },
          audit: { action: "dashboard_session.revoked", resourceType: "dashboard_session", resourceId: session.sessionId } };
      });
      return { ...reply, indexWrites: revoked.map((keyHash) => ({ op: "remove_credential", keyHash })) };
    },
  }),
];
