// POST /mcp: JSON-RPC 2.0 over MCP Streamable HTTP, stateless (no session id, no server-initiated
// stream: GET /mcp is a 405 from the route table). Replies are application/json, never SSE.
import { ApiError, INTERNAL_MESSAGE, translateStorageError } from "../http/errors";
import { orgRoute } from "../org/route";
import { parseJson, validate } from "../http/validate";
import { executeRoute, type Session } from "../org/execute";
import type { Reply, RequestCtx } from "../org/request";
import { REVISION } from "../domains/health/routes";
import { TOOLS_BY_NAME, toolList } from "./tools";
import { mcpResponse } from "./schema";

export const PROTOCOL_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"] as const;
export const LATEST_PROTOCOL = PROTOCOL_VERSIONS[0];
/** The MCP spec: a request without the header is treated as this version. */
export const DEFAULT_NEGOTIATED = "2025-03-26";

export const RPC = {
  PARSE: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL: -32603,
} as const;

type Id = string | number | null;
const rpcError = (id: Id, code: number, message: string) => ({ jsonrpc: "2.0" as const, id, error: { code, message } });
const rpcResult = (id: Id, result: unknown) => ({ jsonrpc: "2.0" as const, id, result });
const bare = (status: number, body?: unknown): Reply => ({ status, data: null, bare: { body } });

const supportsStructuredOutput = (version: string) => version >= "2025-06-18";

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

async function callTool(session: Session, version: string, params: Record<string, unknown>) {
  const tool = TOOLS_BY_NAME.get(params.name as string);
  if (!tool) return { error: { code: RPC.INVALID_PARAMS, message: `Unknown tool: ${String(params.name)}` } };
  const failure = (text: string) => ({ result: { content: [{ type: "text", text }], isError: true } });
  const parsed = validate(tool.input, params.arguments ?? {}, "arguments");
  if (!parsed.success) return failure(`VALIDATION_ERROR: ${parsed.message}`);
  try {
    const { route, call } = tool.route(parsed.data);
    const reply = await executeRoute(session, route, call);
    const raw = reply.data as Record<string, unknown>;
    const contextText = tool.contextText?.(raw);
    const data = contextText === undefined ? raw : { ...raw, context_text: contextText };
    return {
      result: {
        content: [
          { type: "text", text: JSON.stringify(data) },
          ...(contextText === undefined ? [] : [{ type: "text", text: contextText }]),
        ],
        ...(supportsStructuredOutput(version) ? { structuredContent: data } : {}),
        isError: false,
      },
    };
  } catch (err) {
    // The same translation as every HTTP route (OrgStore.handle): a storage failure answers the same code here.
    if (!(err instanceof ApiError)) console.error("tool failed", tool.name, err);
    const e = translateStorageError(err);
    return failure(`${e.code}: ${e.code === "INTERNAL" ? INTERNAL_MESSAGE : e.message}`);
  }
}

/** One JSON-RPC message; undefined for notifications and responses (nothing to answer). */
async function handleMessage(session: Session, version: string, msg: unknown): Promise<object | undefined> {
  if (!isObject(msg) || msg.jsonrpc !== "2.0")
    return rpcError(isObject(msg) && isId(msg.id) ? msg.id : null, RPC.INVALID_REQUEST, "Invalid Request");
  if (typeof msg.method !== "string") {
    // A client's response to a server request: we never send requests, so nothing to do.
    if (("result" in msg || "error" in msg) && isId(msg.id)) return undefined;
    return rpcError(isId(msg.id) ? msg.id : null, RPC.INVALID_REQUEST, "Invalid Request");
  }
  if (!("id" in msg)) return undefined; // notification
  if (!isId(msg.id) || msg.id === null)
    return rpcError(null, RPC.INVALID_REQUEST, "Invalid Request: id must be a string or number");
  const id = msg.id;
  const params = msg.params === undefined ? {} : msg.params;
  if (!isObject(params)) return rpcError(id, RPC.INVALID_PARAMS, "params must be an object");
  switch (msg.method) {
    case "initialize": {
      const asked = params.protocolVersion;
      const protocolVersion = (PROTOCOL_VERSIONS as readonly unknown[]).includes(asked)
        ? (asked as string)
        : LATEST_PROTOCOL;
      return rpcResult(id, {
        protocolVersion,
        capabilities: { tools: { listChanged: false } },
        serverInfo: { name: "svc-memory", title: "Agent memory service", version: REVISION },
        instructions:
          "Remember evidence with svc_remember, derive claims with svc_consolidate, and recall ranked context with svc_recall.",
      });
    }
    case "ping":
      return rpcResult(id, {});
    case "tools/list":
      return rpcResult(id, { tools: toolList(version) });
    case "tools/call": {
      if (typeof params.name !== "string") return rpcError(id, RPC.INVALID_PARAMS, "params.name must be a tool name");
      if (params.arguments !== undefined && !isObject(params.arguments))
        return rpcError(id, RPC.INVALID_PARAMS, "params.arguments must be an object");
      const out = await callTool(session, version, params);
      return "error" in out ? rpcError(id, out.error.code, out.error.message) : rpcResult(id, out.result);
    }
    default:
      return rpcError(id, RPC.METHOD_NOT_FOUND, `Method not found: ${msg.method}`);
  }
}

const isId = (v: unknown): v is Id => typeof v === "string" || typeof v === "number" || v === null;

const acceptsJson = (accept: string | undefined) =>
  accept === undefined || /(^|,)\s*(application\/json|application\/\*|\*\/\*)\s*(;|,|$)/i.test(accept);

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/**
 * DNS-rebinding protection (MCP Streamable HTTP: servers MUST validate Origin). Clients that are not
 * browsers send no Origin and pass. A browser origin must be listed in MCP_ALLOWED_ORIGINS, or be a
 * loopback origin while this is the embedded local server (SVC_LOCAL_MODE, set only by
 * scripts/serve.mjs). Never "the same as Host": a rebound DNS name makes the attacker's page and
 * this service share a host. The bearer key remains the real gate.
 */
export function originAllowed(
  origin: string | undefined,
  env: { MCP_ALLOWED_ORIGINS?: string; SVC_LOCAL_MODE?: string },
): boolean {
  if (origin === undefined) return true;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (
    env.SVC_LOCAL_MODE === "true" &&
    LOOPBACK_HOSTS.has(url.hostname) &&
    (url.protocol === "http:" || url.protocol === "https:")
  )
    return true;
  const configured = (env.MCP_ALLOWED_ORIGINS ?? "")
    .split(",")
    .map((o) => o.trim())
    .filter(Boolean);
  return configured.includes(url.origin);
}

export async function handleMcp(rc: RequestCtx): Promise<Reply> {
  if (!originAllowed(rc.headers.origin, rc.env))
    return bare(403, rpcError(null, RPC.INVALID_REQUEST, "Forbidden: Origin not allowed"));
  if (!acceptsJson(rc.headers.accept))
    return bare(406, rpcError(null, RPC.INVALID_REQUEST, "Not Acceptable: the client must accept application/json"));
  if (!/^application\/json\s*(;|$)/i.test(rc.headers["content-type"] ?? ""))
    return bare(
      415,
      rpcError(null, RPC.INVALID_REQUEST, "Unsupported Media Type: Content-Type must be application/json"),
    );
  const parsed = parseJson(rc.rawBody ?? "");
  if (!parsed.ok) return bare(400, rpcError(null, RPC.PARSE, "Parse error"));
  const payload = parsed.value;
  const messages = Array.isArray(payload) ? payload : [payload];
  if (!messages.length) return bare(400, rpcError(null, RPC.INVALID_REQUEST, "Invalid Request: empty batch"));
  const initializing = messages.some((m) => isObject(m) && m.method === "initialize");
  const header = rc.headers["mcp-protocol-version"];
  if (!initializing && header !== undefined && !(PROTOCOL_VERSIONS as readonly string[]).includes(header))
    return bare(400, rpcError(null, RPC.INVALID_REQUEST, `Unsupported MCP-Protocol-Version: ${header}`));
  const version = header ?? DEFAULT_NEGOTIATED;
  const { routeId: _r, params: _p, query: _q, body: _b, rawBody: _raw, idempotencyKey: _i, ...session } = rc;
  const answers: object[] = [];
  for (const m of messages) {
    const a = await handleMessage(session, version, m);
    if (a) answers.push(a);
  }
  if (!answers.length) return bare(202);
  return bare(200, Array.isArray(payload) ? answers : answers[0]);
}

export const mcpRoutes = [
  orgRoute({
    method: "POST",
    path: "/mcp",
    scope: "mcp:call",
    rawBody: true,
    readOnly: true,
    response: { 200: mcpResponse, 202: null },
    bareResponse: true,
    summary: "MCP (JSON-RPC 2.0 over Streamable HTTP): initialize, ping, tools/list, tools/call; nine memory tools.",
    operationId: "callMcp",
    tag: "MCP",
    description:
      "The agent tool endpoint: JSON-RPC 2.0 over Streamable HTTP with initialize, ping, tools/list and tools/call " +
      "over nine memory tools. A notification answers 202 with no body; a batch answers an array.",
    handler: handleMcp,
  }),
];
