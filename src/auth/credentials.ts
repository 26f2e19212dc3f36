// Bearer credentials: `svc_sk_` + 64 hex. Only the SHA-256 of a key is ever stored.
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";
import { randomHex } from "../http/ids";

export const KEY_PREFIX = "svc_sk_";

export const newRawKey = () => KEY_PREFIX + randomHex(32);

export const sha256Hex = (text: string): string => bytesToHex(sha256(utf8ToBytes(text)));

export const hashKey = (raw: string) => sha256Hex(raw);

/** The bearer token from an Authorization header, or null when missing, non-Bearer or wrongly prefixed. */
export function bearerToken(header: string | null): string | null {
  if (!header) return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) return null;
  const token = match[1];
  return token.startsWith(KEY_PREFIX) && token.length > KEY_PREFIX.length ? token : null;
}
