// How both exchange routes (pull and push) know that the peer named in the body is calling. Order of
// checks: the peer named by `peer_id` (the only field read before the signature, since it says whose
// secret to use; missing or foreign: 400 UNRESOLVED_REFERENCE), the `x-svc-peer-signature` over the raw
// bytes (constant time; missing or wrong: 403), the peer's status and direction (403), the body schema
// (400), `sent_at` within SENT_AT_WINDOW_MS of this server's clock (403, since the signature covers no
// header). Nothing is served or written before all of them pass.
import type { z } from "zod";
import { clock } from "../../http/clock";
import { forbidden, invalid } from "../../http/errors";
import { parseJson, parseWith } from "../../http/validate";
import type { RequestCtx } from "../../org/request";
import { requireOpenTo } from "./peers";
import { SENT_AT_WINDOW_MS } from "./schema";
import { SIGNATURE_HEADER, verify } from "./signing";
import { type PeerRow, resolvePeer } from "./store";

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);

/** The peer that signed this pull or push, and the body validated against `schema`. */
export function signedExchange<S extends z.ZodType<{ sent_at: string }>>(rc: RequestCtx, operation: "pull" | "push", schema: S):
  { peer: PeerRow; body: z.infer<S> } {
  const raw = rc.rawBody ?? "";
  if (raw.trim() === "") throw invalid("Request body is required and must be a JSON object.");
  const parsed = parseJson(raw);
  if (!parsed.ok) throw invalid("Request body is not valid JSON.");
  const value = parsed.value;
  if (!isObject(value)) throw invalid("Request body is required and must be a JSON object.");
  if (typeof value.peer_id !== "string" || !value.peer_id) throw invalid('Invalid field "peer_id": is required.');
  const peer = resolvePeer(rc.db, value.peer_id);
  if (!verify(peer.shared_secret, raw, rc.headers[SIGNATURE_HEADER]))
    throw forbidden(`The ${SIGNATURE_HEADER} header does not match the body.`);
  requireOpenTo(peer, operation);
  const body = parseWith(schema, value);
  if (Math.abs(Date.parse(body.sent_at) - clock.nowMs()) > SENT_AT_WINDOW_MS)
    throw forbidden("sent_at is more than 300 seconds away from this server's clock.");
  return { peer, body };
}
