// How both exchange routes (pull and push) know that the peer named in the body is calling. Order of
// checks: the peer named by `peer_id` (the only field read before the signature, since it says whose
// secret to use; missing or foreign: 400 UNRESOLVED_REFERENCE), the `x-svc-peer-signature` over the raw
// bytes (constant time; missing or wrong: 403), the peer's status and direction (403), the body schema
// (400), `sent_at` within SENT_AT_WINDOW_MS of this server's clock (403, since the signature covers no
// header). Nothing is served or written before all of them pass.
// One exception, for pull only: an owner or admin whose credential holds "*" administers every peer
// (creates it, sets its filters, suspends it) and may pull without a signature, reading a peer's feed as
// that peer receives it. Keys handed to another deployment name `federation:write` and must sign, so a
// key given to one peer cannot pull as another. Such a pull says `signed: false` in its audit row and
// its exchange log entry, so it is never mistaken for the peer's own.
import type { z } from "zod";
import { clock } from "../../http/clock";
import { forbidden, invalid } from "../../http/errors";
import { parseJson, parseWith } from "../../http/validate";
import type { Caller, RequestCtx } from "../../org/request";
import { isAdmin } from "../../access/policy";
import { ALL_SCOPES } from "../../auth/scopes";
import { requireOpenTo } from "./peers";
import { SENT_AT_WINDOW_MS } from "./schema";
import { SIGNATURE_HEADER, verify } from "./signing";
import { type PeerRow, resolvePeer } from "./store";

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);

/** May pull unsigned: an owner or admin credential holding "*" (see the header). */
export const administersPeers = (caller: Pick<Caller, "role" | "scopes">) =>
  isAdmin(caller) && caller.scopes.includes(ALL_SCOPES);

/**
 * The peer that signed this pull or push, and the body validated against `schema`. With
 * `unsignedFromAdministrator` (pull), a request carrying no signature header from a caller that
 * administersPeers skips the signature and `sent_at` checks (`signed: false`); any other request is
 * checked in full.
 */
export function signedExchange<S extends z.ZodType<{ sent_at?: string }>>(
  rc: RequestCtx,
  operation: "pull" | "push",
  schema: S,
  opts: { unsignedFromAdministrator?: boolean } = {},
): { peer: PeerRow; body: z.infer<S>; signed: boolean } {
  const raw = rc.rawBody ?? "";
  if (raw.trim() === "") throw invalid("Request body is required and must be a JSON object.");
  const parsed = parseJson(raw);
  if (!parsed.ok) throw invalid("Request body is not valid JSON.");
  const value = parsed.value;
  if (!isObject(value)) throw invalid("Request body is required and must be a JSON object.");
  if (typeof value.peer_id !== "string" || !value.peer_id) throw invalid('Invalid field "peer_id": is required.');
  const peer = resolvePeer(rc.db, value.peer_id);
  const unsigned =
    opts.unsignedFromAdministrator === true &&
    rc.headers[SIGNATURE_HEADER] === undefined &&
    administersPeers(rc.caller);
  if (!unsigned && !verify(peer.shared_secret, raw, rc.headers[SIGNATURE_HEADER]))
    throw forbidden(`The ${SIGNATURE_HEADER} header does not match the body.`);
  requireOpenTo(peer, operation);
  const body = parseWith(schema, value);
  if (!unsigned) {
    if (body.sent_at === undefined) throw invalid('Invalid field "sent_at": is required.');
    if (Math.abs(Date.parse(body.sent_at) - clock.nowMs()) > SENT_AT_WINDOW_MS)
      throw forbidden("sent_at is more than 300 seconds away from this server's clock.");
  }
  return { peer, body, signed: !unsigned };
}
