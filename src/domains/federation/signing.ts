// Federation signatures: `sha256=` + HMAC-SHA256 hex with the peer's shared secret, over raw bytes
// (pull responses, push bodies) or over a bundle's canonical JSON without its `signature` field.
import { canonical } from "../../org/write";
import { signature } from "../webhooks/delivery";

export const SIGNATURE_HEADER = "x-svc-peer-signature";

export const sign = (secret: string, bytes: string) => signature(secret, bytes);

/** Constant-time comparison of two signature strings (length is not secret: both are sha256=<64 hex>). */
export function sameSignature(given: string | null | undefined, expected: string): boolean {
  if (typeof given !== "string" || given.length !== expected.length) return false;
  let diff = 0;
  for (let i = 0; i < expected.length; i++) diff |= given.charCodeAt(i) ^ expected.charCodeAt(i);
  return diff === 0;
}

export const verify = (secret: string, bytes: string, given: string | null | undefined) =>
  sameSignature(given, sign(secret, bytes));

/** What a bundle's signature covers: the canonical JSON of everything but `signature`. */
export function bundleSigningText(bundle: Record<string, unknown>): string {
  const { signature: _ignored, ...rest } = bundle;
  return canonical(rest);
}

export const signBundle = <B extends Record<string, unknown>>(
  secret: string,
  bundle: B,
): B & { signature: string } => ({ ...bundle, signature: sign(secret, bundleSigningText(bundle)) });
