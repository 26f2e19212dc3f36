// Running one route inside the org Durable Object: scope and role checks, validation, the write-grant
// check of grantWritable routes, then the handler. The route's flags are honoured here and nowhere
// else (idempotent reaches commitWrite through the RequestCtx). HTTP requests (OrgStore.dispatch) and
// MCP tool calls both come through here, so a tool can never do more than the route it mirrors.
import { isAdmin, requireWrite, roleWrites } from "../access/policy";
import { checkStage } from "../auth/stages";
import { hasScope, missingScopeMessage } from "../auth/scopes";
import { ApiError } from "../http/errors";
import { type OrgRoute, routeId } from "./route";
import { parseJsonBody, parseQuery, parseWith } from "../http/validate";
import type { Reply, RequestCtx } from "./request";

/** Everything about a request that does not depend on which route runs. */
export type Session = Omit<
  RequestCtx,
  "routeId" | "params" | "query" | "body" | "rawBody" | "idempotencyKey" | "idempotent"
>;

export interface RouteCall {
  params?: Record<string, string>;
  /** Raw query values (strings from a URL, or values from tool arguments). */
  query?: Record<string, unknown>;
  /** The request body as text (HTTP): parsed as JSON only after the scope and role checks. */
  bodyText?: string | null;
  /** An already-parsed body (tool arguments). */
  body?: unknown;
  rawBody?: string | null;
  idempotencyKey?: string | null;
}

export async function executeRoute(session: Session, route: OrgRoute, call: RouteCall): Promise<Reply> {
  const { caller } = session;
  checkStage(caller, route, () => session.deps.accountUsername(session.db, caller.principalId) !== null);
  if (route.scope && !hasScope(caller.scopes, route.scope))
    throw new ApiError("FORBIDDEN", missingScopeMessage(route.scope));
  if (route.explicitScope && route.scope && !caller.scopes.includes(route.scope) && !isAdmin(caller))
    throw new ApiError(
      "FORBIDDEN",
      `This route needs a key that names "${route.scope}" itself; a "*" key serves here only for the owner or admin role.`,
    );
  if (route.roles && !route.roles.includes(caller.role))
    throw new ApiError("FORBIDDEN", `This route requires the ${route.roles.join(" or ")} role.`);
  if (
    !roleWrites(caller.role) &&
    route.method !== "GET" &&
    !route.readOnly &&
    !route.grantWritable &&
    !route.ownAccount
  )
    throw new ApiError("FORBIDDEN", "The reader role cannot write.");
  let body: unknown;
  if (route.body) {
    const value = call.bodyText !== undefined ? parseJsonBody(call.bodyText, route.bodyOptional ?? false) : call.body;
    if (value === undefined && !route.bodyOptional)
      throw new ApiError("VALIDATION_ERROR", "Request body is required and must be a JSON object.");
    body = parseWith(route.body, value ?? {}, call.bodyText !== undefined ? "body" : "arguments");
  }
  const rc: RequestCtx = {
    ...session,
    routeId: routeId(route),
    params: call.params ?? {},
    query: parseQuery(route.query, call.query ?? {}),
    body,
    rawBody: route.rawBody ? (call.rawBody ?? null) : null,
    idempotent: route.idempotent ?? false,
    idempotencyKey: route.idempotent ? (call.idempotencyKey ?? null) : null,
  };
  // Readers (outside a write grant) and non-members of a record's workspace are refused here.
  if (route.grantWritable) {
    const target = route.grantWritable(rc);
    if (target) requireWrite(caller, target);
  }
  return route.handler(rc);
}
