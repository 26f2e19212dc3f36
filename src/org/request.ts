// What a handler running inside the org Durable Object sees, and what it returns.
import type { Role } from "../auth/roles";
import type { Trust } from "../auth/trust";
import type { Db } from "./db";

export interface Caller {
  principalId: string;
  keyId: string;
  scopes: string[];
  maxTrust: Trust;
  role: Role;
  /** Active grants held by the principal, loaded with the key on every request. */
  grants: import("../access/policy").HeldGrant[];
}

export interface RequestCtx<B = unknown, Q = unknown> {
  orgId: string;
  db: Db;
  storage: DurableObjectStorage;
  caller: Caller;
  requestId: string;
  routeId: string;
  params: Record<string, string>;
  query: Q;
  body: B;
  /** The unparsed body, for routes declared with rawBody. */
  rawBody: string | null;
  idempotencyKey: string | null;
  env: import("../http/route").EdgeEnv;
  /** Selected request headers, lower-case names (see DispatchInput.headers). */
  headers: Record<string, string>;
  /** Schedules the org's alarm no later than `atMs` (coordination expiry, background work). */
  scheduleAlarm(atMs: number): void;
  /** Told by commitWrite that events were committed (background delivery may want to run). */
  eventsWritten(): void;
}

export interface Reply {
  status: number;
  data: unknown;
  meta?: Record<string, unknown>;
  /** For NDJSON routes: the lines to stream instead of an envelope. */
  ndjson?: string[];
  /** For NDJSON routes that stream: the body, produced as the client reads it. */
  stream?: ReadableStream<Uint8Array>;
  /**
   * Changes to the global D1 index, applied by the Durable Object after its own transaction commits
   * (the DO row first, D1 second: a key the index does not know yet can never authenticate).
   */
  indexWrites?: IndexWrite[];
  /** A bare (non-envelope) JSON response, e.g. JSON-RPC for /mcp; body undefined means an empty body. */
  bare?: { body: unknown };
  /**
   * The envelope already serialized by the handler (envelopeText), sent byte for byte with extra
   * response headers computed over exactly those bytes (e.g. a signature of the raw body).
   */
  exact?: { text: string; headers: Record<string, string> };
}

export type IndexWrite =
  | { op: "add_credential"; keyHash: string; keyId: string }
  | { op: "remove_credential"; keyHash: string };

export const ok = (data: unknown, meta?: Record<string, unknown>): Reply => ({ status: 200, data, meta });
export const created = (data: unknown, meta?: Record<string, unknown>): Reply => ({ status: 201, data, meta });
