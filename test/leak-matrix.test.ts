// The leak matrix: one organization holding a record of every kind a reader must not see, read by that
// reader through every read path. Each hidden record's ids, statements, contents and subjects must
// appear in no answer, and no count may include it; each path also shows a record the reader may see
// (so a path that answered nothing at all would not pass). Built once (beforeAll); each path is a case.
//
// Hidden from `viewer` (an organization member with every scope):
//   private source      a team claim's private source observation, written by another principal
//   workspace           a team observation and claims of a workspace's project the viewer is not in
//   retention           team records retention excluded (with their approval and releases)
//   rejected handoff    a context run and a checkpoint handed to the viewer, the handoff rejected
//   expired checkpoint  a checkpoint handed to the viewer by a pending handoff, since expired
//   revoked grant       private records the viewer read through a subject grant, since revoked
// Handoffs never expire (SPEC: pending, accepted, rejected); what expires is the checkpoint one carries.
import { beforeAll, beforeEach, describe, expect, it } from "vitest";
import { sign } from "../src/domains/federation/signing";
import { pullBody } from "../src/domains/federation/schema";
import { clock } from "../src/http/clock";
import { appendOk, call, consolidateOk, inOrg, mintKey, newOrg, obs, supports } from "./helpers";

type Key = Awaited<ReturnType<typeof mintKey>>;
/** How long after writing the fixture every path reads it (test/setup.ts resets the clock after each case). */
const ELAPSED_MS = 2 * 86_400_000;
const SECRET = "leak-matrix-peer-secret-0123456789";
/** Every statement and content holds these words, so every search, compile and vector query reaches every record. */
const WORDS = "ferry harbor schedule";

interface Fixture {
  org: Awaited<ReturnType<typeof newOrg>>;
  viewer: Key;
  author: Key;
  hookId: string;
  peerId: string;
  workspaceId: string;
  visible: {
    claim: string;
    evidence: string;
    disputed: string;
    released: string;
    releaseId: string;
    approval: string;
    run: string;
    subject: string;
  };
  hidden: { rejectedRun: string; rejectedCheckpoint: string; expiredCheckpoint: string; hiddenClaims: string[] };
  needles: Record<HiddenName, string[]>;
}

type HiddenName =
  | "private source"
  | "workspace"
  | "retention content"
  | "retention ids"
  | "rejected handoff"
  | "expired checkpoint"
  | "checkpoint state"
  | "revoked grant";

/**
 * Where a hidden record's needles may appear, and why. Events are the history of writes: retention
 * exclusion hides a record, not that it was written (SPEC lists what it hides), and a handoff's own
 * events tell its recipient what it carried.
 */
const SHOWN_IN: Partial<Record<HiddenName, { paths: string[]; why: string }>> = {
  "retention ids": {
    paths: ["events", "webhook deliveries"],
    why: "the events of records written before retention excluded them",
  },
  "rejected handoff": {
    paths: ["events", "webhook deliveries"],
    why: "the handoff's own events name the run and checkpoint it carried",
  },
  "expired checkpoint": {
    paths: ["events", "webhook deliveries"],
    why: "the handoff's own events name the checkpoint it carried",
  },
};

const post = (key: string, path: string, body: unknown) => call("POST", path, { key, body });
const ok = async (r: Promise<Awaited<ReturnType<typeof call>>>, status = [200, 201]) => {
  const x = await r;
  expect(status, `${x.status} ${x.text}`).toContain(x.status);
  return x.json.data;
};
const marker = (what: string) => `mk-${what}-${crypto.randomUUID().slice(0, 8)}`;

let f: Fixture;

async function build(): Promise<Fixture> {
  const org = await newOrg();
  const owner = org.api_key;
  const viewer = await mintKey(owner, { scopes: ["*"] });
  const author = await mintKey(owner, { scopes: ["*"] });
  const wsMember = await mintKey(owner, { scopes: ["*"] });
  const gateway = await mintKey(owner, { scopes: ["channel:compile"] });
  const hookId = (
    await ok(post(viewer.key, "/v1/webhooks", { url: "https://hooks.example.com/leak", secret: SECRET, events: ["*"] }))
  ).webhook_id;
  const peerId = (
    await ok(
      post(owner, "/v1/federation/peers", {
        endpoint: "https://peer.example.com",
        shared_secret: SECRET,
        direction: "pull",
      }),
    )
  ).peer_id;
  for (const resource_type of ["observation", "claim"])
    await ok(post(owner, `/v1/federation/peers/${peerId}/filters`, { resource_type }));
  const channel = (
    await ok(
      post(owner, "/v1/channels", {
        name: "leaks",
        audiences: ["public"],
        min_trust: "medium",
        gateway_principal_id: gateway.principal_id,
      }),
    )
  ).channel_id;
  const workspaceId = (await ok(post(owner, "/v1/workspaces", { name: "hidden-ws" }))).workspace_id;
  await ok(
    post(owner, "/v1/memberships", { principal_id: wsMember.principal_id, role: "member", workspace_id: workspaceId }),
  );
  const wsReference = marker("ws-project");
  const projectId = (
    await ok(post(owner, "/v1/projects/resolve", { reference: wsReference, create: true, workspace_id: workspaceId }))
  ).project_id;
  const text = (m: string) => `${WORDS} ${m}`;
  const release = async (claimId: string, active: boolean) => {
    const id = (await ok(post(owner, "/v1/knowledge-releases", { claim_id: claimId, channel_id: channel }))).release_id;
    if (active)
      for (const move of ["approve", "activate"]) await ok(post(owner, `/v1/knowledge-releases/${id}/${move}`, {}));
    return id as string;
  };
  const approval = async (key: string, claimId: string) =>
    (await ok(post(key, "/v1/claim-approvals", { claim_id: claimId }))).approval_id as string;

  // What the viewer may see: a team claim (one of whose sources is another principal's private one), a
  // disputed team claim, a released one, an approval, and a run handed to it by a pending handoff.
  const subject = "leak-s";
  const evidence = await appendOk(author.key, obs(subject, text(marker("visible-evidence"))));
  const privateContent = marker("private-source");
  const privateSource = await appendOk(author.key, obs(subject, text(privateContent), { visibility: "private" }));
  const claimMarker = marker("visible-claim");
  const [claim] = await consolidateOk(author.key, subject, [
    {
      kind: "fact",
      statement: text(claimMarker),
      visibility: "team",
      sources: [...supports(evidence), ...supports(privateSource)],
    },
  ]);
  const [disputed] = await consolidateOk(author.key, subject, [
    {
      kind: "fact",
      statement: text(marker("visible-disputed")),
      sources: [...supports(evidence), { observation_id: evidence, relation: "contradicts" }],
    },
  ]);
  const verified = await appendOk(owner, obs(subject, text(marker("visible-verified")), { trust: "verified" }));
  const [released] = await consolidateOk(owner, subject, [
    { kind: "fact", statement: text(marker("visible-released")), sources: supports(verified) },
  ]);
  const releaseId = await release(released, true);
  const visibleApproval = await approval(author.key, claim);

  // Another workspace's records, with an approval of one.
  const wsContent = marker("ws-content");
  const wsStatements = [marker("ws-statement"), marker("ws-disputed")];
  const wsObs = await appendOk(wsMember.key, obs("ws-subj", text(wsContent), { project_id: projectId }));
  const wsClaims = await call("POST", "/v1/consolidations", {
    key: wsMember.key,
    body: {
      subject_id: "ws-subj",
      project_id: projectId,
      claims: [
        { kind: "fact", statement: text(wsStatements[0]), sources: supports(wsObs) },
        {
          kind: "fact",
          statement: text(wsStatements[1]),
          sources: [{ observation_id: wsObs, relation: "contradicts" }],
        },
      ],
    },
  }).then((r) => {
    expect(r.status, r.text).toBe(201);
    return r.json.data.claims.map((c: { claim_id: string }) => c.claim_id) as string[];
  });
  const wsApproval = await approval(wsMember.key, wsClaims[0]);

  // Private records the viewer reads through a grant on their subject, until the grant is revoked.
  const grantedContent = marker("granted-content");
  const grantedStatement = marker("granted-statement");
  const grantedObs = await appendOk(author.key, obs("granted-subj", text(grantedContent), { visibility: "private" }));
  const [grantedClaim] = await consolidateOk(author.key, "granted-subj", [
    { kind: "fact", statement: text(grantedStatement), visibility: "private", sources: supports(grantedObs) },
  ]);
  const grantedApproval = await approval(author.key, grantedClaim);
  const grant = await ok(
    post(owner, "/v1/grants", { principal_id: viewer.principal_id, permissions: ["read"], subject: "granted-subj" }),
  );
  expect((await call("GET", `/v1/claims/${grantedClaim}/evidence`, { key: viewer.key })).status).toBe(200);
  await ok(call("DELETE", `/v1/grants/${grant.grant_id}`, { key: owner }));

  // Team records retention will exclude (kinds no other record here has), approved and released first.
  const excludedContent = marker("excluded-content");
  const excludedStatements = [marker("excluded-statement"), marker("excluded-disputed")];
  const excludedObs = await appendOk(
    owner,
    obs("excluded-subj", text(excludedContent), { kind: "document", trust: "verified" }),
  );
  const excludedClaims = await consolidateOk(owner, "excluded-subj", [
    { kind: "summary", statement: text(excludedStatements[0]), sources: supports(excludedObs) },
    {
      kind: "summary",
      statement: text(excludedStatements[1]),
      sources: [{ observation_id: excludedObs, relation: "contradicts" }],
    },
  ]);
  const excludedApproval = await approval(owner, excludedClaims[0]);
  const excludedReleases = [await release(excludedClaims[0], true), await release(excludedClaims[0], false)];

  // Runs and checkpoints handed to the viewer: one handoff rejected, one pending (its checkpoint expires).
  // Each run holds the visible claim alone (its marker's last word is in no other record, nor known to the embedder).
  const run = async () =>
    (await ok(post(author.key, "/v1/context/compile", { query: claimMarker.split("-").at(-1), token_budget: 2000 })))
      .context_id as string;
  const states = [marker("checkpoint-state"), marker("checkpoint-state")];
  const checkpoint = async (agent: string, state: string, ttl: number) =>
    (
      await ok(
        post(author.key, "/v1/checkpoints", {
          subject_id: subject,
          agent_id: agent,
          kind: "task_state",
          state,
          ttl_seconds: ttl,
        }),
      )
    ).checkpoint_id as string;
  const handoff = async (contextId: string, checkpointId: string) =>
    (
      await ok(
        post(author.key, "/v1/handoffs", {
          to_principal_id: viewer.principal_id,
          context_id: contextId,
          checkpoint_id: checkpointId,
        }),
      )
    ).handoff_id as string;
  const [rejectedRun, pendingRun] = [await run(), await run()];
  const rejectedCheckpoint = await checkpoint("a-rejected", states[0], 30 * 86_400);
  const expiredCheckpoint = await checkpoint("a-expiring", states[1], 60);
  // The expiry sweep never runs here: an alarm after the clock moved would delete the expired checkpoint,
  // and the matrix must find it a row the reads refuse, not a row that is gone.
  await inOrg(org.org_id, (o) =>
    o.db.run(
      "INSERT OR REPLACE INTO org_meta (name, value) VALUES ('job_due:expiry_sweep', ?)",
      String(Date.parse("2100-01-01")),
    ),
  );
  // Without a handoff neither run nor checkpoint is the viewer's; with one, both are, until the
  // rejection and the expiry: what hides them then is the live-handoff rule alone.
  for (const path of [
    `/v1/context/${rejectedRun}`,
    `/v1/checkpoints/${rejectedCheckpoint}`,
    `/v1/checkpoints/${expiredCheckpoint}`,
  ])
    expect((await call("GET", path, { key: viewer.key })).status, path).toBe(404);
  const rejected = await handoff(rejectedRun, rejectedCheckpoint);
  await handoff(pendingRun, expiredCheckpoint);
  for (const path of [
    `/v1/context/${rejectedRun}`,
    `/v1/checkpoints/${rejectedCheckpoint}`,
    `/v1/checkpoints/${expiredCheckpoint}`,
  ])
    expect((await call("GET", path, { key: viewer.key })).status, path).toBe(200);
  await ok(post(viewer.key, `/v1/handoffs/${rejected}/resolve`, { status: "rejected" }));

  // Two days on: the short checkpoint has expired, and the retention policy excludes the old summaries.
  clock.advance(ELAPSED_MS);
  await ok(
    post(owner, "/v1/policies", {
      type: "retention",
      name: "old summaries",
      status: "active",
      rules: {
        rules: [
          { record_type: "observation", max_age_days: 1, kinds: ["document"] },
          { record_type: "claim", max_age_days: 1, kinds: ["summary"] },
        ],
      },
    }),
  );
  const applied = await ok(post(owner, "/v1/retention/apply", { limit: 500 }));
  expect(applied).toMatchObject({ excluded: 3, done: true });
  // Every record into the vector index, so compile's vector hits take part.
  for (let i = 0; i < 20; i++) if ((await ok(post(owner, "/v1/index/drain", { limit: 100 }))).remaining === 0) break;

  clock.reset();
  return {
    org,
    viewer,
    author,
    hookId,
    peerId,
    workspaceId,
    visible: { claim, evidence, disputed, released, releaseId, approval: visibleApproval, run: pendingRun, subject },
    hidden: {
      rejectedRun,
      rejectedCheckpoint,
      expiredCheckpoint,
      hiddenClaims: [...wsClaims, ...excludedClaims, grantedClaim],
    },
    needles: {
      "private source": [privateSource, privateContent],
      workspace: [wsObs, ...wsClaims, wsContent, ...wsStatements, projectId, wsReference, "ws-subj", wsApproval],
      "retention content": [excludedContent, ...excludedStatements],
      "retention ids": [excludedObs, ...excludedClaims, excludedApproval, ...excludedReleases, "excluded-subj"],
      "rejected handoff": [rejectedRun, rejectedCheckpoint],
      "expired checkpoint": [expiredCheckpoint],
      "checkpoint state": states,
      "revoked grant": [grantedObs, grantedClaim, grantedContent, grantedStatement, grantedApproval, "granted-subj"],
    },
  };
}

const get = async (key: string, path: string) => {
  const r = await call("GET", path, { key });
  expect(r.status, `${path}: ${r.text}`).toBe(200);
  return r;
};
const view = async (key: string, body: Record<string, unknown>) => {
  const r = await call("POST", "/v1/memory-views/compile", { key, body: { max_nodes: 300, ...body } });
  expect(r.status, r.text).toBe(200);
  // Counts: every authorized node fits in 300, so nothing (hidden records above all) is counted as withheld.
  expect(r.json.data.withheld, JSON.stringify(body)).toEqual({ nodes: "0", edges: "0" });
  return r;
};
const mcp = async (key: string, name: string, args: unknown) => {
  const r = await call("POST", "/mcp", {
    key,
    raw: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args } }),
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-protocol-version": "2025-06-18",
    },
  });
  expect(r.status, r.text).toBe(200);
  expect(r.json.result.isError, r.text).toBe(false);
  return r.text;
};
/** Every page of a list: the answers' text, and their items. */
async function pages(key: string, path: string, list: string, cursor = "next_cursor", limit = 200) {
  let text = "";
  const data: any[] = [];
  for (let after: string | null = null, i = 0; i < 50; i++) {
    const r = await get(
      key,
      `${path}${path.includes("?") ? "&" : "?"}limit=${limit}${after ? `&after=${encodeURIComponent(after)}` : ""}`,
    );
    text += r.text;
    data.push(r.json.data);
    after = r.json.data[cursor];
    if (!after || !r.json.data[list].length || r.json.data.has_more === false) break;
  }
  return { text, items: data.flatMap((d) => d[list]) };
}

/** An Atlas lens that takes no argument, and what it must show the viewer. */
const lens = (name: string, shows: () => string): [string, () => Promise<string>] => [
  `atlas ${name}`,
  async () => {
    const r = await view(f.viewer.key, { lens: name });
    expect(r.text).toContain(shows());
    return r.text;
  },
];

const memories = (query: string) => pages(f.viewer.key, `/v1/memories${query}`, "items", "next_cursor", 100);

/** A read path: what the viewer receives, as text, after checking it shows what the viewer may see. */
const PATHS: [string, () => Promise<string>][] = [
  [
    "memories list",
    async () => {
      const text =
        (await memories("")).text + (await memories("?status=disputed")).text + (await memories("?kind=summary")).text;
      expect(text).toContain(f.visible.claim);
      expect(text).toContain(f.visible.disputed);
      return text;
    },
  ],
  [
    "memories search",
    async () => {
      const r = await memories(`?q=${encodeURIComponent(WORDS)}`);
      expect(r.items.map((c: { claim_id: string }) => c.claim_id)).toContain(f.visible.claim);
      return r.text;
    },
  ],
  [
    "compile",
    async () => {
      const r = await call("POST", "/v1/context/compile", {
        key: f.viewer.key,
        body: { query: WORDS, token_budget: 32_000, max_items: 200 },
      });
      expect(r.status, r.text).toBe(201);
      const items = r.json.data.items as { claim_id: string; tokens: number }[];
      expect(items.map((i) => i.claim_id)).toContain(f.visible.claim);
      expect(r.json.data.tokens_used).toBe(items.reduce((n, i) => n + i.tokens, 0));
      // The index holds every record (drained): vector hits took part, re-authorized for the viewer.
      expect(r.json.meta.degraded.vectors).toBe(false);
      return r.text;
    },
  ],
  [
    "evidence",
    async () => {
      const r = await get(f.viewer.key, `/v1/claims/${f.visible.claim}/evidence`);
      expect(r.json.data.supporting.map((o: { observation_id: string }) => o.observation_id)).toEqual([
        f.visible.evidence,
      ]);
      expect(r.json.data.hidden_source_count).toBe(1);
      let text = r.text;
      const missing = await call("GET", `/v1/claims/claim_${"0".repeat(32)}/evidence`, { key: f.viewer.key });
      for (const id of f.hidden.hiddenClaims) {
        const hidden = await call("GET", `/v1/claims/${id}/evidence`, { key: f.viewer.key });
        expect(hidden.status).toBe(404);
        expect(hidden.json.error).toEqual(missing.json.error);
        text += JSON.stringify(hidden.json.error);
      }
      return text;
    },
  ],
  [
    "context read",
    async () => {
      const r = await get(f.viewer.key, `/v1/context/${f.visible.run}`);
      expect(r.json.data.items.map((i: { claim_id: string }) => i.claim_id)).toContain(f.visible.claim);
      const rejected = await call("GET", `/v1/context/${f.hidden.rejectedRun}`, { key: f.viewer.key });
      expect(rejected.status).toBe(404);
      const feedback = await call("POST", `/v1/context/${f.hidden.rejectedRun}/feedback`, {
        key: f.viewer.key,
        body: { outcome: "useful" },
      });
      expect(feedback.status).toBe(404);
      return r.text + JSON.stringify(rejected.json.error) + JSON.stringify(feedback.json.error);
    },
  ],
  [
    "checkpoints",
    async () => {
      let text = "";
      for (const id of [f.hidden.rejectedCheckpoint, f.hidden.expiredCheckpoint]) {
        const r = await call("GET", `/v1/checkpoints/${id}`, { key: f.viewer.key });
        expect(r.status).toBe(404);
        text += JSON.stringify(r.json.error);
      }
      const latest = await call("GET", `/v1/checkpoints?subject_id=${f.visible.subject}&kind=task_state`, {
        key: f.viewer.key,
      });
      expect(latest.status).toBe(404);
      return text + latest.text;
    },
  ],
  [
    "export",
    async () => {
      const r = await call("GET", "/v1/export?limit=1000", { key: f.viewer.key });
      expect(r.status, r.text).toBe(200);
      const [header, ...lines] = r.text
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      expect(header.records).toBe(lines.length);
      expect(lines.map((l) => l.claim_id)).toContain(f.visible.claim);
      return r.text;
    },
  ],
  [
    "events",
    async () => {
      const { text } = await pages(f.viewer.key, "/v1/events", "events", "cursor");
      expect(text).toContain(f.visible.claim);
      return text;
    },
  ],
  [
    "webhook deliveries",
    async () => {
      const d = await call("POST", "/v1/webhooks/deliver", { key: f.viewer.key, body: { limit: 200 } });
      expect(d.status, d.text).toBe(200);
      const delivered = new Set(
        (await pages(f.viewer.key, `/v1/webhooks/${f.hookId}/deliveries`, "deliveries")).items.map(
          (x: { event_id: string }) => x.event_id,
        ),
      );
      // What each delivered event is about, read as the owner (a delivery names only its event).
      const events = (await pages(f.org.api_key, "/v1/events", "events", "cursor")).items.filter((e: { id: string }) =>
        delivered.has(e.id),
      );
      expect(events.length).toBe(delivered.size);
      const text = JSON.stringify(events);
      expect(text).toContain(f.visible.claim);
      return text;
    },
  ],
  [
    "MCP tools",
    async () => {
      const text =
        (await mcp(f.viewer.key, "svc_recall", { query: WORDS, token_budget: 32_000, max_items: 200 })) +
        (await mcp(f.viewer.key, "svc_search", { query: WORDS })) +
        (await mcp(f.viewer.key, "svc_search", {})) +
        (await mcp(f.viewer.key, "svc_evidence", { claim_id: f.visible.claim }));
      expect(text).toContain(f.visible.claim);
      expect(text).toContain(f.visible.evidence);
      return text;
    },
  ],
  [
    "atlas evidence_trace",
    async () => {
      const r = await view(f.viewer.key, { lens: "evidence_trace", focus_id: f.visible.claim });
      const ids = r.json.data.nodes.map((n: { id: string }) => n.id);
      expect(ids).toEqual(expect.arrayContaining([f.visible.claim, f.visible.evidence, f.visible.run]));
      let text = r.text;
      for (const id of f.hidden.hiddenClaims) {
        const hidden = await call("POST", "/v1/memory-views/compile", {
          key: f.viewer.key,
          body: { lens: "evidence_trace", focus_id: id },
        });
        expect(hidden.status).toBe(404);
        text += hidden.text;
      }
      return text;
    },
  ],
  [
    "atlas neighborhood",
    async () => {
      const r = await view(f.viewer.key, { lens: "neighborhood", subject_id: f.visible.subject });
      expect(r.text).toContain(f.visible.claim);
      let text = r.text;
      for (const subject of ["ws-subj", "excluded-subj", "granted-subj"]) {
        const hidden = await call("POST", "/v1/memory-views/compile", {
          key: f.viewer.key,
          body: { lens: "neighborhood", subject_id: subject },
        });
        expect(hidden.status).toBe(404);
        text += JSON.stringify(hidden.json.error);
      }
      return text;
    },
  ],
  lens("conflict_freshness", () => f.visible.disputed),
  [
    "atlas workspace_graph",
    async () => {
      const r = await view(f.viewer.key, { lens: "workspace_graph" });
      expect(r.text).toContain(f.visible.claim);
      const other = await call("POST", "/v1/memory-views/compile", {
        key: f.viewer.key,
        body: { lens: "workspace_graph", workspace_id: f.workspaceId },
      });
      expect(other.status).toBe(400);
      return r.text;
    },
  ],
  lens("review_queue", () => f.visible.approval),
  lens("scope_preview", () => `subject:${f.visible.subject}`),
  lens("knowledge_release", () => f.visible.releaseId),
  [
    "governance lists",
    async () => {
      const approvals = (await pages(f.viewer.key, "/v1/claim-approvals", "approvals")).text;
      const releases = (await pages(f.viewer.key, "/v1/knowledge-releases", "releases")).text;
      expect(approvals).toContain(f.visible.approval);
      expect(releases).toContain(f.visible.releaseId);
      return approvals + releases;
    },
  ],
  [
    "directories",
    async () => {
      const text =
        (await get(f.viewer.key, "/v1/projects?limit=200")).text +
        (await get(f.viewer.key, "/v1/subjects?limit=200")).text +
        (await get(f.viewer.key, `/v1/subjects/${f.visible.subject}/references?limit=200`)).text;
      expect(text).toContain(f.visible.claim);
      for (const subject of ["ws-subj", "excluded-subj", "granted-subj"])
        expect((await call("GET", `/v1/subjects/${subject}/references`, { key: f.viewer.key })).status).toBe(404);
      return text;
    },
  ],
  [
    "federation pull",
    async () => {
      // Signed like push whenever the contract asks pulls to carry sent_at (the header is harmless otherwise).
      let text = "";
      for (let i = 0; i < 20; i++) {
        const body = {
          peer_id: f.peerId,
          include_memory: true,
          ...("sent_at" in pullBody.shape ? { sent_at: clock.nowIso() } : {}),
        };
        const raw = JSON.stringify(body);
        const r = await call("POST", "/v1/federation/pull", {
          key: f.org.api_key,
          raw,
          headers: { "content-type": "application/json", "x-svc-peer-signature": sign(SECRET, raw) },
        });
        expect(r.status, r.text).toBe(200);
        text += r.text;
        if (!r.json.data.has_more) break;
      }
      expect(text).toContain(f.visible.released);
      return text;
    },
  ],
];

describe("leak matrix: a hidden record appears in no read path", () => {
  beforeAll(async () => {
    f = await build();
  }, 120_000);
  beforeEach(() => clock.advance(ELAPSED_MS));

  it("holds a needle for every kind of hidden record", async () => {
    expect(Object.keys(f.needles).sort()).toEqual([
      "checkpoint state",
      "expired checkpoint",
      "private source",
      "rejected handoff",
      "retention content",
      "retention ids",
      "revoked grant",
      "workspace",
    ]);
    for (const list of Object.values(f.needles)) for (const needle of list) expect(needle.length).toBeGreaterThan(5);
    // Each hidden record is still there to leak: the expired checkpoint was not swept away.
    const kept = await inOrg(f.org.org_id, (o) =>
      o.db.first("SELECT 1 AS kept FROM checkpoints WHERE checkpoint_id = ?", f.hidden.expiredCheckpoint),
    );
    expect(kept).toEqual({ kept: 1 });
  });

  it.each(PATHS)("%s", async (path, read) => {
    const text = await read();
    for (const [hidden, needles] of Object.entries(f.needles) as [HiddenName, string[]][]) {
      if (SHOWN_IN[hidden]?.paths.includes(path)) continue;
      for (const needle of needles) expect(text.includes(needle), `${path} shows ${hidden}: ${needle}`).toBe(false);
    }
  });
});
