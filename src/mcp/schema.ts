// The /mcp answer (published in docs/openapi.json; checked against the suite's answers): bare JSON-RPC
// 2.0, outside the envelope. A result's shape depends on the method (MCP's own schema; each tool's
// outputSchema is in tools/list), so a result is an open object here.
import { z } from "zod";

const rpcId = z.union([z.string(), z.number().int()]);
const rpcResponse = z
  .union([
    z.strictObject({ jsonrpc: z.literal("2.0"), id: rpcId, result: z.record(z.string(), z.unknown()) }),
    z.strictObject({
      jsonrpc: z.literal("2.0"),
      id: rpcId.nullable(),
      error: z.strictObject({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }),
    }),
  ])
  .meta({ id: "JsonRpcResponse" });

/** One response, or an array of them for a batch. */
export const mcpResponse = z.union([rpcResponse, z.array(rpcResponse).min(1)]).meta({ id: "McpResponse" });
