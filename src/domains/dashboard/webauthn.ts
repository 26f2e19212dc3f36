// WebAuthn through @simplewebauthn/server (pinned; it runs unchanged on workerd). A response names the
// challenge it answers (challengeOf); the routes verify it against that challenge while it is usable and
// consume it in the same transaction that records the outcome, verified or not (single use), so a
// replayed response, one for another session or purpose, or one after expiry fails, and a failed
// verification never leaves the challenge open.
import {
  generateAuthenticationOptions,
  generateRegistrationOptions,
  verifyAuthenticationResponse,
  verifyRegistrationResponse,
  type AuthenticationResponseJSON,
  type RegistrationResponseJSON,
  type WebAuthnCredential,
} from "@simplewebauthn/server";
import { decodeClientDataJSON, isoBase64URL } from "@simplewebauthn/server/helpers";
import { invalid } from "../../http/errors";
import type { EdgeEnv } from "../../env";
import type { AccountRow, PasskeyRow } from "./store";

export interface RelyingParty {
  rpId: string;
  rpName: string;
  origins: string[];
}

/** ES256 and RS256, passed explicitly (DESIGN). */
const ALGORITHMS = [-7, -257];
/** Matches the stored challenge's lifetime. */
const TIMEOUT_MS = 5 * 60_000;

/** The configured relying party; WEBAUTHN_RP_ID="" disables passkey enrollment and assertion (400). */
export function relyingParty(env: EdgeEnv): RelyingParty {
  const rpId = env.WEBAUTHN_RP_ID ?? "localhost";
  if (rpId === "") throw invalid("Passkeys are not configured.");
  const origins = (env.WEBAUTHN_ORIGINS ?? `https://${rpId}`)
    .split(",")
    .map((o) => o.trim())
    .filter(Boolean);
  return { rpId, rpName: env.WEBAUTHN_RP_NAME || "svc-memory", origins };
}

const transportsOf = (p: PasskeyRow) => JSON.parse(p.transports) as string[];

export const registrationOptions = (rp: RelyingParty, account: AccountRow, existing: PasskeyRow[]) =>
  generateRegistrationOptions({
    rpName: rp.rpName,
    rpID: rp.rpId,
    userName: account.username,
    userDisplayName: account.display_name ?? account.username,
    userID: new TextEncoder().encode(account.account_id) as Uint8Array<ArrayBuffer>,
    attestationType: "none",
    timeout: TIMEOUT_MS,
    excludeCredentials: existing.map((p) => ({ id: p.credential_id, transports: transportsOf(p) })),
    authenticatorSelection: { residentKey: "preferred", userVerification: "preferred" },
    supportedAlgorithmIDs: ALGORITHMS,
  });

export const authenticationOptions = (rp: RelyingParty, passkeys: PasskeyRow[]) =>
  generateAuthenticationOptions({
    rpID: rp.rpId,
    timeout: TIMEOUT_MS,
    userVerification: "preferred",
    allowCredentials: passkeys.map((p) => ({ id: p.credential_id, transports: transportsOf(p) })),
  });

/** The challenge a response answers (its clientDataJSON's), or null when it names none. */
export function challengeOf(response: { response: { clientDataJSON: string } }): string | null {
  try {
    const { challenge } = decodeClientDataJSON(response.response.clientDataJSON) as { challenge?: unknown };
    return typeof challenge === "string" ? challenge : null;
  } catch {
    return null;
  }
}

/** A verified registration's credential, or null for anything the library refuses. */
export async function verifyRegistration(rp: RelyingParty, response: unknown, challenge: string) {
  try {
    const r = await verifyRegistrationResponse({
      response: response as RegistrationResponseJSON,
      expectedChallenge: challenge,
      expectedOrigin: rp.origins,
      expectedRPID: rp.rpId,
      requireUserVerification: false,
      supportedAlgorithmIDs: ALGORITHMS,
    });
    if (!r.verified) return null;
    const c = r.registrationInfo.credential;
    return { credentialId: c.id, publicKey: c.publicKey, counter: c.counter };
  } catch {
    return null;
  }
}

/** A verified assertion's new counter, or null (bad signature, counter regression, wrong origin/RP, challenge). */
export async function verifyAssertion(
  rp: RelyingParty,
  response: unknown,
  credential: WebAuthnCredential,
  challenge: string,
) {
  try {
    const r = await verifyAuthenticationResponse({
      response: response as AuthenticationResponseJSON,
      expectedChallenge: challenge,
      expectedOrigin: rp.origins,
      expectedRPID: rp.rpId,
      credential,
      requireUserVerification: false,
    });
    return r.verified ? { newCounter: r.authenticationInfo.newCounter } : null;
  } catch {
    return null;
  }
}

export const encodePublicKey = (key: Uint8Array) => isoBase64URL.fromBuffer(key as Uint8Array<ArrayBuffer>);
export const decodePublicKey = (text: string) => isoBase64URL.toBuffer(text);
