// The browser side of passkeys: the API speaks the WebAuthn JSON forms (@simplewebauthn/server),
// navigator.credentials speaks ArrayBuffers. These convert both ways.
const toBuffer = (b64url: string): ArrayBuffer => {
  const b64 = b64url
    .replace(/-/g, "+")
    .replace(/_/g, "/")
    .padEnd(Math.ceil(b64url.length / 4) * 4, "=");
  const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  return bytes.buffer;
};
const toB64url = (buf: ArrayBuffer | null): string | undefined => {
  if (!buf) return undefined;
  let s = "";
  for (const b of new Uint8Array(buf)) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
};
/**
 * Why passkeys cannot work at this address, or null. A passkey is bound to a host name and an IP address
 * (127.0.0.1, where a server often is first opened) can never be one; the browser's own refusal ("This
 * is an invalid domain.") does not say what to do.
 */
export function passkeyAddressProblem(
  where: Pick<Location, "hostname" | "port" | "pathname"> = location,
): string | null {
  const ip = /^[0-9.]+$/.test(where.hostname) || where.hostname.startsWith("[");
  if (!ip) return null;
  return (
    `Passkeys need a host name, and ${where.hostname} is an IP address: open the console at ` +
    `http://localhost${where.port ? `:${where.port}` : ""}${where.pathname} to enroll or use a passkey.`
  );
}

function requireHostName(): void {
  const problem = passkeyAddressProblem();
  if (problem) throw new Error(problem);
}

const descriptors = (list: any[] | undefined) => list?.map((c) => ({ ...c, id: toBuffer(c.id) }));

export async function createPasskey(options: any): Promise<unknown> {
  requireHostName();
  const publicKey: PublicKeyCredentialCreationOptions = {
    ...options,
    challenge: toBuffer(options.challenge),
    user: { ...options.user, id: toBuffer(options.user.id) },
    excludeCredentials: descriptors(options.excludeCredentials),
  };
  const cred = (await navigator.credentials.create({ publicKey })) as PublicKeyCredential | null;
  if (!cred) throw new Error("No passkey was created.");
  const r = cred.response as AuthenticatorAttestationResponse;
  return {
    id: cred.id,
    rawId: toB64url(cred.rawId),
    type: cred.type,
    clientExtensionResults: cred.getClientExtensionResults(),
    authenticatorAttachment: cred.authenticatorAttachment ?? undefined,
    response: {
      clientDataJSON: toB64url(r.clientDataJSON),
      attestationObject: toB64url(r.attestationObject),
      transports: r.getTransports?.() ?? [],
    },
  };
}

export async function usePasskey(options: any): Promise<unknown> {
  requireHostName();
  const publicKey: PublicKeyCredentialRequestOptions = {
    ...options,
    challenge: toBuffer(options.challenge),
    allowCredentials: descriptors(options.allowCredentials),
  };
  const cred = (await navigator.credentials.get({ publicKey })) as PublicKeyCredential | null;
  if (!cred) throw new Error("No passkey was used.");
  const r = cred.response as AuthenticatorAssertionResponse;
  return {
    id: cred.id,
    rawId: toB64url(cred.rawId),
    type: cred.type,
    clientExtensionResults: cred.getClientExtensionResults(),
    authenticatorAttachment: cred.authenticatorAttachment ?? undefined,
    response: {
      clientDataJSON: toB64url(r.clientDataJSON),
      authenticatorData: toB64url(r.authenticatorData),
      signature: toB64url(r.signature),
      userHandle: toB64url(r.userHandle),
    },
  };
}
