// Passkey routes: enrollment (options, then the verified registration), the list, removal, and the
// second factor of a staged login (options, then the verified assertion). Each challenge is bound to
// the account, session and purpose it was issued for, and is consumed in the transaction that records
// what its verification found, verified or not.
import { clock } from "../../http/clock";
import { type ApiError, conflict, invalid, notFound } from "../../http/errors";
import { ok } from "../../org/request";
import { orgRoute } from "../../org/route";
import { commitWrite } from "../../org/write";
import { FULL_ONLY, STAGED_ONLY, currentAccount, requirePassword, samePassword } from "./current-account";
import {
  addedPasskeyResponse,
  addPasskeyBody,
  assertionBody,
  assertionOptionsResponse,
  currentPasswordBody,
  passkeyListResponse,
  registrationOptionsResponse,
  revokedPasskeyResponse,
  upgradedSessionResponse,
} from "./schema";
import { completeSecondFactor } from "./sessions";
import {
  type ChallengeBinding,
  activePasskeys,
  challengeUsable,
  consumeChallenge,
  insertChallenge,
  insertPasskey,
  passkeyByCredential,
  passkeyRegistered,
  passkeyView,
  replaceRecoveryCodes,
  revokePasskey,
  usePasskey,
} from "./store";
import {
  authenticationOptions,
  challengeOf,
  decodePublicKey,
  encodePublicKey,
  registrationOptions,
  relyingParty,
  verifyAssertion,
  verifyRegistration,
} from "./webauthn";

export const passkeyRoutes = [
  orgRoute({
    method: "POST",
    path: "/v1/operator-accounts/current/passkeys/options",
    scope: null,
    stages: FULL_ONLY,
    ownAccount: true,
    response: { 200: registrationOptionsResponse },
    summary: "WebAuthn registration options bound to this account, session and purpose (5 minutes, single use).",
    operationId: "createPasskeyRegistrationOptions",
    tag: "Dashboard",
    description:
      "Issues WebAuthn registration options bound to this account, session and purpose; single use, valid 5 minutes. " +
      "Needs a full dashboard session.",
    handler: async (rc) => {
      const rp = relyingParty(rc.env);
      const account = currentAccount(rc);
      const options = await registrationOptions(rp, account, activePasskeys(rc.db, account.account_id));
      return commitWrite(rc, (db) => {
        insertChallenge(db, options.challenge, account.account_id, rc.caller.session!.sessionId, "register");
        return {
          status: 200,
          data: { options },
          audit: {
            action: "passkey.registration_started",
            resourceType: "operator_account",
            resourceId: account.account_id,
          },
        };
      });
    },
  }),

  orgRoute({
    method: "POST",
    path: "/v1/operator-accounts/current/passkeys",
    scope: null,
    body: addPasskeyBody,
    stages: FULL_ONLY,
    ownAccount: true,
    response: { 201: addedPasskeyResponse },
    summary: "Verify a registration response and add the passkey; the first one returns eight recovery codes once.",
    operationId: "addPasskey",
    tag: "Dashboard",
    description:
      "Verifies a WebAuthn registration response and adds the passkey. The first passkey also returns eight recovery " +
      "codes, once.",
    handler: async (rc) => {
      const rp = relyingParty(rc.env);
      const account = currentAccount(rc);
      const binding: ChallengeBinding = {
        accountId: account.account_id,
        sessionId: rc.caller.session!.sessionId,
        purpose: "register",
      };
      const challenge = challengeOf(rc.body.response);
      const verified =
        challenge !== null && challengeUsable(rc.db, challenge, binding)
          ? await verifyRegistration(rp, rc.body.response, challenge)
          : null;
      const failed = (refused: ApiError) => ({
        refused,
        audit: {
          action: "passkey.registration_failed",
          resourceType: "operator_account",
          resourceId: account.account_id,
        },
      });
      return commitWrite(rc, (db) => {
        // Single use: spent whatever the verification found (a concurrent answer may have spent it first).
        const consumed = challenge !== null && consumeChallenge(db, challenge, binding);
        if (!consumed || !verified) return failed(invalid("The passkey registration could not be verified."));
        if (passkeyRegistered(db, verified.credentialId))
          return failed(conflict("This passkey is already registered."));
        const first = activePasskeys(db, account.account_id).length === 0;
        const row = insertPasskey(db, account.account_id, {
          credentialId: verified.credentialId,
          publicKey: encodePublicKey(verified.publicKey),
          counter: verified.counter,
          transports: rc.body.response.response.transports ?? [],
          name: rc.body.name ?? "Passkey",
        });
        // The first passkey of an account (again after the last was removed) comes with a fresh set of codes.
        const codes = first ? replaceRecoveryCodes(db, account.account_id) : null;
        return {
          status: 201,
          data: { ...passkeyView(row), ...(codes ? { recovery_codes: codes } : {}) },
          audit: {
            action: "passkey.added",
            resourceType: "passkey",
            resourceId: row.passkey_id,
            detail: { account_id: account.account_id, recovery_codes_issued: !!codes },
          },
        };
      });
    },
  }),

  orgRoute({
    method: "GET",
    path: "/v1/operator-accounts/current/passkeys",
    scope: null,
    stages: FULL_ONLY,
    ownAccount: true,
    response: { 200: passkeyListResponse },
    summary: "The account's passkeys, without public keys or counters.",
    operationId: "listPasskeys",
    tag: "Dashboard",
    description: "Lists the account's passkeys without public keys or signature counters.",
    handler: (rc) => {
      const account = currentAccount(rc);
      return ok({ passkeys: activePasskeys(rc.db, account.account_id).map(passkeyView) });
    },
  }),

  orgRoute({
    method: "DELETE",
    path: "/v1/operator-accounts/current/passkeys/:id",
    scope: null,
    stages: FULL_ONLY,
    ownAccount: true,
    response: { 200: revokedPasskeyResponse },
    // Optional as a whole so that a missing body is answered by the schema, naming current_password.
    body: currentPasswordBody,
    bodyOptional: true,
    summary: "Revoke one passkey (current_password).",
    operationId: "revokePasskey",
    tag: "Dashboard",
    description: "Revokes one passkey of the account; the body repeats `current_password`.",
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
          status: 200,
          data: { ...passkeyView(target), revoked_at: clock.nowIso() },
          audit: {
            action: "passkey.removed",
            resourceType: "passkey",
            resourceId: target.passkey_id,
            detail: { account_id: account.account_id, last },
          },
        };
      });
    },
  }),
];

/** The passkey as a staged login's second factor. */
export const passkeyLoginRoutes = [
  orgRoute({
    method: "POST",
    path: "/v1/dashboard-sessions/current/passkey-options",
    scope: null,
    stages: STAGED_ONLY,
    ownAccount: true,
    response: { 200: assertionOptionsResponse },
    summary: "WebAuthn assertion options bound to this staged session (5 minutes, single use).",
    operationId: "createPasskeyAssertionOptions",
    tag: "Dashboard",
    description: "Issues WebAuthn assertion options bound to the calling staged session; single use, valid 5 minutes.",
    handler: async (rc) => {
      const rp = relyingParty(rc.env);
      const account = currentAccount(rc);
      const passkeys = activePasskeys(rc.db, account.account_id);
      if (!passkeys.length) throw invalid("The account has no passkey; use a recovery code.");
      const options = await authenticationOptions(rp, passkeys);
      return commitWrite(rc, (db) => {
        insertChallenge(db, options.challenge, account.account_id, rc.caller.session!.sessionId, "authenticate");
        return {
          status: 200,
          data: { options },
          audit: {
            action: "passkey.assertion_started",
            resourceType: "dashboard_session",
            resourceId: rc.caller.session!.sessionId,
          },
        };
      });
    },
  }),

  orgRoute({
    method: "POST",
    path: "/v1/dashboard-sessions/current/passkey",
    scope: null,
    body: assertionBody,
    stages: STAGED_ONLY,
    ownAccount: true,
    response: { 201: upgradedSessionResponse },
    summary: "Verify a passkey assertion; the staged session is replaced by a full one.",
    operationId: "verifyPasskeyAssertion",
    tag: "Dashboard",
    description: "Verifies a passkey assertion for a staged session and replaces it with a full session.",
    handler: async (rc) => {
      const rp = relyingParty(rc.env);
      const account = currentAccount(rc);
      const binding: ChallengeBinding = {
        accountId: account.account_id,
        sessionId: rc.caller.session!.sessionId,
        purpose: "authenticate",
      };
      const challenge = challengeOf(rc.body.response);
      const passkey = passkeyByCredential(rc.db, account.account_id, rc.body.response.id);
      const verified =
        passkey && challenge !== null && challengeUsable(rc.db, challenge, binding)
          ? await verifyAssertion(
              rp,
              rc.body.response,
              {
                id: passkey.credential_id,
                publicKey: decodePublicKey(passkey.public_key),
                counter: passkey.counter,
                transports: JSON.parse(passkey.transports),
              },
              challenge,
            )
          : null;
      return completeSecondFactor(
        rc,
        account,
        "passkey",
        (db) => {
          // Single use: spent whatever the verification found, an unknown credential's answer included.
          const consumed = challenge !== null && consumeChallenge(db, challenge, binding);
          // usePasskey is false when another assertion moved the counter meanwhile.
          return consumed && passkey && verified && usePasskey(db, passkey, verified.newCounter) ? {} : null;
        },
        "The passkey assertion could not be verified.",
      );
    },
  }),
];
