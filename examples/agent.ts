// The memory loop from TypeScript with plain fetch, typed from docs/openapi.json
// (examples/openapi.d.ts: `npx openapi-typescript docs/openapi.json -o examples/openapi.d.ts`).
//   KEY=svc_sk_… [BASE=http://127.0.0.1:8787] node --experimental-strip-types examples/agent.ts   (Node ≥ 22.6)
//   or: npx esbuild examples/agent.ts --outfile=/tmp/agent.mjs --format=esm && node /tmp/agent.mjs
import type { paths } from "./openapi";

type Json<P extends keyof paths, M extends "get" | "post"> = paths[P][M] extends { requestBody?: { content: { "application/json": infer B } } } ? B : never;
/** The `data` of the route's success answer (201 where it creates, else 200). */
type Success<R> = R extends { 201: infer S } ? S : R extends { 200: infer S } ? S : never;
type Data<P extends keyof paths, M extends "get" | "post"> =
  paths[P][M] extends { responses: infer R } ? Success<R> extends { content: { "application/json": { data: infer D } } } ? D : never : never;

const BASE = process.env.BASE ?? "http://127.0.0.1:8787";
const KEY = process.env.KEY;
if (!KEY) throw new Error("set KEY to the owner API key npm start printed");

/** One call: the answer's data, or an Error carrying the service's code and message. */
async function api<P extends keyof paths, M extends "get" | "post">(method: M, path: P, opts: { params?: Record<string, string>; body?: Json<P, M> } = {}): Promise<Data<P, M>> {
  const url = BASE + String(path).replace(/\{(\w+)\}/g, (_, name) => encodeURIComponent(opts.params?.[name] ?? ""));
  const res = await fetch(url, {
    method: method.toUpperCase(),
    headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const json = await res.json();
  if (json.error) throw new Error(`${method.toUpperCase()} ${url}: ${json.error.code}: ${json.error.message}`);
  return json.data;
}

const obs = await api("post", "/v1/observations", {
  body: { subject_id: "user-7", kind: "message", content: "Standups moved to 9:30.", source: { type: "chat" } },
});
console.log("1 appended    ", obs.observation_id);

const { claims } = await api("post", "/v1/consolidations", {
  body: { subject_id: "user-7", claims: [{ kind: "fact", statement: "Standups are at 9:30", sources: [{ observation_id: obs.observation_id, relation: "supports" }] }] },
});
console.log("2 consolidated", claims[0].claim_id);

const ctx = await api("post", "/v1/context/compile", { body: { query: "when is standup", subject_id: "user-7", token_budget: 200 } });
console.log("3 compiled    ", ctx.context_id, ctx.items.map((i) => i.statement).join(" | "));

const fb = await api("post", "/v1/context/{id}/feedback", { params: { id: ctx.context_id }, body: { outcome: "useful" } });
console.log("4 feedback    ", fb.feedback_id, fb.outcome);

const helper = (await api("post", "/v1/keys", { body: { label: "agent.ts helper", scopes: ["handoffs:read", "handoffs:write"] } })) as { principal_id: string };
const handoff = (await api("post", "/v1/handoffs", { body: { to_principal_id: helper.principal_id, context_id: ctx.context_id, note: "Book the room" } })) as { handoff_id: string; status: string };
console.log("5 handed off  ", handoff.handoff_id, handoff.status);

const exported = await (await fetch(`${BASE}/v1/export`, { headers: { authorization: `Bearer ${KEY}` } })).text();
console.log("6 exported    ", exported.trim().split("\n").length, "NDJSON lines");
