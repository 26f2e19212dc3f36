// Operator account passwords. PBKDF2-SHA256 through WebCrypto over an HMAC-SHA256 of the password with
// the PASSWORD_PEPPER secret, stored self-describing: pbkdf2-sha256$<iterations>$<salt hex>$<hash hex>.
// 100,000 iterations is the most production Workers accept (local workerd accepts more: a unit test
// pins the constant). Pure-JS scrypt/argon2 would cost 0.1-0.5 s CPU per login on a public route.
import { ApiError } from "../../http/errors";
import { randomHex } from "../../http/ids";

export const PBKDF2_ITERATIONS = 100_000;
const SCHEME = "pbkdf2-sha256";

const enc = new TextEncoder();
const hexToBytes = (hex: string) => Uint8Array.from(hex.match(/../g) ?? [], (h) => parseInt(h, 16));
const bytesToHex = (b: ArrayBuffer | Uint8Array) =>
  [...new Uint8Array(b)].map((x) => x.toString(16).padStart(2, "0")).join("");

/** The pepper secret; without one no password can be hashed or verified. */
export function pepperOf(env: { PASSWORD_PEPPER?: string }): string {
  const pepper = env.PASSWORD_PEPPER;
  if (!pepper) throw new ApiError("UNAVAILABLE", "Password login is not configured.");
  return pepper;
}

async function pbkdf2(input: Uint8Array, saltHex: string, iterations: number): Promise<string> {
  const key = await crypto.subtle.importKey("raw", input, "PBKDF2", false, ["deriveBits"]);
  const bits = await crypto.subtle.deriveBits(
    { name: "PBKDF2", hash: "SHA-256", salt: hexToBytes(saltHex), iterations },
    key,
    256,
  );
  return bytesToHex(bits);
}

async function peppered(password: string, pepper: string): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey("raw", enc.encode(pepper), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, enc.encode(password)));
}

/** The stored form of a new password. */
export async function hashPassword(password: string, pepper: string, saltHex = randomHex(16)): Promise<string> {
  return `${SCHEME}$${PBKDF2_ITERATIONS}$${saltHex}$${await pbkdf2(await peppered(password, pepper), saltHex, PBKDF2_ITERATIONS)}`;
}

/** Compares every character whatever differs first. */
export function constantTimeEqual(a: string, b: string): boolean {
  let diff = a.length ^ b.length;
  for (let i = 0; i < Math.max(a.length, b.length); i++) diff |= (a.charCodeAt(i) | 0) ^ (b.charCodeAt(i) | 0);
  return diff === 0;
}

export interface StoredPassword {
  password_hash: string;
  /** Only for rows written before the self-describing form (bare hex hash, no pepper). */
  password_salt: string;
}

/** Whether `password` matches; `upgrade` says the stored form is not the current one and should be rewritten. */
export async function verifyPassword(
  password: string,
  stored: StoredPassword,
  pepper: string,
): Promise<{ ok: boolean; upgrade: boolean }> {
  const parts = stored.password_hash.split("$");
  if (parts.length === 4 && parts[0] === SCHEME) {
    const iterations = Number(parts[1]);
    const hash = await pbkdf2(await peppered(password, pepper), parts[2], iterations);
    return { ok: constantTimeEqual(hash, parts[3]), upgrade: iterations !== PBKDF2_ITERATIONS };
  }
  // Legacy bootstrap form: PBKDF2 of the bare password with the separate salt column.
  const hash = await pbkdf2(enc.encode(password), stored.password_salt, PBKDF2_ITERATIONS);
  return { ok: constantTimeEqual(hash, stored.password_hash), upgrade: true };
}

/**
 * Verified against for unknown usernames, so they cost exactly the work of a wrong password. No
 * password derives to an all-zero hash in practice.
 */
export const DUMMY_HASH: StoredPassword = {
  password_hash: `${SCHEME}$${PBKDF2_ITERATIONS}$${"5a".repeat(16)}$${"0".repeat(64)}`,
  password_salt: "",
};

/** 24 characters from an unambiguous alphabet: shown once, must be replaced at first login. */
export function temporaryPassword(): string {
  const alphabet = "abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
  // 55 symbols: rejection sampling keeps every symbol equally likely.
  const out: string[] = [];
  while (out.length < 24) {
    for (const b of crypto.getRandomValues(new Uint8Array(32)))
      if (b < 220 && out.length < 24) out.push(alphabet[b % 55]);
  }
  return out.join("");
}
