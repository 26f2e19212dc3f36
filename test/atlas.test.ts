// The Memory Atlas (POST /v1/memory-views/compile) and workspaces that scope records.
import { describe, expect, it } from "vitest";
import { hashKey } from "../src/auth/credentials";
import { compileView } from "../src/domains/atlas/lenses";
import { atlasBody } from "../src/domains/atlas/schema";
import { loadCaller } from "../src/domains/identity/store";
import { insertClaim } from "../src/domains/memory/records";
import { newId } from "../src/http/ids";
import { clock } from "../src/http/clock";
import type { Db } from "../src/sql/db";
import {
  appendOk,
  call,
  type CallResult,
  consolidateOk,
  countingDb,
  expectError,
  inOrg,
  mintKey,
  newOrg,
  obs,
  supports,
} from "./helpers";

const DAY = 86_400_000;
const view = (key: string, body: Record<string, unknown>) => call("POST", "/v1/memory-views/compile", { key, body });
const viewOk = async (key: string, body: Record<string, unknown>) => {
  const r = await view(key, body);
  expect(r.status, r.text).toBe(200);
  return r.json.data as AtlasView;
};

interface AtlasView {
  lens: string;
  focus?: string;
  nodes: { id: string; type: string; label: string; status?: string }[];
  edges: { source: string; target: string; type: string }[];
  truncated: boolean;
  withheld: { nodes: string; edges: string };
}

const has = (v: AtlasView, source: string, target: string, type: string) =>
  v.edges.some((e) => e.source === source && e.target === target && e.type === type);
const ids = (v: AtlasView) => v.nodes.map((n) => n.id);
/** Every edge joins two nodes of the view, and nodes are unique. */
function wellFormed(v: AtlasView, maxNodes = 100) {
  const nodes = new Set(ids(v));
  expect(nodes.size).toBe(v.nodes.length);
  expect(v.nodes.length).toBeLessThanOrEqual(maxNodes);
  for (const e of v.edges) expect(nodes.has(e.source) && nodes.has(e.target), JSON.stringify(e)).toBe(true);
  for (const b of [v.withheld.nodes, v.withheld.edges]) expect(["0", "1-9", "10-99", "100+"]).toContain(b);
  expect(v.truncated).toBe(v.withheld.nodes !== "0" || v.withheld.edges !== "0");
}

async function member(
  ownerKey: string,
  role: "owner" | "admin" | "member" | "reader",
  workspace_id?: string,
  principal_id?: string,
) {
  const k = principal_id ? null : await mintKey(ownerKey, { scopes: ["*"] });
  const pid = principal_id ?? k!.principal_id;
  if (workspace_id || role !== "member") {
    const m = await call("POST", "/v1/memberships", {
      key: ownerKey,
      body: { principal_id: pid, role, ...(workspace_id ? { workspace_id } : {}) },
    });
    expect(m.status, m.text).toBe(201);
  }
  return k!;
}

const workspace = async (key: string, name: string) => {
  const w = await call("POST", "/v1/workspaces", { key, body: { name } });
  expect(w.status, w.text).toBe(201);
  return w.json.data.workspace_id as string;
};
const project = async (key: string, reference: string, workspace_id?: string) => {
  const p = await call("POST", "/v1/projects/resolve", {
    key,
    body: { reference, create: true, ...(workspace_id ? { workspace_id } : {}) },
  });
  expect(p.status, p.text).toBe(201);
  return p.json.data.project_id as string;
};

/** Rows SQLite reads for the key's view of `lens` at max_nodes 25, with the view (which must not change). */
const rowsReadByLens = (orgId: string, key: string, lens: string) =>
  inOrg(orgId, async (o) => {
    const caller = loadCaller(o.db, await hashKey(key))!;
    const counting = countingDb(o.db);
    const view = compileView(counting.db, caller, atlasBody.parse({ lens, max_nodes: 25 }));
    return { rowsRead: counting.rowsRead(), view };
  });

describe("Memory Atlas lenses", () => {
  it("evidence_trace: sources point at the claim, the claim at complete readable runs and current active releases", async () => {
    const org = await newOrg();
    const a = await appendOk(org.api_key, obs("trace", "amaranth supporting evidence"));
    const b = await appendOk(org.api_key, obs("trace", "amaranth contradicting evidence"));
    const q = await appendOk(org.api_key, obs("trace", "amaranth qualifying evidence"));
    const [c] = await consolidateOk(org.api_key, "trace", [
      {
        kind: "fact",
        statement: "amaranth claim",
        sources: [
          { observation_id: a, relation: "supports" },
          { observation_id: b, relation: "contradicts" },
          { observation_id: q, relation: "qualifies" },
        ],
      },
    ]);
    const ctx = (await call("POST", "/v1/context/compile", { key: org.api_key, body: { query: "amaranth" } })).json.data
      .context_id;
    const v = await viewOk(org.api_key, { lens: "evidence_trace", focus_id: c });
    wellFormed(v);
    expect(v.focus).toBe(c);
    expect(v.nodes.find((n) => n.id === c)).toMatchObject({ type: "claim", label: "amaranth claim", kind: "fact" });
    expect(has(v, a, c, "supports") && has(v, b, c, "contradicts") && has(v, q, c, "qualifies")).toBe(true);
    expect(has(v, c, ctx, "selected-in")).toBe(true);
    expect(v.nodes.find((n) => n.id === ctx)?.type).toBe("context");
    expect(v.withheld).toEqual({ nodes: "0", edges: "0" });
  });

  it("evidence_trace omits a run that is no longer completely readable", async () => {
    const org = await newOrg();
    const writer = await mintKey(org.api_key, { scopes: ["*"] });
    const reader = await mintKey(org.api_key, { scopes: ["*"] });
    const open = await appendOk(writer.key, obs("partial", "bergamot open"));
    const [openClaim] = await consolidateOk(writer.key, "partial", [
      { kind: "fact", statement: "bergamot open claim", sources: supports(open) },
    ]);
    const secret = await appendOk(writer.key, obs("partial", "bergamot secret", { visibility: "private" }));
    const [secretClaim] = await consolidateOk(writer.key, "partial", [
      { kind: "fact", statement: "bergamot secret claim", sources: supports(secret) },
    ]);
    const grant = await call("POST", "/v1/grants", {
      key: org.api_key,
      body: { principal_id: reader.principal_id, permissions: ["read"], subject: "partial" },
    });
    expect(grant.status, grant.text).toBe(201);
    const run = await call("POST", "/v1/context/compile", { key: reader.key, body: { query: "bergamot" } });
    expect(run.json.data.items.map((i: { claim_id: string }) => i.claim_id).sort()).toEqual(
      [openClaim, secretClaim].sort(),
    );
    expect(ids(await viewOk(reader.key, { lens: "evidence_trace", focus_id: openClaim }))).toContain(
      run.json.data.context_id,
    );
    expect((await call("DELETE", `/v1/grants/${grant.json.data.grant_id}`, { key: org.api_key })).status).toBe(200);
    const after = await viewOk(reader.key, { lens: "evidence_trace", focus_id: openClaim });
    expect(ids(after)).not.toContain(run.json.data.context_id);
    expect(JSON.stringify(after)).not.toContain(secretClaim);
    expect(after.withheld).toEqual({ nodes: "0", edges: "0" });
  });

  it("neighborhood: the subject's claims (about), related claims and subjects, contradicts and supersedes", async () => {
    const org = await newOrg();
    const shared = await appendOk(org.api_key, obs("hood", "shared evidence"));
    const [one, two] = await consolidateOk(org.api_key, "hood", [
      { kind: "fact", statement: "hood one", sources: supports(shared) },
      { kind: "fact", statement: "hood two", sources: supports(shared) },
    ]);
    const [elsewhere] = await consolidateOk(org.api_key, "elsewhere", [
      { kind: "fact", statement: "elsewhere", sources: supports(shared) },
    ]);
    const [disputer] = await consolidateOk(org.api_key, "hood", [
      {
        kind: "fact",
        statement: "hood disputer",
        sources: [
          { observation_id: await appendOk(org.api_key, obs("hood", "d")), relation: "supports" },
          { claim_id: one, relation: "contradicts" },
        ],
      },
    ]);
    const [newer] = await consolidateOk(org.api_key, "hood", [
      { kind: "fact", statement: "hood newer", sources: supports(await appendOk(org.api_key, obs("hood", "n"))) },
    ]);
    expect(
      (await call("POST", `/v1/claims/${two}/supersede`, { key: org.api_key, body: { superseded_by: newer } })).status,
    ).toBe(200);
    const v = await viewOk(org.api_key, { lens: "neighborhood", subject_id: "hood" });
    wellFormed(v);
    expect(v.focus).toBe("subject:hood");
    for (const c of [one, two, disputer, newer]) expect(has(v, c, "subject:hood", "about"), c).toBe(true);
    expect(has(v, [one, two].sort()[0], [one, two].sort()[1], "related")).toBe(true);
    expect(ids(v)).toContain("subject:elsewhere");
    expect(ids(v)).not.toContain(elsewhere);
    expect(
      has(
        v,
        ["hood", "elsewhere"].sort().map((s) => `subject:${s}`)[0],
        ["hood", "elsewhere"].sort().map((s) => `subject:${s}`)[1],
        "related",
      ),
    ).toBe(true);
    expect(has(v, disputer, one, "contradicts")).toBe(true);
    expect(has(v, newer, two, "supersedes")).toBe(true);
    expectError(await view(org.api_key, { lens: "neighborhood", subject_id: "nobody-at-all" }), 404, "NOT_FOUND");
  });

  it("conflict_freshness: disputed claims, what contradicts them, and claims near valid_to", async () => {
    const org = await newOrg();
    const [target] = await consolidateOk(org.api_key, "cf", [
      { kind: "fact", statement: "cf target", sources: supports(await appendOk(org.api_key, obs("cf", "t"))) },
    ]);
    const against = await appendOk(org.api_key, obs("cf", "against"));
    const [disputer] = await consolidateOk(org.api_key, "cf", [
      {
        kind: "fact",
        statement: "cf disputer",
        sources: [
          { observation_id: against, relation: "contradicts" },
          { claim_id: target, relation: "contradicts" },
        ],
      },
    ]);
    const soon = new Date(Date.now() + 2 * 86_400_000).toISOString();
    const late = new Date(Date.now() + 30 * 86_400_000).toISOString();
    const [expiring, lasting] = await consolidateOk(org.api_key, "cf", [
      {
        kind: "fact",
        statement: "cf expiring",
        valid_to: soon,
        sources: supports(await appendOk(org.api_key, obs("cf", "e"))),
      },
      {
        kind: "fact",
        statement: "cf lasting",
        valid_to: late,
        sources: supports(await appendOk(org.api_key, obs("cf", "l"))),
      },
    ]);
    const v = await viewOk(org.api_key, { lens: "conflict_freshness" });
    wellFormed(v);
    expect(v.nodes.find((n) => n.id === target)?.status).toBe("disputed");
    expect(has(v, disputer, target, "contradicts")).toBe(true);
    expect(ids(v)).toContain(expiring);
    expect(ids(v)).not.toContain(lasting);
    // a contradicting observation makes the disputer itself disputed: its evidence points at it
    expect(v.nodes.find((n) => n.id === disputer)?.status).toBe("disputed");
    expect(has(v, against, disputer, "contradicts")).toBe(true);
  });

  it("workspace_graph: claim and subject nodes of a workspace or of the organization, bounded by max_nodes", async () => {
    const org = await newOrg();
    const w = await workspace(org.api_key, "graph");
    const p = await project(org.api_key, "graph-project", w);
    const inside = await appendOk(org.api_key, obs("wg", "inside", { project_id: p }));
    const [c1, c2] = await consolidateOk(org.api_key, "wg", [
      { kind: "fact", statement: "wg one", sources: supports(inside) },
      { kind: "fact", statement: "wg two", sources: supports(inside) },
    ]);
    const r = await call("POST", "/v1/consolidations", {
      key: org.api_key,
      body: {
        subject_id: "wg",
        project_id: p,
        claims: [{ kind: "fact", statement: "wg scoped", sources: supports(inside) }],
      },
    });
    expect(r.status, r.text).toBe(201);
    const scoped = r.json.data.claims[0].claim_id;
    const [outside] = await consolidateOk(org.api_key, "wg-out", [
      { kind: "fact", statement: "wg outside", sources: supports(await appendOk(org.api_key, obs("wg-out", "o"))) },
    ]);
    const ws = await viewOk(org.api_key, { lens: "workspace_graph", workspace_id: w });
    wellFormed(ws);
    expect(ids(ws).sort()).toEqual([scoped, "subject:wg"].sort());
    expect(has(ws, scoped, "subject:wg", "about")).toBe(true);
    const all = await viewOk(org.api_key, { lens: "workspace_graph" });
    for (const c of [c1, c2, scoped, outside]) expect(ids(all)).toContain(c);
    expect(has(all, [c1, c2].sort()[0], [c1, c2].sort()[1], "related")).toBe(true);
    // bounds: 40 more claims on one subject, max_nodes 25
    const many = await appendOk(org.api_key, obs("wg-many", "m"));
    await consolidateOk(
      org.api_key,
      "wg-many",
      Array.from({ length: 40 }, (_, i) => ({ kind: "fact", statement: `many ${i}`, sources: supports(many) })),
    );
    const bounded = await viewOk(org.api_key, { lens: "workspace_graph", max_nodes: 25 });
    wellFormed(bounded, 25);
    expect(bounded.nodes).toHaveLength(25);
    expect(bounded.truncated).toBe(true);
    expect(bounded.withheld.nodes).toBe("10-99"); // 44 claims + 3 subjects authorized, 25 shown
    expect(bounded.withheld.edges).not.toBe("0");
    expectError(
      await view(org.api_key, { lens: "workspace_graph", workspace_id: `wsp_${"0".repeat(32)}` }),
      400,
      "UNRESOLVED_REFERENCE",
    );
  });

  it("review_queue: pending approvals, disputed claims; scope_preview: readable projects and subjects", async () => {
    const org = await newOrg();
    const p = await project(org.api_key, "preview");
    await appendOk(org.api_key, obs("rq", "x", { project_id: p }));
    const [c] = await consolidateOk(org.api_key, "rq", [
      { kind: "fact", statement: "rq claim", sources: supports(await appendOk(org.api_key, obs("rq", "y"))) },
    ]);
    const a = await call("POST", "/v1/claim-approvals", { key: org.api_key, body: { claim_id: c } });
    expect(a.status, a.text).toBe(201);
    const rq = await viewOk(org.api_key, { lens: "review_queue" });
    wellFormed(rq);
    expect(rq.nodes.find((n) => n.id === a.json.data.approval_id)).toMatchObject({
      type: "approval",
      status: "pending",
    });
    expect(has(rq, c, a.json.data.approval_id, "submitted-as")).toBe(true);
    const sp = await viewOk(org.api_key, { lens: "scope_preview" });
    wellFormed(sp);
    expect(sp.nodes.find((n) => n.id === p)).toMatchObject({ type: "project", label: "preview" });
    expect(ids(sp)).toContain("subject:rq");
    const kr = await viewOk(org.api_key, { lens: "knowledge_release" });
    wellFormed(kr);
    expectError(
      await view(org.api_key, { lens: "knowledge_release", channel_id: `chn_${"0".repeat(32)}` }),
      400,
      "UNRESOLVED_REFERENCE",
    );
  });

  it("governance nodes only for keys that could list them: approvals need approvals:read, releases and channels releases:read", async () => {
    const org = await newOrg();
    const gw = await mintKey(org.api_key, { scopes: ["channel:compile"] });
    const [c] = await consolidateOk(org.api_key, "gov-atlas", [
      {
        kind: "fact",
        statement: "gov atlas claim",
        sources: supports(await appendOk(org.api_key, obs("gov-atlas", "e", { trust: "verified" }))),
      },
    ]);
    const approval = (await call("POST", "/v1/claim-approvals", { key: org.api_key, body: { claim_id: c } })).json.data
      .approval_id as string;
    const ch = await call("POST", "/v1/channels", {
      key: org.api_key,
      body: {
        name: "gov-atlas-channel",
        audiences: ["public"],
        min_trust: "low",
        gateway_principal_id: gw.principal_id,
      },
    });
    expect(ch.status, ch.text).toBe(201);
    const channel = ch.json.data.channel_id as string;
    const rel = await call("POST", "/v1/knowledge-releases", {
      key: org.api_key,
      body: { claim_id: c, channel_id: channel },
    });
    expect(rel.status, rel.text).toBe(201);
    const release = rel.json.data.release_id as string;

    const all = await viewOk(org.api_key, { lens: "review_queue" });
    expect(ids(all)).toEqual(expect.arrayContaining([approval, release]));
    expect(ids(await viewOk(org.api_key, { lens: "knowledge_release" }))).toContain(channel);

    const viewsOnly = await mintKey(org.api_key, { scopes: ["views:compile"] });
    // Not even the claim under review appears (undisputed, it would only be there because of them).
    expect(ids(await viewOk(viewsOnly.key, { lens: "review_queue" }))).not.toContain(c);
    for (const lens of ["review_queue", "knowledge_release"]) {
      const v = await viewOk(viewsOnly.key, { lens });
      wellFormed(v);
      for (const hidden of [approval, release, channel, "gov-atlas-channel"])
        expect(JSON.stringify(v), lens).not.toContain(hidden);
      expect(v.withheld).toEqual({ nodes: "0", edges: "0" });
    }
    // A channel id it cannot list is as unknown as a random one.
    const unknown = await view(viewsOnly.key, { lens: "knowledge_release", channel_id: `chn_${"0".repeat(32)}` });
    const known = await view(viewsOnly.key, { lens: "knowledge_release", channel_id: channel });
    expectError(known, 400, "UNRESOLVED_REFERENCE");
    expect(known.json.error.message.replace(channel, "ID")).toBe(
      unknown.json.error.message.replace(`chn_${"0".repeat(32)}`, "ID"),
    );

    const approver = await mintKey(org.api_key, { scopes: ["views:compile", "approvals:read"] });
    const v = await viewOk(approver.key, { lens: "review_queue" });
    expect(ids(v)).toContain(approval);
    expect(ids(v)).not.toContain(release);
  });

  it("review_queue: pending enrichment proposals from readable observations", async () => {
    const org = await newOrg();
    const writer = await mintKey(org.api_key, { scopes: ["*"] });
    const open = await appendOk(writer.key, obs("prop", "narwhal open evidence"));
    const secret = await appendOk(writer.key, obs("prop", "narwhal secret evidence", { visibility: "private" }));
    expect((await viewOk(org.api_key, { lens: "review_queue" })).nodes.map((n) => n.type)).not.toContain("proposal");
    // Rows as enrichment drain writes them (DESIGN: candidate claims for review, never canonical).
    const [seen, hiddenProposal] = [`prop_${"1".repeat(32)}`, `prop_${"2".repeat(32)}`];
    await inOrg(org.org_id, (o) => {
      const at = new Date().toISOString();
      o.db.run(
        "INSERT INTO enrichment_proposals VALUES (?, ?, 'prop', 'fact', 'narwhal proposed claim', 'pending', 'test', ?)",
        seen,
        open,
        at,
      );
      o.db.run(
        "INSERT INTO enrichment_proposals VALUES (?, ?, 'prop', 'fact', 'narwhal hidden proposal', 'pending', 'test', ?)",
        hiddenProposal,
        secret,
        at,
      );
    });
    const v = await viewOk(org.api_key, { lens: "review_queue" });
    wellFormed(v);
    expect(v.nodes.find((n) => n.id === seen)).toMatchObject({
      type: "proposal",
      label: "narwhal proposed claim",
      status: "pending",
      kind: "fact",
    });
    expect(has(v, open, seen, "proposed-as")).toBe(true);
    expect(JSON.stringify(v)).not.toContain(hiddenProposal);
    expect(JSON.stringify(v)).not.toContain("narwhal hidden");
    expect(v.withheld).toEqual({ nodes: "0", edges: "0" });
    expect(ids(await viewOk(writer.key, { lens: "review_queue" }))).toContain(hiddenProposal);
  });

  it("workspace_graph costs what the caller may read, not the claims it cannot (rows read stay flat)", async () => {
    const org = await newOrg();
    const writer = await mintKey(org.api_key, { scopes: ["*"] });
    const reader = await mintKey(org.api_key, { scopes: ["*"] });
    const open = await appendOk(writer.key, obs("cost", "open evidence"));
    await consolidateOk(
      writer.key,
      "cost",
      Array.from({ length: 30 }, (_, i) => ({ kind: "fact", statement: `open ${i}`, sources: supports(open) })),
    );
    const measure = () => rowsReadByLens(org.org_id, reader.key, "workspace_graph");
    const before = await measure();
    // 2,000 newer claims the reader cannot see: another principal's private ones.
    // (Written with the records module's own writer: 2,000 consolidations would only slow the test.)
    const secret = await appendOk(writer.key, obs("cost", "secret evidence", { visibility: "private" }));
    await inOrg(org.org_id, (o) => {
      const at = clock.nowIso();
      for (let i = 0; i < 2000; i++)
        insertClaim(
          o.db,
          {
            claim_id: newId("claim_"),
            subject_id: "cost-hidden",
            project_id: null,
            kind: "fact",
            statement: `secret ${i}`,
            status: "active",
            visibility: "private",
            trust: "medium",
            version: 1,
            valid_from: at,
            valid_to: null,
            superseded_by: null,
            disputes: "[]",
            author_id: writer.principal_id,
            created_at: at,
            updated_at: at,
          },
          supports(secret),
        );
    });
    const after = await measure();
    expect(after.view).toEqual(before.view);
    expect(after.rowsRead, `rows read ${before.rowsRead} -> ${after.rowsRead}`).toBeLessThan(before.rowsRead + 200);
  }, 60_000);

  it("scope_preview reads subjects in order up to its LIMIT, not every record (rows read stay flat)", async () => {
    const org = await newOrg();
    const writer = await mintKey(org.api_key, { scopes: ["*"] });
    const reader = await mintKey(org.api_key, { scopes: ["*"] });
    // More readable subjects of observations and of claims than the LIMIT (max_nodes + 100), written
    // directly: 130 appends and consolidations would only slow the test.
    const observe = (o: { db: Db }, subject: string, visibility: string) => {
      const id = newId("obs_");
      o.db.run(
        `INSERT INTO observations (observation_id, subject_id, project_id, kind, content, content_hash, source_type, source_ref, trust,
          visibility, author_id, created_at, purged_at) VALUES (?, ?, NULL, 'note', 'filler', 'h', 'test', 'r', 'medium', ?, ?, ?, NULL)`,
        id,
        subject,
        visibility,
        writer.principal_id,
        clock.nowIso(),
      );
      return id;
    };
    const claim = (o: { db: Db }, subject_id: string, visibility: string, source: string) => {
      const at = clock.nowIso();
      insertClaim(
        o.db,
        {
          claim_id: newId("claim_"),
          subject_id,
          project_id: null,
          kind: "fact",
          statement: `about ${subject_id}`,
          status: "active",
          visibility,
          trust: "medium",
          version: 1,
          valid_from: at,
          valid_to: null,
          superseded_by: null,
          disputes: "[]",
          author_id: writer.principal_id,
          created_at: at,
          updated_at: at,
        },
        supports(source),
      );
    };
    await inOrg(org.org_id, (o) => {
      for (let i = 0; i < 130; i++)
        claim(
          o,
          `scope-${String(i).padStart(3, "0")}`,
          "team",
          observe(o, `scope-${String(i).padStart(3, "0")}`, "team"),
        );
    });
    const measure = () => rowsReadByLens(org.org_id, reader.key, "scope_preview");
    const before = await measure();
    // 2,000 records in subjects sorting after the page, readable or not: claims and observations.
    await inOrg(org.org_id, (o) => {
      for (let i = 0; i < 1000; i++)
        claim(o, `zz-scope-${i}`, i % 2 ? "private" : "team", observe(o, `zz-scope-${i}`, i % 2 ? "team" : "private"));
    });
    const after = await measure();
    expect(after.view).toEqual(before.view);
    expect(after.rowsRead, `rows read ${before.rowsRead} -> ${after.rowsRead}`).toBeLessThan(before.rowsRead + 200);
  }, 60_000);

  it("legal holds: active holds on the view's records, as hold nodes for hold administrators only", async () => {
    const org = await newOrg();
    const a = await appendOk(org.api_key, obs("held", "ocelot held evidence"));
    const [c] = await consolidateOk(org.api_key, "held", [
      { kind: "fact", statement: "ocelot held claim", sources: supports(a) },
    ]);
    const hold = async (target_type: string, target_id: string, reason: string) => {
      const r = await call("POST", "/v1/legal-holds", { key: org.api_key, body: { target_type, target_id, reason } });
      expect(r.status, r.text).toBe(201);
      return r.json.data.hold_id as string;
    };
    const onClaim = await hold("claim", c, "litigation 42: preserve the ocelot claim");
    const onSource = await hold("observation", a, "regulator request 7");
    const released = await hold("claim", c, "an earlier matter");
    expect((await call("POST", `/v1/legal-holds/${released}/release`, { key: org.api_key })).status).toBe(200);

    const v = await viewOk(org.api_key, { lens: "evidence_trace", focus_id: c });
    wellFormed(v);
    expect(v.nodes.find((n) => n.id === onClaim)).toEqual({
      id: onClaim,
      type: "hold",
      label: "litigation 42: preserve the ocelot claim",
      status: "active",
    });
    expect(v.nodes.find((n) => n.id === onSource)).toMatchObject({ type: "hold", label: "regulator request 7" });
    expect(has(v, onClaim, c, "holds") && has(v, onSource, a, "holds")).toBe(true);
    expect(ids(v)).not.toContain(released);
    // Every lens that draws the held records draws their holds.
    expect(has(await viewOk(org.api_key, { lens: "neighborhood", subject_id: "held" }), onClaim, c, "holds")).toBe(
      true,
    );
    expect(has(await viewOk(org.api_key, { lens: "workspace_graph" }), onClaim, c, "holds")).toBe(true);

    // Not for a member, nor for an owner's key without retention:write: no node, edge or count.
    const memberKey = await mintKey(org.api_key, { scopes: ["*"] });
    const narrowOwnerKey = await mintKey(org.api_key, {
      scopes: ["views:compile"],
      principal_id: (await call("GET", "/v1/principal", { key: org.api_key })).json.data.principal_id,
    });
    for (const key of [memberKey.key, narrowOwnerKey.key]) {
      const seen = await viewOk(key, { lens: "evidence_trace", focus_id: c });
      expect(seen.nodes.map((n) => n.type)).not.toContain("hold");
      expect(JSON.stringify(seen)).not.toContain("hold_");
      expect(seen.withheld).toEqual({ nodes: "0", edges: "0" });
    }
    // Releasing the last hold on a record takes its node away.
    expect((await call("POST", `/v1/legal-holds/${onClaim}/release`, { key: org.api_key })).status).toBe(200);
    expect(ids(await viewOk(org.api_key, { lens: "evidence_trace", focus_id: c }))).not.toContain(onClaim);
  });

  it("validates every field, and lens arguments belong to their lens", async () => {
    const org = await newOrg();
    const bad: [Record<string, unknown>, string][] = [
      [{ lens: "panorama" }, "lens"],
      [{ lens: "evidence_trace" }, "focus_id"],
      [{ lens: "neighborhood" }, "subject_id"],
      [{ lens: "workspace_graph", max_nodes: 24 }, "max_nodes"],
      [{ lens: "workspace_graph", max_nodes: 301 }, "max_nodes"],
      [{ lens: "workspace_graph", max_nodes: 30.5 }, "max_nodes"],
      [{ lens: "scope_preview", focus_id: "claim_x" }, "focus_id"],
      [{ lens: "review_queue", extra: 1 }, "extra"],
      [{}, "lens"],
    ];
    for (const [body, field] of bad) {
      const r = await view(org.api_key, body);
      expectError(r, 400, "VALIDATION_ERROR");
      expect(r.json.error.message, JSON.stringify(body)).toContain(field);
    }
    const r = await view(org.api_key, { lens: "panorama" });
    expect(r.json.error.message).toContain("evidence_trace");
    const noScope = await mintKey(org.api_key, { scopes: ["events:read"] });
    expectError(await view(noScope.key, { lens: "scope_preview" }), 403, "FORBIDDEN");
  });
});

describe("Memory Atlas leaks nothing", () => {
  it("no lens shows a hidden id or label, and hidden records change no view", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const writer = await member(org.api_key, "member");
    const reader = await member(org.api_key, "member");
    // Readable material: a subject with evidence, claims sharing sources, a dispute, a run, an approval.
    const seen = await appendOk(writer.key, obs("leak", "visible evidence"));
    const [x, y] = await consolidateOk(writer.key, "leak", [
      { kind: "fact", statement: "visible x", sources: supports(seen) },
      { kind: "fact", statement: "visible y", sources: supports(seen) },
    ]);
    await consolidateOk(writer.key, "leak", [
      {
        kind: "fact",
        statement: "visible disputer",
        sources: [
          { observation_id: await appendOk(writer.key, obs("leak", "v2")), relation: "supports" },
          { claim_id: x, relation: "contradicts" },
        ],
      },
    ]);
    await call("POST", "/v1/context/compile", { key: reader.key, body: { query: "visible" } });
    expect((await call("POST", "/v1/claim-approvals", { key: writer.key, body: { claim_id: y } })).status).toBe(201);

    const lenses: Record<string, unknown>[] = [
      { lens: "evidence_trace", focus_id: x },
      { lens: "evidence_trace", focus_id: y },
      { lens: "neighborhood", subject_id: "leak" },
      { lens: "conflict_freshness" },
      { lens: "workspace_graph" },
      { lens: "review_queue" },
      { lens: "scope_preview" },
      { lens: "knowledge_release" },
    ];
    const snapshot = async () =>
      Promise.all(lenses.map(async (b) => (await view(reader.key, { ...b, max_nodes: 25 })).json.data));
    const before = await snapshot();

    // Hidden material, one row per way a record can be hidden from the reader.
    const hiddenW = await workspace(org.api_key, "hidden-ws");
    const hiddenP = await project(org.api_key, "hidden-ws-project", hiddenW);
    const hidden: { why: string; ids: string[]; labels: string[] }[] = [];
    {
      const o = await appendOk(writer.key, obs("leak", "zirconium private evidence", { visibility: "private" }));
      const [c] = await consolidateOk(writer.key, "leak", [
        {
          kind: "fact",
          statement: "zirconium private claim",
          visibility: "private",
          sources: [
            { observation_id: o, relation: "supports" },
            { observation_id: seen, relation: "supports" },
          ],
        },
      ]);
      const [d] = await consolidateOk(writer.key, "leak", [
        {
          kind: "fact",
          statement: "zirconium private disputer",
          visibility: "private",
          sources: [
            { observation_id: o, relation: "supports" },
            { claim_id: x, relation: "contradicts" },
          ],
        },
      ]);
      const a = await call("POST", "/v1/claim-approvals", { key: writer.key, body: { claim_id: c } });
      expect(a.status, a.text).toBe(201);
      hidden.push({
        why: "private records of another principal (sharing a readable source, disputing a readable claim, pending approval)",
        ids: [o, c, d, a.json.data.approval_id],
        labels: ["zirconium"],
      });
    }
    {
      const o = await appendOk(org.api_key, obs("leak-ws", "yttrium workspace evidence", { project_id: hiddenP }));
      const r = await call("POST", "/v1/consolidations", {
        key: org.api_key,
        body: {
          subject_id: "leak",
          project_id: hiddenP,
          claims: [
            {
              kind: "fact",
              statement: "yttrium workspace claim",
              sources: [
                { observation_id: o, relation: "supports" },
                { observation_id: seen, relation: "supports" },
              ],
            },
          ],
        },
      });
      expect(r.status, r.text).toBe(201);
      hidden.push({
        why: "team records of a workspace the reader is not in",
        ids: [o, r.json.data.claims[0].claim_id, hiddenP, "subject:leak-ws"],
        labels: ["yttrium", "hidden-ws-project"],
      });
    }
    {
      const run = await call("POST", "/v1/context/compile", { key: writer.key, body: { query: "visible" } });
      hidden.push({ why: "another principal's context run", ids: [run.json.data.context_id], labels: [] });
    }
    {
      // Readable to the reader in every other way (team, no workspace), then excluded by retention:
      // evidence, a claim sharing a readable source and awaiting approval, a claim disputing a readable
      // claim, and a subject known only through them.
      const o = await appendOk(writer.key, obs("leak-retained", "wolfram retained evidence", { kind: "event" }));
      const [c] = await consolidateOk(writer.key, "leak", [
        {
          kind: "decision",
          statement: "wolfram retained claim",
          sources: [
            { observation_id: o, relation: "supports" },
            { observation_id: seen, relation: "supports" },
          ],
        },
      ]);
      const [d] = await consolidateOk(writer.key, "leak", [
        {
          kind: "decision",
          statement: "wolfram retained disputer",
          sources: [
            { observation_id: o, relation: "supports" },
            { claim_id: x, relation: "contradicts" },
          ],
        },
      ]);
      const a = await call("POST", "/v1/claim-approvals", { key: writer.key, body: { claim_id: c } });
      expect(a.status, a.text).toBe(201);
      expect(JSON.stringify(await viewOk(reader.key, { lens: "neighborhood", subject_id: "leak" }))).toContain(
        "wolfram",
      );
      const policy = await call("POST", "/v1/policies", {
        key: org.api_key,
        body: {
          type: "retention",
          name: "atlas-leak",
          status: "active",
          rules: {
            rules: [
              { record_type: "observation", max_age_days: 30, kinds: ["event"] },
              { record_type: "claim", max_age_days: 30, kinds: ["decision"] },
            ],
          },
        },
      });
      expect(policy.status, policy.text).toBe(201);
      clock.advance(40 * DAY);
      try {
        const applied = await call("POST", "/v1/retention/apply", { key: org.api_key, body: {} });
        expect(applied.json.data, applied.text).toMatchObject({ excluded: 3, done: true });
      } finally {
        clock.advance(-40 * DAY);
      }
      hidden.push({
        why: "records excluded by retention",
        ids: [o, c, d, a.json.data.approval_id, "subject:leak-retained"],
        labels: ["wolfram"],
      });
    }
    {
      const o = await appendOk(other.api_key, obs("leak", "xenon foreign evidence"));
      const [c] = await consolidateOk(other.api_key, "leak", [
        { kind: "fact", statement: "xenon foreign claim", sources: supports(o) },
      ]);
      hidden.push({ why: "another organization", ids: [o, c], labels: ["xenon"] });
    }
    {
      const h = await call("POST", "/v1/legal-holds", {
        key: org.api_key,
        body: { target_type: "claim", target_id: x, reason: "vanadium legal matter" },
      });
      expect(h.status, h.text).toBe(201);
      hidden.push({
        why: "a legal hold on a readable claim (shown to hold administrators only)",
        ids: [h.json.data.hold_id],
        labels: ["vanadium"],
      });
    }

    const after = await snapshot();
    for (const [i, b] of lenses.entries()) {
      const text = JSON.stringify(after[i]);
      for (const h of hidden)
        for (const s of [...h.ids, ...h.labels]) expect(text, `${b.lens}: ${h.why}: ${s}`).not.toContain(s);
      expect(after[i], `${b.lens} changed by hidden records`).toEqual(before[i]);
      expect(after[i].withheld).toEqual(before[i].withheld);
    }
    // The writer (a workspace outsider too) sees its private records, so the rows above are really there.
    const writerView = JSON.stringify(await viewOk(writer.key, { lens: "neighborhood", subject_id: "leak" }));
    expect(writerView).toContain("zirconium");
    expect(writerView).not.toContain("yttrium");
    expect(JSON.stringify(await viewOk(org.api_key, { lens: "neighborhood", subject_id: "leak" }))).toContain(
      "yttrium",
    );
    // A hidden focus answers exactly like a missing one.
    const answer = (r: CallResult) => `${r.status} ${r.text.replaceAll(r.json.meta.request_id, "req_")}`;
    const missing = answer(await view(reader.key, { lens: "evidence_trace", focus_id: `claim_${"0".repeat(32)}` }));
    for (const h of hidden.slice(0, 2)) {
      const claim = h.ids.find((id) => id.startsWith("claim_"))!;
      expect(answer(await view(reader.key, { lens: "evidence_trace", focus_id: claim }))).toBe(missing);
    }
    expect(answer(await view(other.api_key, { lens: "evidence_trace", focus_id: x }))).toBe(
      answer(await view(other.api_key, { lens: "evidence_trace", focus_id: `claim_${"0".repeat(32)}` })),
    );
    expectError(await view(reader.key, { lens: "neighborhood", subject_id: "leak-ws" }), 404, "NOT_FOUND");
    expectError(
      await view(reader.key, { lens: "workspace_graph", workspace_id: hiddenW }),
      400,
      "UNRESOLVED_REFERENCE",
    );
  }, 60_000);
});

describe("Memory Atlas lenses step past rows they cannot draw", () => {
  it("many newer unreadable or unrelated rows within a LIMIT hide nothing readable, and show nothing hidden", async () => {
    const org = await newOrg();
    const writer = await mintKey(org.api_key, { scopes: ["*"] });
    const reader = await mintKey(org.api_key, { scopes: ["*"] });
    // Readable: a target disputed by contradicting evidence and by a disputer claim; a complete run.
    const against = await appendOk(writer.key, obs("step", "walnut against"));
    const [target] = await consolidateOk(writer.key, "step", [
      {
        kind: "fact",
        statement: "walnut target",
        sources: [
          { observation_id: await appendOk(writer.key, obs("step", "walnut for")), relation: "supports" },
          { observation_id: against, relation: "contradicts" },
        ],
      },
    ]);
    const [disputer] = await consolidateOk(writer.key, "step", [
      {
        kind: "fact",
        statement: "walnut disputer",
        sources: [
          { observation_id: await appendOk(writer.key, obs("step", "walnut doubt")), relation: "supports" },
          { claim_id: target, relation: "contradicts" },
        ],
      },
    ]);
    const run = await call("POST", "/v1/context/compile", { key: reader.key, body: { query: "walnut target" } });
    expect(run.json.data.items.map((i: { claim_id: string }) => i.claim_id)).toContain(target);
    const complete = run.json.data.context_id as string;
    const [reviewed] = await consolidateOk(writer.key, "step", [
      {
        kind: "fact",
        statement: "walnut reviewed",
        sources: supports(await appendOk(writer.key, obs("step", "walnut seen"))),
      },
    ]);
    const approval = await call("POST", "/v1/claim-approvals", { key: writer.key, body: { claim_id: reviewed } });
    expect(approval.status, approval.text).toBe(201);

    // Newer than all of it (or sorting first), more than a lens's LIMIT (max_nodes + 100) of each: the
    // writer's private disputed claims, each of its own subject and pending approval; readable claims
    // disputing only those; readable supporting evidence on a readable disputed claim (sorting before
    // the contradicting one); the reader's own runs that also hold a private claim (no longer
    // completely readable).
    const N = 150;
    const hidden: string[] = [];
    const partialRuns: string[] = [];
    await inOrg(org.org_id, (o) => {
      const at = clock.nowIso();
      const observation = (visibility: string) => {
        const id = newId("obs_");
        o.db.run(
          `INSERT INTO observations (observation_id, subject_id, project_id, kind, content, content_hash, source_type, source_ref,
            trust, visibility, author_id, created_at, purged_at) VALUES (?, 'step', NULL, 'note', 'filler', 'h', 'test', 'r', 'medium', ?, ?, ?, NULL)`,
          id,
          visibility,
          writer.principal_id,
          at,
        );
        return id;
      };
      const claim = (
        statement: string,
        visibility: string,
        status: string,
        disputes: string[],
        sources: { observation_id: string; relation: string }[],
        claim_id = newId("claim_"),
        subject_id = "step",
      ) => {
        insertClaim(
          o.db,
          {
            claim_id,
            subject_id,
            project_id: null,
            kind: "fact",
            statement,
            status,
            visibility,
            trust: "medium",
            version: 1,
            valid_from: at,
            valid_to: null,
            superseded_by: null,
            disputes: JSON.stringify(disputes),
            author_id: writer.principal_id,
            created_at: at,
            updated_at: at,
          },
          sources,
        );
        return claim_id;
      };
      const secretObs = observation("private");
      for (let i = 0; i < N; i++) {
        const p = claim(`zinc secret ${i}`, "private", "disputed", [], supports(secretObs), undefined, `aa-zinc-${i}`);
        const approvalId = newId("apr_");
        o.db.run(
          `INSERT INTO claim_approvals (approval_id, claim_id, claim_version, status, evidence, submitted_by, created_at)
          VALUES (?, ?, 1, 'pending', '{}', ?, ?)`,
          approvalId,
          p,
          writer.principal_id,
          new Date(Date.parse(at) + 1000 + i).toISOString(),
        );
        hidden.push(p, approvalId);
        claim(`team disputer of a secret ${i}`, "team", "active", [p], supports(observation("team")));
        const runId = newId("ctx_");
        o.db.run(
          "INSERT INTO context_runs (context_id, actor_id, query, token_budget, tokens_used, created_at) VALUES (?, ?, 'walnut', 100, 10, ?)",
          runId,
          reader.principal_id,
          new Date(Date.parse(at) + 1000 + i).toISOString(),
        );
        o.db.run(
          "INSERT INTO context_items (context_id, position, claim_id, score, tokens) VALUES (?, 0, ?, 1, 5), (?, 1, ?, 1, 5)",
          runId,
          target,
          runId,
          p,
        );
        partialRuns.push(runId);
      }
      // A readable disputed claim whose id sorts first (evidence is read in claim id order), with many readable supports.
      claim(
        "aardvark disputed",
        "team",
        "disputed",
        [],
        Array.from({ length: N }, () => ({ observation_id: observation("team"), relation: "supports" })),
        `claim_${"0".repeat(32)}`,
      );
    });

    const conflicts = await viewOk(reader.key, { lens: "conflict_freshness", max_nodes: 25 });
    wellFormed(conflicts, 25);
    expect(ids(conflicts)).toEqual(expect.arrayContaining([target, disputer, against]));
    expect(has(conflicts, disputer, target, "contradicts")).toBe(true);
    expect(has(conflicts, against, target, "contradicts")).toBe(true);
    const trace = await viewOk(reader.key, { lens: "evidence_trace", focus_id: target, max_nodes: 25 });
    wellFormed(trace, 25);
    expect(ids(trace)).toContain(complete);
    const queue = await viewOk(reader.key, { lens: "review_queue", max_nodes: 25 });
    expect(ids(queue)).toContain(approval.json.data.approval_id);
    const scope = await viewOk(reader.key, { lens: "scope_preview", max_nodes: 25 });
    expect(ids(scope)).toContain("subject:step");
    const around = await viewOk(reader.key, { lens: "neighborhood", subject_id: "step", max_nodes: 25 });
    for (const v of [conflicts, trace, queue, scope, around]) {
      const text = JSON.stringify(v);
      for (const id of [...hidden, ...partialRuns]) expect(text).not.toContain(id);
      expect(text).not.toContain("zinc");
    }
  }, 60_000);
});

describe("workspaces scope records", () => {
  it("every read path agrees on who reads a workspace's team and private records; writes need member or above", async () => {
    const org = await newOrg();
    const w = await workspace(org.api_key, "scoped");
    const author = await member(org.api_key, "member", w);
    const wsReader = await member(org.api_key, "member");
    await member(org.api_key, "reader", w, wsReader.principal_id);
    const wsAdmin = await member(org.api_key, "member");
    await member(org.api_key, "admin", w, wsAdmin.principal_id);
    const outsider = await member(org.api_key, "member");
    const orgAdmin = await member(org.api_key, "admin");

    const p = await project(author.key, "scoped-project", w);
    expect(
      (
        await call("POST", "/v1/projects/resolve", {
          key: outsider.key,
          body: { reference: "x-project", create: true, workspace_id: w },
        })
      ).status,
    ).toBe(400);
    expectError(
      await call("POST", "/v1/projects/resolve", {
        key: wsReader.key,
        body: { reference: "y-project", create: true, workspace_id: w },
      }),
      403,
      "FORBIDDEN",
    );
    expectError(
      await call("POST", "/v1/projects/resolve", {
        key: org.api_key,
        body: { reference: "z-project", create: true, workspace_id: `wsp_${"0".repeat(32)}` },
      }),
      400,
      "UNRESOLVED_REFERENCE",
    );
    const teamObs = await appendOk(author.key, obs("scoped-subject", "quokka team evidence", { project_id: p }));
    const privObs = await appendOk(
      author.key,
      obs("scoped-subject", "quokka private evidence", { project_id: p, visibility: "private" }),
    );
    const post = async (claims: Record<string, unknown>[]) => {
      const r = await call("POST", "/v1/consolidations", {
        key: author.key,
        body: { subject_id: "scoped-subject", project_id: p, claims },
      });
      expect(r.status, r.text).toBe(201);
      return r.json.data.claims[0].claim_id as string;
    };
    const teamClaim = await post([{ kind: "fact", statement: "quokka team claim", sources: supports(teamObs) }]);
    const privClaim = await post([
      { kind: "fact", statement: "quokka private claim", visibility: "private", sources: supports(privObs) },
    ]);

    // Read paths: each answers whether the caller read the team claim / the private claim.
    const paths: [string, (key: string) => Promise<[boolean, boolean]>][] = [
      [
        "memories",
        async (key) => {
          const t = (await call("GET", "/v1/memories?q=quokka", { key })).text;
          return [t.includes(teamClaim), t.includes(privClaim)];
        },
      ],
      [
        "compile",
        async (key) => {
          const t = (await call("POST", "/v1/context/compile", { key, body: { query: "quokka" } })).text;
          return [t.includes(teamClaim), t.includes(privClaim)];
        },
      ],
      [
        "evidence",
        async (key) => [
          (await call("GET", `/v1/claims/${teamClaim}/evidence`, { key })).status === 200,
          (await call("GET", `/v1/claims/${privClaim}/evidence`, { key })).status === 200,
        ],
      ],
      [
        "export",
        async (key) => {
          const t = (await call("GET", "/v1/export", { key })).text;
          return [t.includes(teamClaim) && t.includes(teamObs), t.includes(privClaim) || t.includes(privObs)];
        },
      ],
      [
        "subjects",
        async (key) => {
          const t = (await call("GET", "/v1/subjects", { key })).text;
          return [t.includes("scoped-subject"), false];
        },
      ],
      [
        "atlas workspace_graph",
        async (key) => {
          const t = (await view(key, { lens: "workspace_graph" })).text;
          return [t.includes(teamClaim), t.includes(privClaim)];
        },
      ],
      [
        "atlas evidence_trace",
        async (key) => [
          (await view(key, { lens: "evidence_trace", focus_id: teamClaim })).status === 200,
          (await view(key, { lens: "evidence_trace", focus_id: privClaim })).status === 200,
        ],
      ],
      [
        "atlas neighborhood",
        async (key) => {
          const r = await view(key, { lens: "neighborhood", subject_id: "scoped-subject" });
          return [r.text.includes(teamClaim), r.text.includes(privClaim)];
        },
      ],
    ];
    const who: [string, string, [boolean, boolean]][] = [
      ["author", author.key, [true, true]],
      ["workspace reader", wsReader.key, [true, false]],
      ["workspace admin", wsAdmin.key, [true, true]],
      ["organization admin outside the workspace", orgAdmin.key, [true, false]],
      ["organization member outside the workspace", outsider.key, [false, false]],
    ];
    for (const [name, key, expected] of who)
      for (const [path, read] of paths) {
        const got = await read(key);
        const want: [boolean, boolean] = path === "subjects" ? [expected[0], false] : expected;
        expect(got, `${name} via ${path}`).toEqual(want);
      }

    // Writes into the workspace's project: member and above, organization owners/admins; not readers
    // (403) or outsiders (who cannot see the project: 400, as for a missing one).
    const write = (key: string) =>
      call("POST", "/v1/observations", { key, body: obs("scoped-subject", "w", { project_id: p }) });
    expect((await write(author.key)).status).toBe(201);
    expect((await write(wsAdmin.key)).status).toBe(201);
    expect((await write(orgAdmin.key)).status).toBe(201);
    expectError(await write(wsReader.key), 403, "FORBIDDEN");
    expectError(await write(outsider.key), 400, "UNRESOLVED_REFERENCE");
    expect(
      (
        await call("POST", "/v1/observations", {
          key: outsider.key,
          body: obs("scoped-subject", "outside any project"),
        })
      ).status,
    ).toBe(201);

    // Removing the membership applies on the next request.
    const mine = (
      await call("GET", `/v1/memberships?workspace_id=${w}`, { key: org.api_key })
    ).json.data.memberships.find((m: { principal_id: string }) => m.principal_id === wsReader.principal_id);
    expect((await call("DELETE", `/v1/memberships/${mine.membership_id}`, { key: org.api_key })).status).toBe(200);
    expect((await call("GET", "/v1/memories?q=quokka", { key: wsReader.key })).text).not.toContain(teamClaim);
    expectError(await view(wsReader.key, { lens: "evidence_trace", focus_id: teamClaim }), 404, "NOT_FOUND");

    // Records carry their project's workspace; a project's workspace is fixed at creation.
    const again = await call("POST", "/v1/projects/resolve", {
      key: author.key,
      body: { reference: "scoped-project", create: true, workspace_id: w },
    });
    expect(again.json.data).toMatchObject({ project_id: p, created: false, workspace_id: w });
    const stored = await inOrg(org.org_id, (o) =>
      o.db.all<{ workspace_id: string | null }>(
        "SELECT workspace_id FROM claims WHERE claim_id IN (?, ?)",
        teamClaim,
        privClaim,
      ),
    );
    expect(stored.map((r) => r.workspace_id)).toEqual([w, w]);
  }, 90_000);
});
