// What the front Worker and every Durable Object are given by the runtime (bindings and variables),
// and what the front Worker may ask of an organization's Durable Object (its RPC methods). Declared
// here, below everything that reads them, so that no module has to import the object's class to know
// its contract; the class (src/OrgStore.ts) implements OrgObject.
import type { SessionStage } from "./auth/stages";
import type { ErrorBody } from "./http/errors";
import type { IdRegistry } from "./registry/IdRegistry";

export interface EdgeEnv {
  ORG: DurableObjectNamespace<OrgObject>;
  INDEX_DB: D1Database;
  /** The record-ownership registry: 256 IdRegistry shards (src/registry). */
  ID_REGISTRY: DurableObjectNamespace<IdRegistry>;
  SVC_RUNTIME?: string;
  SVC_REVISION?: string;
  MAINTENANCE_INTERVAL_SECONDS?: string;
  OPERATOR_TOKEN?: string;
  /** Comma-separated extra origins (scheme://host[:port]) allowed to call /mcp from a browser. */
  MCP_ALLOWED_ORIGINS?: string;
  /** "offline": outbound webhook sends never open a connection and fail (the test environment). */
  WEBHOOK_SENDER?: string;
  /** Waits between webhook delivery attempts, a comma list of durations (e.g. "2s,2s,2s,2s"); default SPEC's 1m,5m,30m,2h,12h. */
  WEBHOOK_RETRY_SCHEDULE?: string;
  /** Dashboard accounts (src/domains/dashboard): the password pepper secret and the WebAuthn relying party. */
  PASSWORD_PEPPER?: string;
  /** Default "localhost"; the empty string disables passkey enrollment and assertion. */
  WEBAUTHN_RP_ID?: string;
  WEBAUTHN_RP_NAME?: string;
  /** Comma-separated origins allowed in WebAuthn client data (default https://<RP ID>). */
  WEBAUTHN_ORIGINS?: string;
  /** Model backends (src/vector/config.ts): chosen by these variables, never by which bindings exist. */
  EMBEDDING_PROVIDER?: string;
  VECTOR_INDEX?: string;
  EXTRACTION_PROVIDER?: string;
  /** Workers AI and Vectorize: declared only in wrangler.toml's [env.production]. */
  AI?: Ai;
  VECTORIZE?: Vectorize;
}

/** An answer as it leaves the organization's Durable Object; the front Worker turns it into the HTTP response. */
export interface Answer {
  status: number;
  data: unknown;
  meta?: Record<string, unknown>;
  /** For NDJSON routes: the lines to stream instead of an envelope. */
  ndjson?: string[];
  /** For NDJSON routes that stream: the body, produced as the client reads it. */
  stream?: ReadableStream<Uint8Array>;
  /** A bare (non-envelope) JSON response, e.g. JSON-RPC for /mcp; body undefined means an empty body. */
  bare?: { body: unknown };
  /**
   * The envelope already serialized by the handler (envelopeText), sent byte for byte with extra
   * response headers computed over exactly those bytes (e.g. a signature of the raw body).
   */
  exact?: { text: string; headers: Record<string, string> };
}

export interface DispatchInput {
  orgId: string;
  routeId: string;
  params: Record<string, string>;
  query: Record<string, string>;
  bodyText: string | null;
  idempotencyKey: string | null;
  keyHash: string;
  requestId: string;
  /** The few request headers routes may read (lower-case names): accept, cf-connecting-ip, content-type, mcp-protocol-version, origin, x-svc-peer-signature, host. */
  headers: Record<string, string>;
}

export type DispatchResult = ({ ok: true } & Answer) | { ok: false; error: ErrorBody };

export interface LoginInput {
  username: string;
  password: string;
  requestId: string;
}

/** A session credential as a session-creating route answers it (the token appears here once). */
export interface IssuedSession {
  session_token: string;
  session_id: string;
  stage: SessionStage;
  expires_at: string;
  account_id: string;
}

export type LoginResult =
  | { ok: true; session: IssuedSession }
  | { ok: false; error: { code: "UNAUTHENTICATED" | "UNAVAILABLE"; message: string } };

export interface BootstrapResult {
  org_id: string;
  principal_id: string;
  key_id: string;
  key_hash: string;
  api_key: string;
  owner_username: string;
  temporary_password: string;
}

export interface Readiness {
  ok: boolean;
  applied: number;
  expected: number;
  error?: string;
}

/** The organization Durable Object as the front Worker, the operator channel and readiness call it. */
export interface OrgObject extends Rpc.DurableObjectBranded {
  /** One authenticated request of an org route (src/routes.ts). */
  dispatch(input: DispatchInput): Promise<DispatchResult>;
  /** Password login for POST /v1/dashboard-sessions (the front Worker found the org by username). */
  login(input: LoginInput): Promise<LoginResult>;
  /** Creates the organization's owner principal, account and key (no HTTP route does this). */
  bootstrap(orgId: string, username: string): Promise<BootstrapResult>;
  /** The applied migrations checked by name against the list. */
  readiness(): Promise<Readiness>;
}
