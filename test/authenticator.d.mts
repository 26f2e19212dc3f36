// Types of test/authenticator.mjs (a software WebAuthn authenticator on WebCrypto).
export type Attestation = "none" | "packed";

export interface RegistrationResponse {
  id: string;
  rawId: string;
  type: "public-key";
  clientExtensionResults: Record<string, never>;
  authenticatorAttachment: "platform";
  response: { clientDataJSON: string; attestationObject: string; transports: string[] };
}
export interface AuthenticationResponse {
  id: string;
  rawId: string;
  type: "public-key";
  clientExtensionResults: Record<string, never>;
  authenticatorAttachment: "platform";
  response: { clientDataJSON: string; authenticatorData: string; signature: string };
}

export class SoftAuthenticator {
  constructor(origin?: string, rpId?: string);
  /** What goes into the signed client data and authenticator data. */
  origin: string;
  rpId: string;
  readonly credId: Uint8Array;
  /** The signature counter; the next signature carries counter + 1. */
  counter: number;
  create(options: { challenge: string }, fmt?: Attestation): Promise<RegistrationResponse>;
  get(options: { challenge: string }): Promise<AuthenticationResponse>;
}
