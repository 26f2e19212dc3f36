// What a handler running inside the org Durable Object sees, and what it returns.
import type { Caller } from "../access/caller";
import type { Answer, EdgeEnv } from "../env";
import type { OwnershipRegistry } from "../registry/client";
import type { Db } from "../sql/db";
import type { ModelDeps } from "../vector/runtime";

/** The caller a handler sees (rc.caller); defined with the authorization rules that read it. */
export type { Caller };

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
  env: EdgeEnv;
  /** Selected request headers, lower-case names (see DispatchInput.headers). */
  headers: Record<string, string>;
  /** Whether the route honours Idempotency-Key (its `idempotent` flag): commitWrite reads this. */
  idempotent: boolean;
  /** What the org Durable Object was built with (src/deps.ts). */
  deps: OrgDeps;
  /**
   * Makes the named background job (src/jobs.ts) due at `dueAtMs`, stored in the current transaction,
   * and arms the alarm no later than `armAtMs` (default: the due time; later batches work).
   */
  jobDue(job: string, dueAtMs: number, armAtMs?: number): void;
  /** Told by commitWrite that events were committed (jobs such as webhook delivery may become due). */
  eventsWritten(): void;
  /** Told by commitWrite that it queued rows for the vector index (the index drain may become due). */
  indexRowsQueued(): void;
  /**
   * Told by commitWrite which record ids its transaction created, and which of them it queued for the
   * ownership registry (those not reserved ahead of use): the org Durable Object registers exactly those
   * before it answers, and tops up the reserve of the prefixes used (OrgStore.dispatch).
   */
  recordsCreated(created: string[], toRegister: string[]): void;
}

/** A veto on purging an observation (e.g. an active legal hold): a message blocks it with 409 CONFLICT. */
export type PurgeGuard = (db: Db, observationId: string) => string | null;

/** One outbound webhook call: answers the receiver's HTTP status (src/domains/webhooks/delivery.ts). */
export type WebhookSender = (
  url: string,
  init: { method: "POST"; headers: Record<string, string>; body: string },
) => Promise<number>;

/**
 * Dependencies of the org Durable Object, passed in rather than patched into modules: src/deps.ts builds
 * them from env; a test gives one object others (OrgStore.deps). Through them the org machinery reaches
 * what the domains decide (accounts, credentials) without importing a domain. What only one domain
 * reads (webhook delivery's retry schedule and deliveries in flight) is added to it in src/deps.ts.
 */
export interface OrgDeps {
  /** The outbound webhook call. */
  sendWebhook: WebhookSender;
  /** Consulted by every observation purge, in order. */
  purgeGuards: readonly PurgeGuard[];
  /** The record-ownership registry (src/registry): import claims ids in it, writes register theirs. */
  registry: OwnershipRegistry;
  /** The model configuration snapshot and the bindings its backends use (src/vector/runtime.ts). */
  models: ModelDeps;
  /**
   * The username of the principal's dashboard account, or null without one (the stage gate answers an API
   * key 404 without one; GET /v1/principal names it).
   */
  accountUsername(db: Db, principalId: string): string | null;
  /** Retires a credential whose D1 index row could not be written: its raw form never reached anyone. */
  retireCredential(db: Db, credential: { keyId: string; kind: "api_key" | "dashboard_session" }): void;
}

export interface Reply extends Answer {
  /**
   * Changes to the global D1 index, applied by the Durable Object after its own transaction commits
   * (the DO row first, D1 second: a key the index does not know yet can never authenticate).
   */
  indexWrites?: IndexWrite[];
}

export type IndexWrite =
  | { op: "add_credential"; keyHash: string; keyId: string; kind?: "api_key" | "dashboard_session" }
  | { op: "remove_credential"; keyHash: string };

export const ok = (data: unknown, meta?: Record<string, unknown>): Reply => ({ status: 200, data, meta });
export const created = (data: unknown, meta?: Record<string, unknown>): Reply => ({ status: 201, data, meta });
