import { SELF } from "cloudflare:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { memoriesQuery } from "../src/domains/memory/schema";
import { call, expectError, inOrg, mintKey, newOrg } from "./helpers";

const rpc = (key: string, body: unknown, headers: Record<string, string> = {}) =>
  call("POST", "/mcp", {
    key,
    raw: typeof body === "string" ? body : JSON.stringify(body),
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
  });

const tool = async (key: string, name: string, args: unknown, version = "2025-06-18") => {
  const r = await rpc(
    key,
    { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } },
    { "mcp-protocol-version": version },
  );
  expect(r.status, r.text).toBe(200);
  return r.json.result as { content: { type: string; text: string }[]; structuredContent?: any; isError: boolean };
};

describe("MCP transport", () => {
  it("negotiates each supported version and answers unsupported ones with the latest", async () => {
    const org = await newOrg();
    for (const v of ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"]) {
      const r = await rpc(org.api_key, {
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: v, capabilities: {}, clientInfo: { name: "t", version: "1" } },
      });
      expect(r.status).toBe(200);
      expect(r.json).toMatchObject({
        jsonrpc: "2.0",
        id: 1,
        result: { protocolVersion: v, capabilities: { tools: {} }, serverInfo: { name: "svc-memory" } },
      });
      expect(r.headers.get("cache-control")).toBe("no-store");
      expect(r.headers.get("x-request-id")).toMatch(/^req_/);
      expect(r.headers.get("content-type")).toMatch(/^application\/json/);
      expect(r.json).not.toHaveProperty("meta");
    }
    const old = await rpc(org.api_key, {
      jsonrpc: "2.0",
      id: 2,
      method: "initialize",
      params: { protocolVersion: "2023-01-01", capabilities: {}, clientInfo: { name: "t", version: "1" } },
    });
    expect(old.json.result.protocolVersion).toBe("2025-11-25");
  });

  it("validates the MCP-Protocol-Version header after initialization", async () => {
    const org = await newOrg();
    const bad = await rpc(
      org.api_key,
      { jsonrpc: "2.0", id: 1, method: "ping" },
      { "mcp-protocol-version": "1999-01-01" },
    );
    expect(bad.status).toBe(400);
    expect(bad.json.error.code).toBe(-32600);
    const none = await rpc(org.api_key, { jsonrpc: "2.0", id: 1, method: "tools/list" });
    expect(none.status).toBe(200);
    // Absent header means 2025-03-26: no outputSchema yet.
    expect(none.json.result.tools[0]).not.toHaveProperty("outputSchema");
    const newer = await rpc(
      org.api_key,
      { jsonrpc: "2.0", id: 1, method: "tools/list" },
      { "mcp-protocol-version": "2025-06-18" },
    );
    expect(newer.json.result.tools[0]).toHaveProperty("outputSchema");
  });

  it("answers notifications 202 with an empty body, pings with {}, batches with arrays", async () => {
    const org = await newOrg();
    const n = await rpc(org.api_key, { jsonrpc: "2.0", method: "notifications/initialized" });
    expect(n.status).toBe(202);
    expect(n.text).toBe("");
    expect((await rpc(org.api_key, { jsonrpc: "2.0", id: "p", method: "ping" })).json).toEqual({
      jsonrpc: "2.0",
      id: "p",
      result: {},
    });
    const batch = await rpc(org.api_key, [
      { jsonrpc: "2.0", id: 1, method: "ping" },
      { jsonrpc: "2.0", method: "notifications/initialized" },
      { jsonrpc: "2.0", id: 2, method: "no/such" },
    ]);
    expect(batch.status).toBe(200);
    expect(batch.json).toEqual([
      { jsonrpc: "2.0", id: 1, result: {} },
      { jsonrpc: "2.0", id: 2, error: { code: -32601, message: "Method not found: no/such" } },
    ]);
    const onlyNotes = await rpc(org.api_key, [{ jsonrpc: "2.0", method: "notifications/initialized" }]);
    expect(onlyNotes.status).toBe(202);
  });

  it("uses the standard JSON-RPC error codes", async () => {
    const org = await newOrg();
    const parse = await rpc(org.api_key, "{nope");
    expect(parse.status).toBe(400);
    expect(parse.json.error.code).toBe(-32700);
    expect((await rpc(org.api_key, { id: 1, method: "ping" })).json.error.code).toBe(-32600);
    expect((await rpc(org.api_key, [])).json.error.code).toBe(-32600);
    expect((await rpc(org.api_key, { jsonrpc: "2.0", id: 1, method: "no/such" })).json.error.code).toBe(-32601);
    expect(
      (await rpc(org.api_key, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "svc_nothing" } })).json
        .error.code,
    ).toBe(-32602);
    expect(
      (await rpc(org.api_key, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { arguments: {} } })).json.error
        .code,
    ).toBe(-32602);
  });

  it("checks Accept and Content-Type as Streamable HTTP specifies; GET is 405", async () => {
    const org = await newOrg();
    expect((await rpc(org.api_key, { jsonrpc: "2.0", id: 1, method: "ping" }, { accept: "text/html" })).status).toBe(
      406,
    );
    expect(
      (await rpc(org.api_key, { jsonrpc: "2.0", id: 1, method: "ping" }, { "content-type": "text/plain" })).status,
    ).toBe(415);
    expectError(await call("GET", "/mcp", { key: org.api_key }), 405, "METHOD_NOT_ALLOWED");
  });

  it("needs a credential with mcp:call", async () => {
    const org = await newOrg();
    expectError(await rpc("svc_sk_nope", { jsonrpc: "2.0", id: 1, method: "ping" }), 401, "UNAUTHENTICATED");
    const k = await mintKey(org.api_key, { scopes: ["observations:write"] });
    expectError(await rpc(k.key, { jsonrpc: "2.0", id: 1, method: "ping" }), 403, "FORBIDDEN");
  });
});

describe("MCP tools", () => {
  it("lists exactly the nine tools with object input schemas and no administrative tools", async () => {
    const org = await newOrg();
    const r = await rpc(
      org.api_key,
      { jsonrpc: "2.0", id: 1, method: "tools/list" },
      { "mcp-protocol-version": "2025-11-25" },
    );
    const names = r.json.result.tools.map((t: any) => t.name).sort();
    expect(names).toEqual([
      "svc_checkpoint_load",
      "svc_checkpoint_save",
      "svc_consolidate",
      "svc_evidence",
      "svc_feedback",
      "svc_handoff",
      "svc_recall",
      "svc_remember",
      "svc_search",
    ]);
    for (const t of r.json.result.tools) {
      expect(t.inputSchema.type).toBe("object");
      expect(t.outputSchema.type).toBe("object");
      expect(t.description.length).toBeGreaterThan(40);
    }
  });

  it("publishes svc_search's input as GET /v1/memories' query fields, with the route's limits", async () => {
    const org = await newOrg();
    const r = await rpc(
      org.api_key,
      { jsonrpc: "2.0", id: 1, method: "tools/list" },
      { "mcp-protocol-version": "2025-11-25" },
    );
    const published = r.json.result.tools.find((t: any) => t.name === "svc_search").inputSchema;
    const route = z.toJSONSchema(memoriesQuery, { io: "input", unrepresentable: "any" }) as {
      properties: Record<string, any>;
    };
    // One name per concept across tools: the route's `q` is the tool's `query`, as in svc_recall.
    const asTool = (field: string) => (field === "q" ? "query" : field);
    expect(Object.keys(published.properties).sort()).toEqual(Object.keys(route.properties).map(asTool).sort());
    for (const [field, schema] of Object.entries(route.properties))
      expect(published.properties[asTool(field)], field).toEqual(schema);
    expect(published.additionalProperties).toBe(false);
    // The route's bounds hold through the tool too.
    const tooMany = await tool(org.api_key, "svc_search", { limit: 101 });
    expect(tooMany.isError).toBe(true);
    expect(tooMany.content[0].text).toContain("limit");
  });

  it("svc_remember appends an observation without an event, but audited", async () => {
    const org = await newOrg();
    const res = await tool(org.api_key, "svc_remember", {
      subject_id: "mcp-s",
      kind: "note",
      content: "remember this",
      source: { type: "mcp" },
    });
    expect(res.isError).toBe(false);
    expect(res.structuredContent.observation_id).toMatch(/^obs_/);
    expect(JSON.parse(res.content[0].text)).toEqual(res.structuredContent);
    const counts = await inOrg(org.org_id, (o) =>
      o.db.first<{ obs: number; ev: number; aud: number }>(
        `SELECT (SELECT count(*) FROM observations) AS obs, (SELECT count(*) FROM events) AS ev,
              (SELECT count(*) FROM audit_log WHERE action = 'observation.appended') AS aud`,
      ),
    );
    expect(counts).toEqual({ obs: 1, ev: 0, aud: 1 });
  });

  it("svc_remember answers like POST /v1/observations, project_id included", async () => {
    const org = await newOrg();
    const prj = await call("POST", "/v1/projects/resolve", {
      key: org.api_key,
      body: { reference: "mcp-proj", create: true },
    });
    const body = {
      subject_id: "mcp-s",
      project_id: prj.json.data.project_id,
      kind: "note",
      content: "scoped",
      source: { type: "mcp" },
    };
    const res = await tool(org.api_key, "svc_remember", body);
    expect(res.isError).toBe(false);
    expect(res.structuredContent.project_id).toBe(prj.json.data.project_id);
    const http = await call("POST", "/v1/observations", { key: org.api_key, body });
    expect(Object.keys(res.structuredContent).sort()).toEqual(Object.keys(http.json.data).sort());
  });

  it("omits structuredContent before 2025-06-18", async () => {
    const org = await newOrg();
    const res = await tool(
      org.api_key,
      "svc_remember",
      { subject_id: "s", kind: "note", content: "x", source: { type: "mcp" } },
      "2025-03-26",
    );
    expect(res).not.toHaveProperty("structuredContent");
    expect(JSON.parse(res.content[0].text).observation_id).toMatch(/^obs_/);
  });

  it("reports validation, not-found and forbidden failures as isError tool results", async () => {
    const org = await newOrg();
    const bad = await tool(org.api_key, "svc_remember", {
      subject_id: "s",
      kind: "diary",
      content: "x",
      source: { type: "mcp" },
    });
    expect(bad.isError).toBe(true);
    expect(bad.content[0].text).toContain("VALIDATION_ERROR");
    expect(bad.content[0].text).toContain("kind");
    const missing = await tool(org.api_key, "svc_evidence", { claim_id: `claim_${"0".repeat(32)}` });
    expect(missing).toMatchObject({ isError: true });
    expect(missing.content[0].text).toContain("NOT_FOUND");
    const narrow = await mintKey(org.api_key, { scopes: ["mcp:call", "views:compile"] });
    const denied = await tool(narrow.key, "svc_remember", {
      subject_id: "s",
      kind: "note",
      content: "x",
      source: { type: "mcp" },
    });
    expect(denied.isError).toBe(true);
    expect(denied.content[0].text).toContain('Missing required scope "observations:write"');
    const low = await mintKey(org.api_key, { scopes: ["mcp:call", "observations:write"], max_trust: "low" });
    const tooTrusted = await tool(low.key, "svc_remember", {
      subject_id: "s",
      kind: "note",
      content: "x",
      source: { type: "mcp" },
      trust: "high",
    });
    expect(tooTrusted.content[0].text).toContain("FORBIDDEN");
    const load = await tool(org.api_key, "svc_checkpoint_load", { subject_id: "s" });
    expect(load.isError).toBe(true);
  });

  it("never reaches another organization's records", async () => {
    const a = await newOrg();
    const b = await newOrg();
    const rem = await tool(a.api_key, "svc_remember", {
      subject_id: "s",
      kind: "note",
      content: "a only",
      source: { type: "mcp" },
    });
    const con = await tool(a.api_key, "svc_consolidate", {
      subject_id: "s",
      claims: [
        {
          kind: "fact",
          statement: "a only",
          sources: [{ observation_id: rem.structuredContent.observation_id, relation: "supports" }],
        },
      ],
    });
    const claimId = con.structuredContent.claims[0].claim_id;
    const foreign = await tool(b.api_key, "svc_evidence", { claim_id: claimId });
    const missing = await tool(b.api_key, "svc_evidence", { claim_id: `claim_${"0".repeat(32)}` });
    expect(foreign).toEqual(missing);
    const search = await tool(b.api_key, "svc_search", { query: "only" });
    expect(search.structuredContent.items).toEqual([]);
  });

  it("drives every tool with the official TypeScript SDK client", async () => {
    const org = await newOrg();
    const bob = await mintKey(org.api_key, { scopes: ["*"] });
    const transport = new StreamableHTTPClientTransport(new URL("http://svc.test/mcp"), {
      requestInit: { headers: { authorization: `Bearer ${org.api_key}` } },
      fetch: (input, init) => SELF.fetch(input as string, init as RequestInit),
    });
    const client = new Client({ name: "sdk-test", version: "1.0.0" });
    await client.connect(transport);
    expect(client.getServerVersion()?.name).toBe("svc-memory");
    const { tools } = await client.listTools();
    expect(tools).toHaveLength(9);
    const callTool = async (name: string, args: Record<string, unknown>) => {
      const r = await client.callTool({ name, arguments: args });
      expect(r.isError, JSON.stringify(r)).toBe(false);
      return r.structuredContent as any;
    };
    const o = await callTool("svc_remember", {
      subject_id: "deploy",
      kind: "note",
      content: "deploys are on tuesday",
      source: { type: "sdk" },
    });
    const c = await callTool("svc_consolidate", {
      subject_id: "deploy",
      claims: [
        {
          kind: "fact",
          statement: "deploys happen on tuesday",
          sources: [{ observation_id: o.observation_id, relation: "supports" }],
        },
      ],
    });
    const claimId = c.claims[0].claim_id;
    const recall = await callTool("svc_recall", { query: "when are deploys", token_budget: 500 });
    expect(recall.items.map((i: any) => i.claim_id)).toContain(claimId);
    expect((await callTool("svc_search", { query: "tuesday" })).items.map((i: any) => i.claim_id)).toEqual([claimId]);
    expect((await callTool("svc_evidence", { claim_id: claimId })).supporting[0].observation_id).toBe(o.observation_id);
    expect(
      (await callTool("svc_feedback", { context_id: recall.context_id, outcome: "useful", claim_id: claimId }))
        .feedback_id,
    ).toMatch(/^fb_/);
    const saved = await callTool("svc_checkpoint_save", {
      subject_id: "deploy",
      agent_id: "sdk",
      kind: "task_state",
      state: "step 3",
      ttl_seconds: 600,
    });
    expect((await callTool("svc_checkpoint_load", { subject_id: "deploy", kind: "task_state" })).state).toBe("step 3");
    expect((await callTool("svc_checkpoint_load", { checkpoint_id: saved.checkpoint_id })).checkpoint_id).toBe(
      saved.checkpoint_id,
    );
    const h = await callTool("svc_handoff", {
      to_principal_id: bob.principal_id,
      context_id: recall.context_id,
      checkpoint_id: saved.checkpoint_id,
    });
    expect(h.status).toBe("pending");
    expect((await call("GET", "/v1/handoffs", { key: bob.key })).json.data.handoffs[0].handoff_id).toBe(h.handoff_id);
    await client.close();
  });
});

describe("MCP origin validation", () => {
  it("rejects browser origins that are not configured (loopback only in local mode, never this host); accepts clients without Origin", async () => {
    const org = await newOrg();
    const ping = { jsonrpc: "2.0", id: 1, method: "ping" };
    expect((await rpc(org.api_key, ping, { origin: "https://evil.example.com" })).status).toBe(403);
    expect((await rpc(org.api_key, ping, { origin: "null" })).status).toBe(403);
    // The test runtime is not the embedded local server (no SVC_LOCAL_MODE): loopback is not special.
    expect((await rpc(org.api_key, ping, { origin: "http://localhost:3000" })).status).toBe(403);
    expect((await rpc(org.api_key, ping, { origin: "http://svc.test" })).status).toBe(403);
    expect((await rpc(org.api_key, ping)).status).toBe(200);
  });
});

describe("MCP tools an LLM can use", () => {
  const sdkClient = async (key: string) => {
    const transport = new StreamableHTTPClientTransport(new URL("http://svc.test/mcp"), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
      fetch: (input, init) => SELF.fetch(input as string, init as RequestInit),
    });
    const client = new Client({ name: "dx-test", version: "1.0.0" });
    await client.connect(transport);
    return client;
  };
  /** Paths of every property, at any depth, that carries no description. */
  const undescribed = (schema: any, path = ""): string[] => {
    if (!schema || typeof schema !== "object") return [];
    const out: string[] = [];
    for (const [k, v] of Object.entries<any>(schema.properties ?? {})) {
      if (!v.description) out.push(`${path}${k}`);
      out.push(...undescribed(v, `${path}${k}.`));
    }
    if (schema.items) out.push(...undescribed(schema.items, `${path}[].`));
    for (const alt of [...(schema.anyOf ?? []), ...(schema.oneOf ?? [])]) out.push(...undescribed(alt, path));
    return out;
  };

  it("describes every input field and annotates every tool from its routes' flags (official SDK client)", async () => {
    const org = await newOrg();
    const client = await sdkClient(org.api_key);
    const { tools } = await client.listTools();
    expect(tools).toHaveLength(9);
    for (const t of tools) {
      expect(undescribed(t.inputSchema), t.name).toEqual([]);
      expect(t.outputSchema, t.name).toBeDefined();
      for (const hint of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"] as const)
        expect(typeof t.annotations?.[hint], `${t.name} ${hint}`).toBe("boolean");
    }
    const hints = Object.fromEntries(tools.map((t) => [t.name, t.annotations]));
    for (const name of ["svc_recall", "svc_search", "svc_evidence", "svc_checkpoint_load"])
      expect(hints[name], name).toMatchObject({
        readOnlyHint: true,
        destructiveHint: false,
        idempotentHint: true,
        openWorldHint: false,
      });
    for (const name of ["svc_remember", "svc_consolidate", "svc_feedback", "svc_handoff"])
      expect(hints[name], name).toMatchObject({ readOnlyHint: false, destructiveHint: false, idempotentHint: false });
    // A checkpoint save overwrites the previous one: destructive, and repeating it changes nothing more.
    expect(hints.svc_checkpoint_save).toMatchObject({
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true,
    });
    // One name per concept: the words to look for are `query` in both tools that take them.
    const inputs = Object.fromEntries(tools.map((t) => [t.name, Object.keys(t.inputSchema.properties ?? {})]));
    expect(inputs.svc_search).toContain("query");
    expect(inputs.svc_recall).toContain("query");
    expect(Object.values(inputs).flat()).not.toContain("q");
  });

  it("remembers with defaults, and recalls structured items plus a text block for a prompt", async () => {
    const org = await newOrg();
    const client = await sdkClient(org.api_key);
    const remembered = await client.callTool({
      name: "svc_remember",
      arguments: { subject_id: "dx", content: "the staging database is called lemur" },
    });
    expect(remembered.isError, JSON.stringify(remembered)).toBe(false);
    const obsId = (remembered.structuredContent as any).observation_id;
    const made = await client.callTool({
      name: "svc_consolidate",
      arguments: {
        subject_id: "dx",
        claims: [
          {
            kind: "fact",
            statement: "The staging database is called lemur",
            sources: [{ observation_id: obsId, relation: "supports" }],
          },
        ],
      },
    });
    const claimId = (made.structuredContent as any).claims[0].claim_id;
    const evidence = await call("GET", `/v1/claims/${claimId}/evidence`, { key: org.api_key });
    expect(JSON.stringify(evidence.json.data.supporting)).toContain(obsId);
    expect(evidence.json.data.supporting[0]).toMatchObject({ kind: "note", source: { type: "mcp" } });
    const recall = await client.callTool({ name: "svc_recall", arguments: { query: "staging database name" } });
    const structured = recall.structuredContent as any;
    expect(structured.items).toHaveLength(1);
    expect(structured.context_text).toContain("The staging database is called lemur");
    expect(structured.context_text).toContain(structured.items[0].claim_id);
    const blocks = recall.content as { type: string; text: string }[];
    expect(JSON.parse(blocks[0].text)).toEqual(structured);
    expect(blocks[1].text).toBe(structured.context_text);
    const found = await client.callTool({ name: "svc_search", arguments: { query: "lemur" } });
    expect((found.structuredContent as any).items).toHaveLength(1);
  });

  it("tool errors name arguments, never the HTTP body, and list allowed values", async () => {
    const org = await newOrg();
    const bad = await tool(org.api_key, "svc_remember", { subject_id: "dx", content: "x", kind: "nope", extra: 1 });
    expect(bad.isError).toBe(true);
    const text = bad.content[0].text;
    expect(text).toContain('Invalid field "kind": must be one of: "message"');
    expect(text).toContain('Unknown argument "extra"');
    expect(text).not.toMatch(/body/i);
    const empty = await tool(org.api_key, "svc_evidence", {});
    expect(empty.content[0].text).toBe('VALIDATION_ERROR: Invalid field "claim_id": is required.');
    const tooLong = await tool(org.api_key, "svc_checkpoint_save", {
      subject_id: "s",
      agent_id: "a",
      kind: "cursor",
      state: "x",
      ttl_seconds: 5,
      extra: 1,
    });
    expect(tooLong.content[0].text).not.toMatch(/body/i);
    const q = await tool(org.api_key, "svc_search", { q: "old name" });
    expect(q.isError).toBe(true);
    expect(q.content[0].text).toContain('Unknown argument "q"');
  });
});
