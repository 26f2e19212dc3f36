// Request bodies of the dashboard account and session routes (DESIGN "Dashboard accounts, sessions, passkeys").
import { z } from "zod";
import { nonEmpty } from "../../http/validate";

export const usernameSchema = z.string()
  .regex(/^[a-z0-9][a-z0-9._-]{2,63}$/, "must be 3 to 64 characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit");

const password = (what: string) => z.string({ error: `${what} is required` }).min(1, "must not be empty").max(1024, "must be at most 1024 characters");

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
export const optionalCurrentPasswordBody = z.strictObject({ current_password: password("current_password").optional() });

/** The library's RegistrationResponseJSON / AuthenticationResponseJSON: shape-checked here, verified by @simplewebauthn/server. */
const b64u = z.string().min(1, "must not be empty").max(16_384, "is too long").regex(/^[A-Za-z0-9_-]+={0,2}$/, "must be base64url");
const credentialBase = {
  id: b64u, rawId: b64u, type: z.literal("public-key"),
  clientExtensionResults: z.record(z.string(), z.unknown()).default({}),
  authenticatorAttachment: z.enum(["platform", "cross-platform"]).optional(),
};
export const registrationResponse = z.looseObject({
  ...credentialBase,
  response: z.looseObject({
    clientDataJSON: b64u, attestationObject: b64u,
    transports: z.array(z.string().max(32)).max(10).optional(),
  }),
});
export const authenticationResponse = z.looseObject({
  ...credentialBase,
  response: z.looseObject({ clientDataJSON: b64u, authenticatorData: b64u, signature: b64u, userHandle: z.string().max(1024).optional() }),
});

export const addPasskeyBody = z.strictObject({ response: registrationResponse, name: nonEmpty(100).optional() });
export const assertionBody = z.strictObject({ response: authenticationResponse });
export const recoveryCodeBody = z.strictObject({ code: z.string().min(1, "must not be empty").max(64, "must be at most 64 characters") });

export const loginBody = z.strictObject({
  username: z.string().min(1, "must not be empty").max(256, "must be at most 256 characters"),
  password: password("password"),
});
