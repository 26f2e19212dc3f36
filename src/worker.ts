// The stateless front Worker. Pipeline, in order: request id -> route match (404/405) -> body limit
// -> credential routing (one D1 lookup, cached per isolate) -> the organization's Durable Object,
// which authenticates the key row -> envelope.
import { bearerToken, hashKey } from "./auth/credentials";
import { readBodyText } from "./http/body";
import { ApiError, INTERNAL_MESSAGE } from "./http/errors";
import { baseHeaders, dataResponse, errorResponse } from "./http/envelope";
import { ID_PREFIX, newId } from "./http/ids";
import type { DispatchResult, EdgeEnv } from "./env";
import { routeId } from "./org/route";
import { buildMatcher } from "./http/router";
import { queryObject } from "./http/validate";
import { orgForCredential } from "./index-db";
import { bootstrapOrganization, isOperatorRequest } from "./operator";
import { ROUTES } from "./routes";

export { OrgStore } from "./OrgStore";
export { IdRegistry } from "./registry/IdRegistry";

const match = buildMatcher(ROUTES);

/** The operator console's static assets are served under this path (wrangler.toml [assets]). */
const CONSOLE_PATH = "/console/";

/** `/console` without its slash: a browser typing it reaches the console, not a JSON 404. */
function consoleRedirect(requestId: string, url: URL): Response {
  const headers = baseHeaders(requestId);
  headers.delete("content-type");
  headers.set("location", `${CONSOLE_PATH}${url.search}`);
  return new Response(null, { status: 308, headers });
}

/** Headers a route may read inside the Durable Object; everything else stays at the edge. */
const FORWARDED_HEADERS = [
  "accept",
  "cf-connecting-ip",
  "content-type",
  "mcp-protocol-version",
  "origin",
  "x-svc-peer-signature",
] as const;
function forwardedHeaders(request: Request, url: URL): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of FORWARDED_HEADERS) {
    const value = request.headers.get(name);
    if (value !== null) out[name] = value;
  }
  out.host = url.host;
  return out;
}

/** What the edge waits with; tests pass one that moves the clock helper instead of sleeping. */
export interface EdgeDeps {
  wait: (ms: number) => Promise<void>;
}
const defaultDeps: EdgeDeps = { wait: (ms) => scheduler.wait(ms) };

export async function handle(request: Request, env: EdgeEnv, deps: EdgeDeps = defaultDeps): Promise<Response> {
  const requestId = newId(ID_PREFIX.request);
  try {
    const url = new URL(request.url);
    if (isOperatorRequest(request, url, env)) return dataResponse(requestId, 201, await bootstrapOrganization(env));
    if (url.pathname === CONSOLE_PATH.slice(0, -1) && (request.method === "GET" || request.method === "HEAD"))
      return consoleRedirect(requestId, url);

    const m = await match(request, url);
    if (m.kind === "unknown") return errorResponse(requestId, new ApiError("NOT_FOUND", "Unknown endpoint."));
    if (m.kind === "method_not_allowed")
      return errorResponse(requestId, new ApiError("METHOD_NOT_ALLOWED", `Allowed methods: ${m.allowed.join(", ")}.`), {
        allow: m.allowed.join(", "),
      });
    const route = m.route;

    const bodyText = await readBodyText(request);
    if (route.auth === "public")
      return await route.edge(env, requestId, {
        bodyText,
        authorization: request.headers.get("authorization"),
        clientAddress: request.headers.get("cf-connecting-ip"),
        wait: deps.wait,
      });

    const token = bearerToken(request.headers.get("authorization"));
    if (!token) throw new ApiError("UNAUTHENTICATED", "A Bearer svc_sk_ credential is required.");
    const keyHash = hashKey(token);
    let orgId: string | null;
    try {
      orgId = await orgForCredential(env.INDEX_DB, keyHash);
    } catch (err) {
      console.error("credential index lookup failed", err);
      throw new ApiError("UNAVAILABLE", "Storage is unavailable.");
    }
    if (!orgId) throw new ApiError("UNAUTHENTICATED", "The credential is not valid.");

    const stub = env.ORG.get(env.ORG.idFromName(orgId));
    // The RPC stub's mapped type cannot express `unknown` payloads; the shape is DispatchResult.
    const result = (await stub.dispatch({
      orgId,
      routeId: routeId(route),
      params: m.params,
      query: queryObject(url),
      bodyText,
      idempotencyKey: request.headers.get("idempotency-key"),
      keyHash,
      requestId,
      headers: forwardedHeaders(request, url),
    })) as unknown as DispatchResult;
    if (!result.ok) return errorResponse(requestId, result.error);
    if (result.bare) {
      const headers = baseHeaders(requestId);
      if (result.bare.body === undefined) {
        headers.delete("content-type");
        return new Response(null, { status: result.status, headers });
      }
      return new Response(JSON.stringify(result.bare.body), { status: result.status, headers });
    }
    if (result.exact) {
      const headers = baseHeaders(requestId);
      for (const [name, value] of Object.entries(result.exact.headers)) headers.set(name, value);
      return new Response(result.exact.text, { status: result.status, headers });
    }
    if (result.stream)
      return new Response(result.stream, {
        status: result.status,
        headers: baseHeaders(requestId, "application/x-ndjson"),
      });
    if (result.ndjson) {
      const headers = baseHeaders(requestId, "application/x-ndjson");
      return new Response(result.ndjson.map((l) => l + "\n").join(""), { status: result.status, headers });
    }
    return dataResponse(requestId, result.status, result.data, result.meta);
  } catch (err) {
    if (err instanceof ApiError) return errorResponse(requestId, err);
    console.error("unhandled failure", err);
    return errorResponse(requestId, { code: "INTERNAL", message: INTERNAL_MESSAGE });
  }
}

export default {
  fetch: (request, env) => handle(request, env),
} satisfies ExportedHandler<EdgeEnv>;
