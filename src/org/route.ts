// The shape of one route-table entry. The table itself is src/routes.ts; routing, the 405 allow-list,
// scope/role checks, validation and the API docs are all derived from it.
import type { z } from "zod";
import type { Role } from "../auth/roles";
import type { Scope } from "../auth/scopes";
import type { CredentialStage } from "../auth/stages";
import type { Reply, RequestCtx } from "../org/request";
import type { WriteTarget } from "../access/policy";
import type { ApiTag } from "../http/api-tags";
import type { EdgeEnv } from "../env";

export type Method = "GET" | "POST" | "PATCH" | "DELETE";

/**
 * What a success answer carries, by status: the schema of `data` in the `{ data, meta }` envelope
 * (of the whole body on a `bareResponse` route), or null for an empty body. Published in
 * docs/openapi.json; test/helpers.ts `call` checks every 2xx answer of the suite against it.
 */
export type ResponseSchemas = Partial<Record<200 | 201 | 202 | 204, z.ZodType | null>>;

interface RouteBase {
  method: Method;
  path: string;
  summary: string;
  /** The OpenAPI operationId: a camelCase verb phrase (appendObservation), unique (test/docs.test.ts). */
  operationId: string;
  /** The docs group the operation is listed under (src/http/api-tags.ts). */
  tag: ApiTag;
  /** A sentence or two for docs/openapi.json: what the route does and its main rule. */
  description: string;
  /** Every route declares its success answers (test/docs.test.ts); an NDJSON route declares `ndjsonLines` instead. */
  response?: ResponseSchemas;
  /** The success body is not an envelope (JSON-RPC on /mcp): `response` describes the body itself. */
  bareResponse?: boolean;
  /**
   * What a success answer's `meta` carries beside `request_id` (and `replayed` on an idempotent route):
   * e.g. compile's `degraded`. Nothing else may appear there (shapes.ts successMetaOf).
   */
  responseMeta?: z.ZodRawShape;
}

/** What a public route may read of its request, and the edge's injected dependencies. */
export interface PublicRequest {
  bodyText: string | null;
  authorization: string | null;
  /** The cf-connecting-ip header: the client's address, set by Cloudflare (absent in some local runs). */
  clientAddress: string | null;
  /** Waits without CPU (scheduler.wait); tests pass one that moves the clock helper instead. */
  wait: (ms: number) => Promise<void>;
}

/** Served by the front Worker itself without a credential (health, readiness, dashboard login). */
export interface PublicRoute extends RouteBase {
  auth: "public";
  edge: (env: EdgeEnv, requestId: string, req: PublicRequest) => Promise<Response>;
}

/** Authenticated, served inside the organization's Durable Object. */
export interface OrgRoute<B extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType> extends RouteBase {
  auth: "key";
  /** null: any valid credential, no named scope. */
  scope: Scope | null;
  roles?: readonly Role[];
  body?: B;
  /** The body may be omitted entirely (all its fields are optional). */
  bodyOptional?: boolean;
  query?: Q;
  /** Honours Idempotency-Key through the write helper. */
  idempotent?: boolean;
  /** Responds with NDJSON lines instead of an envelope. */
  ndjson?: boolean;
  /** The schema of each NDJSON line type the route reads or writes, published in docs/API.md. */
  ndjsonLines?: Record<string, z.ZodType>;
  /** A POST that only reads (compile, simulation, the MCP transport): open to the reader role. */
  readOnly?: boolean;
  /**
   * A write that replaces one record in place (an upsert): the same request twice leaves the same
   * state, and an earlier value is lost. Published as MCP tool annotations (idempotent, destructive).
   */
  overwrites?: boolean;
  /**
   * A write the reader role may make where a write grant covers the target: the route says how to find
   * its target and the pipeline (executeRoute) checks requireWrite before the handler runs. A null
   * target (e.g. the path id names nothing readable) is left to the handler's own 404. Every other
   * non-GET route is closed to readers.
   */
  grantWritable?: (rc: RequestCtx<z.infer<B>, z.infer<Q>>) => WriteTarget | null;
  /**
   * Which credentials may call the route (src/auth/stages.ts): an API key and the stages
   * of a dashboard session. Default: an API key or a full session. Enforced once, in executeRoute.
   */
  stages?: readonly CredentialStage[];
  /**
   * The credential must name `scope` itself: `*` covers it only for an owner or admin. For routes
   * another deployment calls with a key of this organization handed to it (federation pull and push),
   * so that a member's everyday `*` key cannot act as a peer. Enforced once, in executeRoute.
   */
  explicitScope?: boolean;
  /** Acts only on the caller's own dashboard account or session: open to every role, readers included. */
  ownAccount?: boolean;
  /** The body is not JSON (e.g. NDJSON import): handed to the handler as rc.rawBody, unparsed. */
  rawBody?: boolean;
  /** The JSON schema a rawBody route applies itself after reading the raw bytes (published in docs/API.md). */
  rawBodySchema?: z.ZodType;
  /**
   * Runs inside the org Durable Object. Writes go through commitWrite (one transactionSync). A handler
   * may be async only to read something outside the DO first (e.g. the D1 index); it must then
   * re-check whatever it relies on inside the transaction.
   */
  handler: (rc: RequestCtx<z.infer<B>, z.infer<Q>>) => Reply | Promise<Reply>;
}

export type RouteDef = PublicRoute | OrgRoute<any, any>;

export const routeId = (r: { method: string; path: string }) => `${r.method} ${r.path}`;

/** Typed constructor for authenticated routes: infers body and query types for the handler. */
export function orgRoute<B extends z.ZodType = z.ZodUndefined, Q extends z.ZodType = z.ZodUndefined>(
  def: Omit<OrgRoute<B, Q>, "auth">,
): OrgRoute<B, Q> {
  return { ...def, auth: "key" };
}
