// Request bodies of the dashboard account and session routes (DESIGN "Dashboard accounts, sessions, passkeys").
import { z } from "zod";
import { ID_PREFIX } from "../../http/ids";
import { count, idOf, principalId, timestamp } from "../../http/shapes";
import { nonEmpty } from "../../http/validate";

export const usernameSchema = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9._-]{2,63}$/,
    "must be 3 to 64 characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit",
  );

const password = (what: string) =>
  z
    .string({ error: `${what} is required` })
    .min(1, "must not be empty")
    .max(1024, "must be at most 1024 characters");

export const createAccountBody = z.strictObject({
  username: usernameSchema,
  role: z.enum(["owner", "admin", "member", "reader"]),
  display_name: nonEmpty(200).optional(),
});

export const changePasswordBody = z.strictObject({
  current_password: password("current_password"),
  new_password: z.string().min(12, "must be at least 12 characters").max(256, "must be at most 256 characters"),
});

export const currentPasswordBody = z.strictObject({ current_password: password("current_password") });

/** The library's RegistrationResponseJSON / AuthenticationResponseJSON: shape-checked here, verified by @simplewebauthn/server. */
const b64u = z
  .string()
  .min(1, "must not be empty")
  .max(16_384, "is too long")
  .regex(/^[A-Za-z0-9_-]+={0,2}$/, "must be base64url");
const credentialBase = {
  id: b64u,
  rawId: b64u,
  type: z.literal("public-key"),
  clientExtensionResults: z.record(z.string(), z.unknown()).default({}),
  authenticatorAttachment: z.enum(["platform", "cross-platform"]).optional(),
};
export const registrationResponse = z.looseObject({
  ...credentialBase,
  response: z.looseObject({
    clientDataJSON: b64u,
    attestationObject: b64u,
    transports: z.array(z.string().max(32)).max(10).optional(),
  }),
});
export const authenticationResponse = z.looseObject({
  ...credentialBase,
  response: z.looseObject({
    clientDataJSON: b64u,
    authenticatorData: b64u,
    signature: b64u,
    userHandle: z.string().max(1024).optional(),
  }),
});

export const addPasskeyBody = z.strictObject({ response: registrationResponse, name: nonEmpty(100).optional() });
export const assertionBody = z.strictObject({ response: authenticationResponse });
export const recoveryCodeBody = z.strictObject({
  code: z.string().min(1, "must not be empty").max(64, "must be at most 64 characters"),
});

export const loginBody = z.strictObject({
  username: z.string().min(1, "must not be empty").max(256, "must be at most 256 characters"),
  password: password("password"),
});

// Response schemas (published in docs/openapi.json; checked against every answer of the test suite).
const accountId = idOf(ID_PREFIX.account);
const sessionId = idOf(ID_PREFIX.session);
const recoveryCodes = z.array(z.string()).length(8).describe("Shown once");

export const sessionResponse = z
  .strictObject({
    session_token: z.string().describe("The bearer credential: shown once"),
    session_id: sessionId,
    stage: z.enum(["password_change", "staged", "full"]),
    expires_at: timestamp,
    account_id: accountId,
  })
  .meta({ id: "DashboardSession" });
export const upgradedSessionResponse = sessionResponse
  .extend({ recovery_codes_remaining: count.optional() })
  .meta({ id: "UpgradedDashboardSession" });
export const sessionRevokedResponse = z
  .strictObject({ session_id: sessionId, revoked_at: timestamp })
  .meta({ id: "RevokedDashboardSession" });

export const accountResponse = z
  .strictObject({
    account_id: accountId,
    principal_id: principalId,
    username: z.string(),
    display_name: z.string(),
    role: z.enum(["owner", "admin", "member", "reader"]),
    has_passkey: z.boolean(),
    created_at: timestamp,
    password_changed_at: timestamp.nullable(),
  })
  .meta({ id: "OperatorAccount" });
export const createdAccountResponse = accountResponse
  .extend({ temporary_password: z.string().describe("Shown once; the first login must replace it") })
  .meta({ id: "CreatedOperatorAccount" });

export const passkeyResponse = z
  .strictObject({
    passkey_id: idOf(ID_PREFIX.passkey),
    name: z.string(),
    created_at: timestamp,
    last_used_at: timestamp.nullable(),
    transports: z.array(z.string()),
  })
  .meta({ id: "Passkey" });
export const addedPasskeyResponse = passkeyResponse
  .extend({ recovery_codes: recoveryCodes.optional().describe("On the first enrollment only; shown once") })
  .meta({ id: "AddedPasskey" });
export const revokedPasskeyResponse = passkeyResponse.extend({ revoked_at: timestamp }).meta({ id: "RevokedPasskey" });
export const passkeyListResponse = z.strictObject({ passkeys: z.array(passkeyResponse) }).meta({ id: "PasskeyList" });
export const recoveryCodesResponse = z.strictObject({ recovery_codes: recoveryCodes }).meta({ id: "RecoveryCodes" });

// WebAuthn options (W3C PublicKeyCredential*OptionsJSON, produced by @simplewebauthn/server): the
// fields a browser needs are required; the standard's optional members pass through.
const credentialDescriptor = z.looseObject({ id: b64u, type: z.literal("public-key") });
export const registrationOptionsResponse = z
  .strictObject({
    options: z.looseObject({
      challenge: b64u,
      rp: z.looseObject({ name: z.string() }),
      user: z.looseObject({ id: b64u, name: z.string(), displayName: z.string() }),
      pubKeyCredParams: z.array(z.looseObject({ type: z.literal("public-key"), alg: z.number().int() })),
      excludeCredentials: z.array(credentialDescriptor).optional(),
    }),
  })
  .meta({ id: "PasskeyRegistrationOptions" });
export const assertionOptionsResponse = z
  .strictObject({
    options: z.looseObject({ challenge: b64u, allowCredentials: z.array(credentialDescriptor).optional() }),
  })
  .meta({ id: "PasskeyAssertionOptions" });
