#!/usr/bin/env node
// Writes src/docs/response-examples.json, the response examples of docs/openapi.json: it starts a fresh
// local server (npm start on a free port, a temporary state folder, webhook retries 1 s apart), walks
// every route once through one realistic story (the memory loop of user-42, coordination, webhooks,
// access, governance, retention, federation between two organizations, a dashboard login with a
// passkey) and records each route's success answers by status. test/docs.test.ts checks every route
// has one and that each still matches the route's response schema; when a response shape changes,
// run this again (`node scripts/capture-response-examples.mjs`) and regenerate the docs.
import { createHmac } from "node:crypto";
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SoftAuthenticator } from "../test/authenticator.mjs";
import { freePort, root, waitHealthy } from "./local.mjs";

const port = await freePort();
const state = mkdtempSync(join(tmpdir(), "svc-examples-"));
const env = { ...process.env, PORT: String(port), SVC_STATE_DIR: state, WEBHOOK_RETRY_SCHEDULE: "1s,1s,1s,1s" };
const server = spawn("npm", ["start"], { cwd: root, env, stdio: "ignore", detached: true });
const BASE = `http://127.0.0.1:${port}`;
const examples = {};
const failures = [];

function bootstrap() {
  return JSON.parse(
    execFileSync("npm", ["run", "-s", "bootstrap", "--", "--json"], { cwd: root, env, encoding: "utf8" }),
  );
}

/** One request; a 2xx answer is kept as the example of `METHOD template` for its status (the first one wins). */
async function call(method, template, { key, params = {}, body, raw, query, headers = {} } = {}) {
  let path = template.replace(/:([A-Za-z_]+)/g, (_, n) => encodeURIComponent(params[n]));
  if (query) path += "?" + new URLSearchParams(query).toString();
  const h = { ...headers };
  if (key) h.authorization = `Bearer ${key}`;
  let payload;
  if (raw !== undefined) {
    payload = raw;
    h["content-type"] ??= "application/json";
  } else if (body !== undefined) {
    payload = JSON.stringify(body);
    h["content-type"] = "application/json";
  }
  const res = await fetch(BASE + path, { method, headers: h, body: payload });
  const text = await res.text();
  const id = `${method} ${template}`;
  if (res.status < 200 || res.status > 299) failures.push(`${id}: ${res.status} ${text.slice(0, 300)}`);
  else if (text) {
    const ndjson = res.headers.get("content-type")?.startsWith("application/x-ndjson");
    (examples[id] ??= {})[res.status] ??= ndjson ? text : JSON.parse(text);
  }
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text, data: json?.data, headers: res.headers };
}

try {
  await waitHealthy(BASE, server, 180_000);
  const org = bootstrap();
  const org2 = bootstrap();
  const K = org.api_key;
  const sign = (secret, bytes) => "sha256=" + createHmac("sha256", secret).update(bytes, "utf8").digest("hex");

  await call("GET", "/healthz");
  await call("GET", "/readyz");
  await call("GET", "/v1/principal", { key: K });

  // Memory loop.
  const project = (
    await call("POST", "/v1/projects/resolve", { key: K, body: { reference: "onboarding", create: true } })
  ).data;
  await call("POST", "/v1/projects/resolve", { key: K, body: { reference: "onboarding" } });
  const obsBody = {
    subject_id: "user-42",
    kind: "message",
    content: "I prefer tea in the morning, green if there is any.",
    source: { type: "chat", ref: "msg-981" },
    project_id: project.project_id,
    visibility: "team",
    trust: "verified",
  };
  const o1 = (
    await call("POST", "/v1/observations", { key: K, body: obsBody, headers: { "idempotency-key": "chat-msg-981" } })
  ).data;
  await call("POST", "/v1/observations", { key: K, body: obsBody, headers: { "idempotency-key": "chat-msg-981" } });
  const o2 = (
    await call("POST", "/v1/observations", {
      key: K,
      body: {
        subject_id: "user-42",
        kind: "message",
        content: "Coffee after lunch is fine, but never before noon.",
        source: { type: "chat", ref: "msg-1022" },
        project_id: project.project_id,
        visibility: "team",
        trust: "high",
      },
    })
  ).data;
  const o3 = (
    await call("POST", "/v1/observations", {
      key: K,
      body: {
        subject_id: "user-42",
        kind: "note",
        content: "Asked to move the weekly sync to Thursdays.",
        source: { type: "crm", ref: "ticket-311" },
        project_id: project.project_id,
        visibility: "team",
      },
    })
  ).data;
  const consBody = {
    subject_id: "user-42",
    project_id: project.project_id,
    claims: [
      {
        kind: "preference",
        statement: "Prefers tea in the morning",
        visibility: "team",
        sources: [
          { observation_id: o1.observation_id, relation: "supports" },
          { observation_id: o2.observation_id, relation: "qualifies" },
        ],
      },
    ],
  };
  const cons = (
    await call("POST", "/v1/consolidations", {
      key: K,
      body: consBody,
      headers: { "idempotency-key": "consolidate-user-42-1" },
    })
  ).data;
  await call("POST", "/v1/consolidations", {
    key: K,
    body: consBody,
    headers: { "idempotency-key": "consolidate-user-42-1" },
  });
  const claimTea = cons.claims[0].claim_id;
  const more = (
    await call("POST", "/v1/consolidations", {
      key: K,
      body: {
        subject_id: "user-42",
        project_id: project.project_id,
        claims: [
          {
            kind: "preference",
            statement: "Prefers green tea in the morning",
            visibility: "team",
            sources: [{ observation_id: o1.observation_id, relation: "supports" }],
          },
          {
            kind: "instruction",
            statement: "Hold the weekly sync on Thursdays",
            visibility: "team",
            sources: [{ observation_id: o3.observation_id, relation: "supports" }],
          },
          {
            kind: "fact",
            statement: "Drinks coffee only after noon",
            visibility: "team",
            sources: [{ observation_id: o2.observation_id, relation: "supports" }],
          },
        ],
      },
    })
  ).data;
  const [claimGreen, claimSync, claimCoffee] = more.claims.map((c) => c.claim_id);
  await call("GET", "/v1/claims/:id/evidence", { key: K, params: { id: claimTea } });
  await call("GET", "/v1/memories", { key: K, query: { q: "tea", subject_id: "user-42", limit: "2" } });
  const ctx = (
    await call("POST", "/v1/context/compile", {
      key: K,
      body: { query: "what does user-42 drink in the morning", subject_id: "user-42", token_budget: 500 },
    })
  ).data;
  await call("GET", "/v1/context/:id", { key: K, params: { id: ctx.context_id } });
  const fbBody = { outcome: "useful", claim_id: ctx.items[0]?.claim_id, note: "Offered green tea at the 9:00 call." };
  await call("POST", "/v1/context/:id/feedback", {
    key: K,
    params: { id: ctx.context_id },
    body: fbBody,
    headers: { "idempotency-key": "fb-1" },
  });
  await call("POST", "/v1/context/:id/feedback", {
    key: K,
    params: { id: ctx.context_id },
    body: fbBody,
    headers: { "idempotency-key": "fb-1" },
  });

  // Keys and principals.
  const helper = (
    await call("POST", "/v1/keys", {
      key: K,
      body: {
        label: "scheduler agent",
        scopes: ["handoffs:read", "handoffs:write", "checkpoints:read", "leases:write", "leases:read"],
        max_trust: "medium",
      },
    })
  ).data;
  const gateway = (
    await call("POST", "/v1/keys", {
      key: K,
      body: { label: "public help-center gateway", scopes: ["channel:compile"] },
    })
  ).data;
  const throwaway = (
    await call("POST", "/v1/keys", { key: K, body: { label: "ci smoke test", scopes: ["events:read"] } })
  ).data;
  await call("GET", "/v1/keys", { key: K, query: { limit: "2" } });
  await call("GET", "/v1/principals", { key: K, query: { limit: "2" } });

  // Coordination.
  const cpBody = {
    subject_id: "user-42",
    agent_id: "support-bot",
    kind: "task_state",
    state: JSON.stringify({ step: "confirm-order", order_id: "A-1009", retries: 1 }),
    ttl_seconds: 86400,
  };
  const cp = (await call("POST", "/v1/checkpoints", { key: K, body: cpBody })).data;
  await call("POST", "/v1/checkpoints", {
    key: K,
    body: { ...cpBody, state: JSON.stringify({ step: "send-receipt", order_id: "A-1009", retries: 0 }) },
  });
  await call("GET", "/v1/checkpoints", {
    key: K,
    query: { subject_id: "user-42", kind: "task_state", agent_id: "support-bot" },
  });
  await call("GET", "/v1/checkpoints/:id", { key: K, params: { id: cp.checkpoint_id } });
  const lease = (
    await call("POST", "/v1/leases", {
      key: K,
      body: { resource_type: "ticket", resource_id: "ticket-311", ttl_seconds: 600 },
    })
  ).data;
  await call("POST", "/v1/leases", {
    key: K,
    body: { resource_type: "ticket", resource_id: "ticket-311", ttl_seconds: 900 },
  });
  await call("GET", "/v1/leases", { key: K, query: { limit: "2" } });
  const helperLease = (
    await call("POST", "/v1/leases", {
      key: helper.key,
      body: { resource_type: "calendar", resource_id: "team-sync", ttl_seconds: 3600 },
    })
  ).data;
  await call("POST", "/v1/leases/:id/force-release", { key: K, params: { id: helperLease.lease_id }, body: {} });
  await call("DELETE", "/v1/leases/:id", { key: K, params: { id: lease.lease_id } });
  const hnd = (
    await call("POST", "/v1/handoffs", {
      key: K,
      body: {
        to_principal_id: helper.principal_id,
        context_id: ctx.context_id,
        checkpoint_id: cp.checkpoint_id,
        note: "Book the Thursday sync with user-42",
      },
    })
  ).data;
  await call("GET", "/v1/handoffs", { key: helper.key });
  await call("POST", "/v1/handoffs/:id/resolve", {
    key: helper.key,
    params: { id: hnd.handoff_id },
    body: { status: "accepted" },
  });

  // Events and webhooks.
  const events = (await call("GET", "/v1/events", { key: K, query: { limit: "2" } })).data;
  await call("GET", "/v1/events/:id", { key: K, params: { id: events.events[0].id } });
  const hook = (
    await call("POST", "/v1/webhooks", {
      key: K,
      body: {
        url: "https://hooks.example.com/svc-memory",
        secret: "whsec-2f1c9a7be04d4e1f",
        events: ["claim.materialized", "claim.superseded", "handoff.created"],
      },
    })
  ).data;
  // A hook to a closed local port fails every attempt (npm start runs with WEBHOOK_RETRY_SCHEDULE=1s,...).
  const dead = (
    await call("POST", "/v1/webhooks", {
      key: K,
      body: { url: "http://127.0.0.1:9/hook", secret: "whsec-0000000000000000", events: ["*"] },
    })
  ).data;
  await fetch(`${BASE}/v1/observations`, {
    method: "POST",
    headers: { authorization: `Bearer ${K}`, "content-type": "application/json" },
    body: JSON.stringify({
      subject_id: "user-77",
      kind: "event",
      content: "Signed up from the pricing page.",
      source: { type: "web" },
    }),
  });
  await call("GET", "/v1/webhooks", { key: K });
  await call("POST", "/v1/webhooks/deliver", { key: K, body: { limit: 50 } });
  await call("POST", "/v1/webhooks/:id/pause", { key: K, params: { id: hook.webhook_id }, body: {} });
  await call("POST", "/v1/webhooks/:id/resume", { key: K, params: { id: hook.webhook_id }, body: {} });
  let failed;
  for (let i = 0; i < 40 && !failed; i++) {
    await new Promise((r) => setTimeout(r, 1000));
    const r = await fetch(`${BASE}/v1/webhooks/${dead.webhook_id}/deliveries?limit=20`, {
      headers: { authorization: `Bearer ${K}` },
    });
    failed = (await r.json()).data.deliveries.find((d) => d.status === "failed");
  }
  await call("GET", "/v1/webhooks/:id/deliveries", { key: K, params: { id: dead.webhook_id }, query: { limit: "2" } });
  if (failed)
    await call("POST", "/v1/webhooks/:id/deliveries/:delivery_id/retry", {
      key: K,
      params: { id: dead.webhook_id, delivery_id: failed.id },
      body: {},
    });
  else failures.push("no delivery failed for good within 40 s: nothing to retry");
  await call("DELETE", "/v1/webhooks/:id", { key: K, params: { id: dead.webhook_id } });

  // Access.
  const ws = (await call("POST", "/v1/workspaces", { key: K, body: { name: "Customer success" } })).data;
  await call("GET", "/v1/workspaces", { key: K });
  const mb = (
    await call("POST", "/v1/memberships", {
      key: K,
      body: { principal_id: helper.principal_id, workspace_id: ws.workspace_id, role: "member" },
    })
  ).data;
  await call("GET", "/v1/memberships", { key: K, query: { workspace_id: ws.workspace_id } });
  await call("GET", "/v1/projects", { key: K });
  await call("GET", "/v1/projects/:id/references", {
    key: K,
    params: { id: project.project_id },
    query: { limit: "3" },
  });
  await call("GET", "/v1/subjects", { key: K });
  await call("GET", "/v1/subjects/:id/references", { key: K, params: { id: "user-42" }, query: { limit: "3" } });
  const grant = (
    await call("POST", "/v1/grants", {
      key: K,
      body: { principal_id: helper.principal_id, permissions: ["read"], subject: "user-42" },
    })
  ).data;
  await call("GET", "/v1/grants", { key: K });
  await call("POST", "/v1/access/simulate", {
    key: K,
    body: { principal_id: helper.principal_id, action: "read", record_id: claimTea },
  });

  // MCP.
  const mcpHeaders = { accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18" };
  await call("POST", "/mcp", {
    key: K,
    headers: mcpHeaders,
    raw: JSON.stringify({
      jsonrpc: "2.0",
      id: 7,
      method: "tools/call",
      params: { name: "svc_search", arguments: { query: "tea", subject_id: "user-42", limit: 2 } },
    }),
  });

  // Portability: export from the first organization, import into the second.
  await call("GET", "/v1/export", { key: K, query: { limit: "3" } });
  const exp = await call("GET", "/v1/export", { key: K, query: { limit: "500" } });
  // Record ids are unique across organizations: the second organization imports copies under fresh ids.
  const fresh = new Map();
  const lines =
    exp.text
      .trim()
      .split("\n")
      .slice(1)
      .join("\n")
      .replace(/\b(prj|obs|claim)_[0-9a-f]{32}\b/g, (id, prefix) => {
        if (!fresh.has(id))
          fresh.set(
            id,
            `${prefix}_${[...crypto.getRandomValues(new Uint8Array(16))].map((b) => b.toString(16).padStart(2, "0")).join("")}`,
          );
        return fresh.get(id);
      }) + "\n";
  await call("POST", "/v1/import", {
    key: org2.api_key,
    raw: lines,
    headers: { "content-type": "application/x-ndjson" },
  });
  // The same lines again: every record is there already (skipped), so 200.
  await call("POST", "/v1/import", {
    key: org2.api_key,
    raw: lines,
    headers: { "content-type": "application/x-ndjson" },
  });

  // Governance.
  await call("POST", "/v1/policies", {
    key: K,
    body: { type: "approval", name: "four eyes on preferences", rules: { separation_of_duty: true } },
  });
  const relPol = (
    await call("POST", "/v1/policies", {
      key: K,
      body: {
        type: "release",
        name: "releases need approval",
        rules: { separation_of_duty: false, require_approved_claim: false },
        status: "draft",
      },
    })
  ).data;
  await call("PATCH", "/v1/policies/:id", {
    key: K,
    params: { id: relPol.policy_id },
    body: { status: "active", expected_version: relPol.version },
  });
  await call("GET", "/v1/policies", { key: K, query: { limit: "2" } });
  const apr = (
    await call("POST", "/v1/claim-approvals", {
      key: K,
      body: { claim_id: claimSync, note: "Confirmed with the account manager." },
    })
  ).data;
  await call("GET", "/v1/claim-approvals", { key: K });
  const reviewer = (await call("POST", "/v1/keys", { key: K, body: { label: "reviewer", scopes: "*" } })).data;
  await call("POST", "/v1/memberships", { key: K, body: { principal_id: reviewer.principal_id, role: "admin" } });
  await call("POST", "/v1/claim-approvals/:id/decide", {
    key: reviewer.key,
    params: { id: apr.approval_id },
    body: { decision: "approved", note: "Matches the CRM ticket." },
  });
  const chan = (
    await call("POST", "/v1/channels", {
      key: K,
      body: {
        name: "help-center",
        audiences: ["public", "partners"],
        min_trust: "medium",
        gateway_principal_id: gateway.principal_id,
      },
    })
  ).data;
  await call("GET", "/v1/channels", { key: K });
  const rel = (
    await call("POST", "/v1/knowledge-releases", {
      key: K,
      body: { claim_id: claimGreen, channel_id: chan.channel_id },
    })
  ).data;
  await call("POST", "/v1/knowledge-releases/:id/approve", { key: K, params: { id: rel.release_id }, body: {} });
  await call("POST", "/v1/knowledge-releases/:id/activate", { key: K, params: { id: rel.release_id }, body: {} });
  await call("GET", "/v1/knowledge-releases", { key: K });
  await call("POST", "/v1/channels/:id/context/compile", {
    key: gateway.key,
    params: { id: chan.channel_id },
    body: { query: "morning tea", audience: "public", token_budget: 300 },
  });
  await call("POST", "/v1/knowledge-releases/:id/revoke", { key: K, params: { id: rel.release_id }, body: {} });
  await call("PATCH", "/v1/channels/:id", {
    key: K,
    params: { id: chan.channel_id },
    body: { status: "paused", expected_version: chan.version },
  });

  // Retention.
  const hold = (
    await call("POST", "/v1/legal-holds", {
      key: K,
      body: {
        target_type: "claim",
        target_id: claimCoffee,
        reason: "Dispute 2026-114: keep the record and its evidence.",
      },
    })
  ).data;
  await call("POST", "/v1/legal-holds/:id/release", { key: K, params: { id: hold.hold_id }, body: {} });
  await call("POST", "/v1/policies", {
    key: K,
    body: {
      type: "retention",
      name: "drop stale claims",
      rules: { rules: [{ record_type: "claim", max_age_days: 365 }] },
      status: "active",
    },
  });
  await call("POST", "/v1/retention/apply", { key: K, body: { limit: 100, dry_run: true } });
  const map = (
    await call("POST", "/v1/identity-mappings", {
      key: K,
      body: { external_system: "zendesk", external_id: "requester-88121", subject_id: "user-42" },
    })
  ).data;
  await call("GET", "/v1/identity-mappings", { key: K, query: { subject_id: "user-42" } });
  await call("DELETE", "/v1/identity-mappings/:id", { key: K, params: { id: map.mapping_id } });

  // Atlas, models, index.
  await call("POST", "/v1/memory-views/compile", { key: K, body: { lens: "evidence_trace", focus_id: claimTea } });
  await call("GET", "/v1/models/config", { key: K });
  await call("POST", "/v1/models/probe", { key: K, body: { kind: "embedding", text: "green tea in the morning" } });
  await call("POST", "/v1/index/drain", { key: K, body: { limit: 50 } });
  await call("POST", "/v1/index/verify", { key: K, body: {} });
  await call("POST", "/v1/enrichment/drain", { key: K, body: {} });

  // Federation: org lets org2 pull; org2 accepts pushes; both filter observations and claims.
  const secret = "fed-secret-7d2a9c41e8b0";
  const fedKey = (
    await call("POST", "/v1/keys", {
      key: K,
      body: { label: "federation", scopes: ["federation:read", "federation:write"] },
    })
  ).data;
  const fedKey2 = (
    await call("POST", "/v1/keys", {
      key: org2.api_key,
      body: { label: "federation", scopes: ["federation:read", "federation:write"] },
    })
  ).data;
  const peer = (
    await call("POST", "/v1/federation/peers", {
      key: K,
      body: {
        endpoint: "https://memory.partner.example",
        shared_secret: secret,
        direction: "bidirectional",
        label: "partner deployment",
      },
    })
  ).data;
  const peer2 = (
    await call("POST", "/v1/federation/peers", {
      key: org2.api_key,
      body: { endpoint: "https://memory.example.org", shared_secret: secret, direction: "push", label: "upstream" },
    })
  ).data;
  for (const [key, p] of [
    [K, peer.peer_id],
    [org2.api_key, peer2.peer_id],
  ]) {
    await call("POST", "/v1/federation/peers/:id/filters", {
      key,
      params: { id: p },
      body: { resource_type: "claim", include_kinds: ["preference", "fact"], min_trust: "medium" },
    });
    await call("POST", "/v1/federation/peers/:id/filters", {
      key,
      params: { id: p },
      body: { resource_type: "observation", exclude_subjects: ["internal-qa"] },
    });
  }
  await call("GET", "/v1/federation/peers", { key: K });
  await call("GET", "/v1/federation/peers/:id/filters", { key: K, params: { id: peer.peer_id } });
  const pullRaw = JSON.stringify({
    peer_id: peer.peer_id,
    sent_at: new Date().toISOString(),
    limit: 3,
    include_memory: true,
  });
  const pulled = await call("POST", "/v1/federation/pull", {
    key: fedKey.key,
    raw: pullRaw,
    headers: { "x-svc-peer-signature": sign(secret, pullRaw) },
  });
  const pushRaw = JSON.stringify({
    peer_id: peer2.peer_id,
    exchange_id: "sync-0b7e51d2",
    sent_at: new Date().toISOString(),
    events: pulled.data?.events ?? [],
    bundles: pulled.data?.bundles ?? [],
  });
  await call("POST", "/v1/federation/push", {
    key: fedKey2.key,
    raw: pushRaw,
    headers: { "x-svc-peer-signature": sign(secret, pushRaw) },
  });
  await call("GET", "/v1/federation/log", { key: K, query: { peer_id: peer.peer_id } });
  await call("POST", "/v1/federation/peers/:id/suspend", { key: K, params: { id: peer.peer_id }, body: {} });

  // Dashboard: a new operator, password change, passkey enrollment, both second factors.
  const acct = (
    await call("POST", "/v1/operator-accounts", {
      key: K,
      body: { username: "dana", role: "admin", display_name: "Dana Whitfield" },
    })
  ).data;
  const login = async (password) =>
    (await call("POST", "/v1/dashboard-sessions", { body: { username: "dana", password } })).data;
  const first = await login(acct.temporary_password);
  const password = "correct horse battery staple";
  await call("PATCH", "/v1/operator-accounts/current/password", {
    key: first.session_token,
    body: { current_password: acct.temporary_password, new_password: password },
  });
  const full = await login(password);
  const auth = new SoftAuthenticator(BASE.replace("127.0.0.1", "localhost"));
  const regOpts = (
    await call("POST", "/v1/operator-accounts/current/passkeys/options", { key: full.session_token, body: {} })
  ).data;
  const added = (
    await call("POST", "/v1/operator-accounts/current/passkeys", {
      key: full.session_token,
      body: { response: await auth.create(regOpts.options), name: "MacBook Touch ID" },
    })
  ).data;
  await call("GET", "/v1/operator-accounts/current/passkeys", { key: full.session_token });
  const codes = (
    await call("POST", "/v1/operator-accounts/current/recovery-codes", {
      key: full.session_token,
      body: { current_password: password },
    })
  ).data;
  const staged = await login(password);
  const asOpts = (
    await call("POST", "/v1/dashboard-sessions/current/passkey-options", { key: staged.session_token, body: {} })
  ).data;
  const upgraded = (
    await call("POST", "/v1/dashboard-sessions/current/passkey", {
      key: staged.session_token,
      body: { response: await auth.get(asOpts.options) },
    })
  ).data;
  const staged2 = await login(password);
  await call("POST", "/v1/dashboard-sessions/current/recovery-code", {
    key: staged2.session_token,
    body: { code: codes?.recovery_codes?.[0] },
  });
  await call("DELETE", "/v1/operator-accounts/current/passkeys/:id", {
    key: upgraded?.session_token,
    params: { id: added?.passkey_id },
    body: { current_password: password },
  });
  await call("DELETE", "/v1/dashboard-sessions/current", { key: upgraded?.session_token });

  // Deletions last.
  await call("DELETE", "/v1/checkpoints/:id", { key: K, params: { id: cp.checkpoint_id } });
  await call("DELETE", "/v1/grants/:id", { key: K, params: { id: grant.grant_id } });
  await call("DELETE", "/v1/memberships/:id", { key: K, params: { id: mb.membership_id } });
  await call("POST", "/v1/claims/:id/supersede", {
    key: K,
    params: { id: claimTea },
    body: { superseded_by: claimGreen, reason: "More specific: green tea." },
  });
  await call("POST", "/v1/claims/:id/expire", {
    key: K,
    params: { id: claimSync },
    body: { reason: "The sync moved to Fridays." },
  });
  await call("POST", "/v1/claims/:id/revoke", {
    key: K,
    params: { id: claimCoffee },
    body: { reason: "Recorded for the wrong customer." },
  });
  await call("DELETE", "/v1/observations/:id", { key: K, params: { id: o3.observation_id } });
  await call("GET", "/v1/audit", { key: K, query: { limit: "2" } });
  await call("GET", "/v1/audit/export", { key: K, query: { limit: "3" } });
  await call("DELETE", "/v1/keys/:id", { key: K, params: { id: throwaway.key_id } });
} catch (err) {
  failures.push(err.stack ?? String(err));
} finally {
  try {
    process.kill(-server.pid, "SIGTERM");
  } catch {}
  await new Promise((r) => setTimeout(r, 1000));
  rmSync(state, { recursive: true, force: true });
}
if (failures.length) {
  console.error(`capture-response-examples: ${failures.length} failure(s); nothing written\n${failures.join("\n")}`);
  process.exit(1);
}
writeFileSync(join(root, "src/docs/response-examples.json"), JSON.stringify(examples, null, 2) + "\n");
console.log(
  `capture-response-examples: ${Object.keys(examples).length} routes written to src/docs/response-examples.json`,
);
