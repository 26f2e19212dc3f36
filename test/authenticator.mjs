// A software WebAuthn authenticator (plain JS so `npm run bench` can drive it from Node too; types in
// authenticator.d.mts) on WebCrypto alone (ES256/P-256; "none" or "packed" self
// attestation), so tests can enroll and assert passkeys without a browser. Knobs let a test sign for
// another origin or RP ID, or roll its signature counter back.
const te = new TextEncoder();

const b64u = (bytes) => {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
};
const fromB64u = (text) => Uint8Array.from(atob(text.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
const concat = (...parts) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let i = 0;
  for (const p of parts) {
    out.set(p, i);
    i += p.length;
  }
  return out;
};
const sha256 = async (b) => new Uint8Array(await crypto.subtle.digest("SHA-256", b));

// Minimal CBOR: integers, byte and text strings, maps.
const head = (major, n) =>
  n < 24
    ? Uint8Array.of((major << 5) | n)
    : n < 256
      ? Uint8Array.of((major << 5) | 24, n)
      : Uint8Array.of((major << 5) | 25, n >> 8, n & 255);
function cbor(v) {
  if (typeof v === "number") return v >= 0 ? head(0, v) : head(1, -1 - v);
  if (typeof v === "string") {
    const b = te.encode(v);
    return concat(head(3, b.length), b);
  }
  if (v instanceof Uint8Array) return concat(head(2, v.length), v);
  const parts = [head(5, v.size)];
  for (const [key, val] of v) parts.push(cbor(key), cbor(val));
  return concat(...parts);
}

// WebCrypto signs ECDSA as raw r||s; WebAuthn carries DER.
const derInt = (x) => {
  let i = 0;
  while (i < x.length - 1 && x[i] === 0) i++;
  let v = x.slice(i);
  if (v[0] & 0x80) v = concat(Uint8Array.of(0), v);
  return concat(Uint8Array.of(2, v.length), v);
};
const rawToDer = (sig) => {
  const r = derInt(sig.slice(0, 32));
  const s = derInt(sig.slice(32));
  return concat(Uint8Array.of(0x30, r.length + s.length), r, s);
};

export class SoftAuthenticator {
  /** origin and rpId are what the authenticator (and the "browser") put into what it signs. */
  constructor(origin = "http://localhost:8787", rpId = "localhost") {
    this.origin = origin;
    this.rpId = rpId;
    this.credId = crypto.getRandomValues(new Uint8Array(16));
    this.counter = 0;
    this.keys = undefined;
  }

  async authData(attested) {
    const flags = 0x01 | 0x04 | (attested ? 0x40 : 0); // user present, user verified, attested credential data
    const c = ++this.counter;
    return concat(
      await sha256(te.encode(this.rpId)),
      Uint8Array.of(flags, (c >>> 24) & 255, (c >> 16) & 255, (c >> 8) & 255, c & 255),
      attested ?? new Uint8Array(),
    );
  }

  async sign(data) {
    return rawToDer(
      new Uint8Array(await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, this.keys.privateKey, data)),
    );
  }

  clientData(type, challenge) {
    return te.encode(JSON.stringify({ type, challenge, origin: this.origin, crossOrigin: false }));
  }

  /** A RegistrationResponseJSON answering `options` (PublicKeyCredentialCreationOptionsJSON). */
  async create(options, fmt = "none") {
    this.keys = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"]);
    const jwk = await crypto.subtle.exportKey("jwk", this.keys.publicKey);
    const cose = cbor(
      new Map([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, fromB64u(jwk.x)],
        [-3, fromB64u(jwk.y)],
      ]),
    );
    const attested = concat(new Uint8Array(16), Uint8Array.of(0, this.credId.length), this.credId, cose);
    const authData = await this.authData(attested);
    const clientDataJSON = this.clientData("webauthn.create", options.challenge);
    const attStmt =
      fmt === "packed"
        ? new Map([
            ["alg", -7],
            ["sig", await this.sign(concat(authData, await sha256(clientDataJSON)))],
          ])
        : new Map();
    const attestationObject = cbor(
      new Map([
        ["fmt", fmt],
        ["attStmt", attStmt],
        ["authData", authData],
      ]),
    );
    return {
      id: b64u(this.credId),
      rawId: b64u(this.credId),
      type: "public-key",
      clientExtensionResults: {},
      authenticatorAttachment: "platform",
      response: {
        clientDataJSON: b64u(clientDataJSON),
        attestationObject: b64u(attestationObject),
        transports: ["internal"],
      },
    };
  }

  /** An AuthenticationResponseJSON answering `options` (PublicKeyCredentialRequestOptionsJSON). */
  async get(options) {
    const authData = await this.authData();
    const clientDataJSON = this.clientData("webauthn.get", options.challenge);
    const signature = await this.sign(concat(authData, await sha256(clientDataJSON)));
    return {
      id: b64u(this.credId),
      rawId: b64u(this.credId),
      type: "public-key",
      clientExtensionResults: {},
      authenticatorAttachment: "platform",
      response: { clientDataJSON: b64u(clientDataJSON), authenticatorData: b64u(authData), signature: b64u(signature) },
    };
  }
}
