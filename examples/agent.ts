// The memory loop from TypeScript with the typed client (clients/typescript: openapi-fetch over types
// generated from docs/openapi.json), on Node 20 or later:
//   KEY=svc_sk_… [BASE=http://localhost:8787] npx tsx examples/agent.ts
import { createClient } from "@svc-memory/client";

const KEY = process.env.KEY;
if (!KEY) throw new Error("set KEY to the owner API key npm start printed");
const svc = createClient({ apiKey: KEY, baseUrl: process.env.BASE });

type Answer<T> = { data?: { data: T }; error?: { error: { code: string; message: string } }; response: Response };

/** The `data` of a success answer, or an Error carrying the service's code and message. */
async function dataOf<T>(call: Promise<Answer<T>>): Promise<T> {
  const { data, error, response } = await call;
  if (!data) throw new Error(`${response.url}: ${error?.error.code}: ${error?.error.message}`);
  return data.data;
}

const obs = await dataOf(
  svc.POST("/v1/observations", {
    body: { subject_id: "user-7", kind: "message", content: "Standups moved to 9:30.", source: { type: "chat" } },
  }),
);
console.log("1 appended    ", obs.observation_id);

const { claims } = await dataOf(
  svc.POST("/v1/consolidations", {
    body: {
      subject_id: "user-7",
      claims: [
        {
          kind: "fact",
          statement: "Standups are at 9:30",
          sources: [{ observation_id: obs.observation_id, relation: "supports" }],
        },
      ],
    },
  }),
);
console.log("2 consolidated", claims[0].claim_id);

const ctx = await dataOf(
  svc.POST("/v1/context/compile", { body: { query: "when is standup", subject_id: "user-7", token_budget: 200 } }),
);
console.log("3 compiled    ", ctx.context_id, ctx.items.map((i) => i.statement).join(" | "));

const fb = await dataOf(
  svc.POST("/v1/context/{id}/feedback", { params: { path: { id: ctx.context_id } }, body: { outcome: "useful" } }),
);
console.log("4 feedback    ", fb.feedback_id, fb.outcome);

const helper = await dataOf(
  svc.POST("/v1/keys", { body: { label: "agent.ts helper", scopes: ["handoffs:read", "handoffs:write"] } }),
);
const handoff = await dataOf(
  svc.POST("/v1/handoffs", {
    body: { to_principal_id: helper.principal_id, context_id: ctx.context_id, note: "Book the room" },
  }),
);
console.log("5 handed off  ", handoff.handoff_id, handoff.status);

const exported = await svc.GET("/v1/export", { parseAs: "text" });
if (!exported.data) throw new Error(`export: ${exported.response.status}`);
console.log("6 exported    ", exported.data.trim().split("\n").length, "NDJSON lines");
