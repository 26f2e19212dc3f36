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
  /** Live workspace memberships: workspace id -> role, loaded with the key on every request. */
  workspaces: Record<string, Role>;
  /** Set when the credential is a dashboard session (keyId is then its session_id). */
  session?: { sessionId: string; accountId: string; stage: import("../domains/dashboard/stages").SessionStage };
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
  /** Whether the route honours Idempotency-Key (its `idempotent` flag): commitWrite reads this. */
  idempotent: boolean;
  /** What the org Durable Object was built with (outbound sender, purge guards). */
  deps: OrgDeps;
  /**
   * Makes the named background job (src/jobs.ts) due at `dueAtMs`, stored in the current transaction,
   * and arms the alarm no later than `armAtMs` (default: the due time; later batches work).
   */
  jobDue(job: string, dueAtMs: number, armAtMs?: number): void;
  /** Told by commitWrite that events were committed (jobs such as webhook delivery may become due). */
  eventsWritten(): void;
  /**
   * Told by commitWrite which record ids its transaction created, and which of them it queued for the
   * ownership registry (those not reserved ahead of use): the org Durable Object registers exactly those
   * before it answers, and tops up the reserve of the prefixes used (OrgStore.dispatch).
   */
  recordsCreated(created: string[], toRegister: string[]): void;
}

/** A veto on purging an observation (e.g. an active legal hold): a message blocks it with 409 CONFLICT. */
export type PurgeGuard = (db: Db, observationId: string) => string | null;

/** Dependencies of the org Durable Object, passed in rather than patched into modules (see src/deps.ts). */
export interface OrgDeps {
  /** The outbound webhook call. */
  sendWebhook: import("../domains/webhooks/delivery").Sender;
  /** Waits between a delivery's attempts, in ms (WEBHOOK_RETRY_SCHEDULE, or SPEC's). */
  webhookRetrySchedule: readonly number[];
  /** The deliveries this object is sending now (one per object: never reclaimed while held). */
  webhookDeliveries: import("../domains/webhooks/delivery").DeliveriesInFlight;
  /** Consulted by every observation purge, in order. */
  purgeGuards: readonly PurgeGuard[];
  /** The record-ownership registry (src/registry): import claims ids in it, writes register theirs. */
  registry: import("../registry/client").OwnershipRegistry;
  /** The model configuration snapshot and the bindings its backends use (src/vector/runtime.ts). */
  models: import("../vector/runtime").ModelDeps;
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
  | { op: "add_credential"; keyHash: string; keyId: string; kind?: "api_key" | "dashboard_session" }
  | { op: "remove_credential"; keyHash: string };

export const ok = (data: unknown, meta?: Record<string, unknown>): Reply => ({ status: 200, data, meta });
export const created = (data: unknown, meta?: Record<string, unknown>): Reply => ({ status: 201, data, meta });
