import { afterEach, describe, expect, it } from "vitest";
import { clock } from "../src/http/clock";
import { sign, signBundle } from "../src/domains/federation/signing";
import {
  appendOk,
  call,
  consolidateOk,
  expectError,
  fullAccount,
  inOrg,
  mintKey,
  newOrg,
  obs,
  supports,
} from "./helpers";

const SECRET = "federation-shared-secret-0123";
let n = 0;
const unique = (p: string) => `${p}-${n++}-${Math.random().toString(16).slice(2, 8)}`;
const hex = () => crypto.getRandomValues(new Uint8Array(16)).reduce((s, b) => s + b.toString(16).padStart(2, "0"), "");

async function peer(
  key: string,
  direction: string,
  filters: Record<string, unknown>[] = [{ resource_type: "observation" }],
  secret = SECRET,
) {
  const p = await call("POST", "/v1/federation/peers", {
    key,
    body: { endpoint: `https://${unique("peer")}.example.com`, shared_secret: secret, direction },
  });
  expect(p.status, p.text).toBe(201);
  for (const f of filters) {
    const r = await call("POST", `/v1/federation/peers/${p.json.data.peer_id}/filters`, { key, body: f });
    expect(r.status, r.text).toBe(201);
  }
  return p.json.data.peer_id as string;
}

afterEach(() => clock.reset());

type Signing = { secret?: string; signature?: string | null };

/** POST raw bytes as a peer does: `x-svc-peer-signature` over exactly those bytes (null: no header). */
function signedCall(path: string, key: string, raw: string, opts: Signing = {}) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (opts.signature !== null) headers["x-svc-peer-signature"] = opts.signature ?? sign(opts.secret ?? SECRET, raw);
  return call("POST", path, { key, raw, headers });
}

/** A signed pull, sent_at now unless `extra` says otherwise. */
const pull = (key: string, peerId: string, extra: Record<string, unknown> = {}, opts: Signing = {}) =>
  signedCall("/v1/federation/pull", key, JSON.stringify({ peer_id: peerId, sent_at: clock.nowIso(), ...extra }), opts);

async function pullAll(key: string, peerId: string, extra: Record<string, unknown> = {}) {
  const events: any[] = [],
    bundles: any[] = [];
  for (let i = 0; i < 50; i++) {
    const r = await pull(key, peerId, extra);
    expect(r.status, r.text).toBe(200);
    events.push(...r.json.data.events);
    bundles.push(...(r.json.data.bundles ?? []));
    if (!r.json.data.has_more) break;
  }
  return { events, bundles };
}

const push = (key: string, body: Record<string, unknown>, opts: Signing = {}) =>
  signedCall("/v1/federation/push", key, JSON.stringify(body), opts);

const exchange = (peerId: string, extra: Record<string, unknown> = {}) => ({
  peer_id: peerId,
  exchange_id: unique("x"),
  sent_at: clock.nowIso(),
  events: [],
  ...extra,
});

const event = (
  kind: string,
  payload: Record<string, unknown>,
  resource = kind.startsWith("claim") ? "claim" : "observation",
) => ({
  id: `evt_${hex()}`,
  kind,
  resource_type: resource,
  resource_id: `${resource === "claim" ? "claim" : "obs"}_${hex()}`,
  payload,
  created_at: clock.nowIso(),
});

/** Org A with a claim and its evidence, pulled by a peer as bundles; org B ready to receive them. */
async function bundled(opts: { trust?: string; bFilters?: Record<string, unknown>[]; bKeyTrust?: string } = {}) {
  const a = await newOrg();
  const b = await newOrg();
  const fromA = await peer(a.api_key, "pull", [{ resource_type: "observation" }, { resource_type: "claim" }]);
  const subject = unique("subj");
  const o1 = await appendOk(a.api_key, obs(subject, `first evidence ${subject}`, { trust: opts.trust ?? "high" }));
  const o2 = await appendOk(a.api_key, obs(subject, `second evidence ${subject}`, { trust: opts.trust ?? "high" }));
  const [c1] = await consolidateOk(a.api_key, subject, [
    { kind: "fact", statement: `one ${subject}`, sources: supports(o1) },
  ]);
  const [c2] = await consolidateOk(a.api_key, subject, [
    {
      kind: "fact",
      statement: `two ${subject}`,
      sources: [...supports(o1), { observation_id: o2, relation: "qualifies" }],
    },
  ]);
  const { events, bundles } = await pullAll(a.api_key, fromA, { include_memory: true });
  const intoB = await peer(
    b.api_key,
    "push",
    opts.bFilters ?? [{ resource_type: "observation" }, { resource_type: "claim" }],
  );
  const bKey = opts.bKeyTrust
    ? (await mintKey(b.api_key, { scopes: ["federation:write"], max_trust: opts.bKeyTrust })).key
    : b.api_key;
  return {
    a,
    b,
    fromA,
    intoB,
    bKey,
    subject,
    o1,
    o2,
    c1,
    c2,
    events,
    bundles,
    bundleOf: (claimId: string) => bundles.find((x) => x.claim.claim_id === claimId),
  };
}

const federated = (orgId: string) =>
  inOrg(orgId, (o) => ({
    observations: o.db.all<{ observation_id: string; source_ref: string; trust: string }>(
      "SELECT observation_id, source_ref, trust FROM observations WHERE source_type = 'federation'",
    ),
    claims: o.db.first<{ n: number }>("SELECT count(*) AS n FROM claims")!.n,
    imports: o.db.first<{ n: number }>("SELECT count(*) AS n FROM federation_imports")!.n,
  }));

describe("federation peers and filters", () => {
  it("registers peers once per endpoint, never returns the secret, validates, audits and emits no event", async () => {
    const org = await newOrg();
    const body = {
      endpoint: "https://peer.example.com/",
      shared_secret: SECRET,
      direction: "bidirectional",
      label: "eu",
    };
    const p = await call("POST", "/v1/federation/peers", { key: org.api_key, body });
    expect(p.status, p.text).toBe(201);
    expect(p.json.data).toMatchObject({
      endpoint: "https://peer.example.com",
      direction: "bidirectional",
      status: "active",
      cursor: null,
      remote_org_id: null,
      label: "eu",
    });
    expect(p.json.data.peer_id).toMatch(/^peer_[0-9a-f]{32}$/);
    expect(p.text).not.toContain(SECRET);
    expectError(await call("POST", "/v1/federation/peers", { key: org.api_key, body }), 409, "CONFLICT");
    expectError(
      await call("POST", "/v1/federation/peers", {
        key: org.api_key,
        body: { ...body, endpoint: "https://peer.example.com" },
      }),
      409,
      "CONFLICT",
    );
    for (const bad of [
      { ...body, endpoint: "https://p2.example.com", shared_secret: "short" },
      { ...body, endpoint: "http://peer.example.com" },
      { ...body, endpoint: "https://10.1.2.3" },
      { ...body, endpoint: "https://p3.example.com", direction: "sideways" },
      { ...body, endpoint: "https://p4.example.com", org_id: "org_x" },
    ]) {
      const r = await call("POST", "/v1/federation/peers", { key: org.api_key, body: bad });
      expectError(r, 400, "VALIDATION_ERROR");
    }
    const sideways = await call("POST", "/v1/federation/peers", {
      key: org.api_key,
      body: { ...body, endpoint: "https://p5.example.com", direction: "sideways" },
    });
    expect(sideways.json.error.message).toContain("direction");
    expect(sideways.json.error.message).toContain("bidirectional");
    const list = await call("GET", "/v1/federation/peers", { key: org.api_key });
    expect(list.json.data.peers.map((x: any) => x.peer_id)).toEqual([p.json.data.peer_id]);
    expect(list.text).not.toContain(SECRET);
    expect(list.text).not.toContain("scan_seq");
    const s = await call("POST", `/v1/federation/peers/${p.json.data.peer_id}/suspend`, { key: org.api_key });
    expect(s.json.data).toMatchObject({ status: "suspended", already_suspended: false });
    const again = await call("POST", `/v1/federation/peers/${p.json.data.peer_id}/suspend`, { key: org.api_key });
    expect(again.json.data).toMatchObject({ status: "suspended", already_suspended: true });
    const events = await call("GET", "/v1/events", { key: org.api_key });
    expect(events.json.data.events).toEqual([]);
    const audit = await call("GET", "/v1/audit?limit=500", { key: org.api_key });
    const actions = audit.json.data.entries.map((e: any) => e.action);
    expect(actions).toEqual(expect.arrayContaining(["federation.peer_created", "federation.peer_suspended"]));
    expect(audit.text).not.toContain(SECRET);
  });

  it("validates filters against the resource type's kinds and lists them", async () => {
    const org = await newOrg();
    const id = await peer(org.api_key, "pull", []);
    const add = (body: unknown) => call("POST", `/v1/federation/peers/${id}/filters`, { key: org.api_key, body });
    const bad = await add({ resource_type: "claim", include_kinds: ["note"] });
    expectError(bad, 400, "VALIDATION_ERROR");
    expect(bad.json.error.message).toContain("include_kinds.0");
    expect(bad.json.error.message).toContain('"fact"');
    expectError(await add({ resource_type: "lease" }), 400, "VALIDATION_ERROR");
    expectError(await add({ resource_type: "observation", min_trust: "ultimate" }), 400, "VALIDATION_ERROR");
    expectError(await add({ resource_type: "observation", exclude_subjects: [] }), 400, "VALIDATION_ERROR");
    const ok = await add({
      resource_type: "observation",
      include_kinds: ["note", "note"],
      exclude_subjects: ["x"],
      min_trust: "medium",
    });
    expect(ok.status, ok.text).toBe(201);
    expect(ok.json.data).toMatchObject({
      resource_type: "observation",
      include_kinds: ["note"],
      exclude_subjects: ["x"],
      min_trust: "medium",
    });
    expect(ok.json.data.filter_id).toMatch(/^flt_[0-9a-f]{32}$/);
    const list = await call("GET", `/v1/federation/peers/${id}/filters`, { key: org.api_key });
    expect(list.json.data.filters.map((f: any) => f.filter_id)).toEqual([ok.json.data.filter_id]);
  });
});

describe("federation pull", () => {
  it("serves filtered team events after the cursor, signed over the raw body, and logs each pull", async () => {
    const org = await newOrg();
    const id = await peer(org.api_key, "pull", [
      { resource_type: "observation", exclude_subjects: ["secret-subject"] },
    ]);
    const team = await appendOk(org.api_key, obs("open", "team content words"));
    const priv = await appendOk(org.api_key, obs("open", "private content", { visibility: "private" }));
    const excluded = await appendOk(org.api_key, obs("secret-subject", "excluded"));
    await call("POST", "/v1/leases", {
      key: org.api_key,
      body: { resource_type: "r", resource_id: "x", ttl_seconds: 60 },
    });
    const [claim] = await consolidateOk(org.api_key, "open", [
      { kind: "fact", statement: "a claim", sources: supports(team) },
    ]);
    const r = await pull(org.api_key, id);
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get("x-svc-peer-signature")).toBe(sign(SECRET, r.text));
    const ids = r.json.data.events.map((e: any) => e.resource_id);
    expect(ids).toEqual([team]); // no claim filter: claims never cross; private, excluded and lease events neither
    expect(r.text).not.toContain(priv);
    expect(r.text).not.toContain(excluded);
    expect(r.text).not.toContain(claim);
    expect(r.text).not.toContain("team content words");
    expect(r.json.data.events[0]).toEqual({
      id: expect.stringMatching(/^evt_/),
      kind: "observation.appended",
      resource_type: "observation",
      resource_id: team,
      payload: { subject_id: "open", kind: "note", trust: "medium", visibility: "team" },
      created_at: expect.any(String),
    });
    expect(r.json.data.cursor).toBe(r.json.data.events[0].id);
    expect(r.json.data.has_more).toBe(false);
    const again = await pull(org.api_key, id);
    expect(again.json.data).toMatchObject({ events: [], cursor: r.json.data.cursor, has_more: false });
    const peers = await call("GET", "/v1/federation/peers", { key: org.api_key });
    expect(peers.json.data.peers[0].cursor).toBe(r.json.data.cursor);
    const log = await call("GET", `/v1/federation/log?peer_id=${id}`, { key: org.api_key });
    expect(log.json.data.entries).toHaveLength(2);
    expect(log.json.data.entries[0]).toMatchObject({
      operation: "pull",
      cursor_before: null,
      cursor_after: r.json.data.cursor,
      counts: { events: 1, success: 1, conflict: 0, rejected: 0, bundles: 0 },
      request_id: r.json.meta.request_id,
    });
    expect(log.json.data.entries[1]).toMatchObject({
      cursor_before: r.json.data.cursor,
      cursor_after: r.json.data.cursor,
    });
  });

  it("is bound to its peer: signed with that peer's secret over the raw body, sent_at near now; a refusal moves nothing", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const [s1, s2] = ["peer-one-secret-0123456789", "peer-two-secret-0123456789"];
    const p1 = await peer(org.api_key, "pull", [{ resource_type: "observation", include_kinds: ["document"] }], s1);
    const p2 = await peer(org.api_key, "pull", [{ resource_type: "observation" }, { resource_type: "claim" }], s2);
    const p1Key = (await mintKey(org.api_key, { scopes: ["federation:write"] })).key; // the key handed to P1
    const note = await appendOk(org.api_key, obs("s", "a note only P2 may pull"));
    const [claim] = await consolidateOk(org.api_key, "s", [
      { kind: "fact", statement: "a claim only P2 may pull", sources: supports(note) },
    ]);
    const state = () =>
      inOrg(org.org_id, (o) => ({
        peers: o.db.all("SELECT peer_id, cursor, scan_seq, last_exchange_at FROM federation_peers ORDER BY peer_id"),
        log: o.db.first<{ n: number }>("SELECT count(*) AS n FROM federation_log")!.n,
        audit: o.db.first<{ n: number }>("SELECT count(*) AS n FROM audit_log WHERE action = 'federation.pulled'")!.n,
      }));
    const before = await state();
    // P1's key pulling as P2: unsigned, signed with P1's secret, a made-up signature, or one over other bytes.
    const asP2 = { peer_id: p2, sent_at: clock.nowIso(), include_memory: true };
    const refusals = [
      await pull(p1Key, p2, { include_memory: true }, { signature: null }),
      await pull(p1Key, p2, { include_memory: true }, { secret: s1 }),
      await pull(p1Key, p2, {}, { signature: "sha256=" + "0".repeat(64) }),
      await signedCall("/v1/federation/pull", p1Key, JSON.stringify(asP2, null, 1), {
        signature: sign(s2, JSON.stringify(asP2)),
      }),
      await signedCall("/v1/federation/pull", p1Key, JSON.stringify({ ...asP2, limit: 1 }), {
        signature: sign(s2, JSON.stringify(asP2)),
      }),
      // Nothing but peer_id is read before the signature: an unsigned malformed body is refused alike.
      await pull(p1Key, p2, { limit: "all" }, { signature: null }),
    ];
    for (const r of refusals) {
      expectError(r, 403, "FORBIDDEN");
      expect(r.json.error.message).toBe("The x-svc-peer-signature header does not match the body.");
    }
    // sent_at: required (once the signature holds), and within 300 s of this server's clock either way.
    const noSentAt = await signedCall("/v1/federation/pull", p1Key, JSON.stringify({ peer_id: p2 }), { secret: s2 });
    expectError(noSentAt, 400, "VALIDATION_ERROR");
    expect(noSentAt.json.error.message).toContain('"sent_at"');
    const now = clock.nowMs();
    for (const at of [now - 301_000, now + 301_000]) {
      const r = await pull(p1Key, p2, { sent_at: new Date(at).toISOString() }, { secret: s2 });
      expectError(r, 403, "FORBIDDEN");
      expect(r.json.error.message).toContain("sent_at");
    }
    const captured = JSON.stringify({ peer_id: p2, sent_at: clock.nowIso() });
    clock.advance(301_000);
    expectError(await signedCall("/v1/federation/pull", p1Key, captured, { secret: s2 }), 403, "FORBIDDEN");
    clock.reset();
    // A missing or foreign peer is named before any signature is asked for.
    for (const [key, id] of [
      [p1Key, `peer_${"0".repeat(32)}`],
      [other.api_key, p2],
    ]) {
      const r = await pull(key, id, {}, { signature: null });
      expectError(r, 400, "UNRESOLVED_REFERENCE");
      expect(r.json.error.message).toContain(id);
    }
    expect(await state()).toEqual(before);
    // P2, signing with its own secret, still receives everything it has not pulled; P1 only its own filter's share.
    const own = await pull(
      p1Key,
      p2,
      { sent_at: new Date(now - 250_000).toISOString(), include_memory: true },
      { secret: s2 },
    );
    expect(own.status, own.text).toBe(200);
    expect(own.headers.get("x-svc-peer-signature")).toBe(sign(s2, own.text));
    expect(own.json.data.events.map((e: any) => e.resource_id)).toEqual([note, claim]);
    expect(own.json.data.bundles.map((b: any) => b.claim.claim_id)).toEqual([claim]);
    const mine = await pull(p1Key, p1, {}, { secret: s1 });
    expect(mine.json.data.events).toEqual([]);
    expect(mine.headers.get("x-svc-peer-signature")).toBe(sign(s1, mine.text));
    const after = await state();
    expect([after.log, after.audit]).toEqual([before.log + 2, before.audit + 2]);
  });

  it("applies include_kinds and min_trust, pages with limit, and never shows a withheld event's id", async () => {
    const org = await newOrg();
    const id = await peer(org.api_key, "pull", [
      { resource_type: "observation", include_kinds: ["document"], min_trust: "high" },
    ]);
    const kept: string[] = [];
    for (let i = 0; i < 3; i++) {
      await appendOk(org.api_key, obs("s", `low ${i}`, { kind: "document", trust: "low" }));
      await appendOk(org.api_key, obs("s", `note ${i}`, { trust: "high" }));
      kept.push(await appendOk(org.api_key, obs("s", `doc ${i}`, { kind: "document", trust: "high" })));
    }
    const first = await pull(org.api_key, id, { limit: 2 });
    expect(first.json.data.events.map((e: any) => e.resource_id)).toEqual(kept.slice(0, 2));
    expect(first.json.data.has_more).toBe(true);
    const second = await pull(org.api_key, id, { limit: 2 });
    expect(second.json.data.events.map((e: any) => e.resource_id)).toEqual(kept.slice(2));
    const all = await call("GET", "/v1/events", { key: org.api_key });
    const withheld = all.json.data.events.filter((e: any) => !kept.includes(e.resource_id)).map((e: any) => e.id);
    for (const r of [first, second]) for (const w of withheld) expect(r.text).not.toContain(w);
    expectError(await pull(org.api_key, id, { limit: 201 }), 400, "VALIDATION_ERROR");
  });

  it("refuses a push-only or suspended peer (403) and an unknown peer_id (400)", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const pushOnly = await peer(org.api_key, "push");
    expectError(await pull(org.api_key, pushOnly), 403, "FORBIDDEN");
    const open = await peer(org.api_key, "bidirectional");
    expect((await pull(org.api_key, open)).status).toBe(200);
    await call("POST", `/v1/federation/peers/${open}/suspend`, { key: org.api_key });
    expectError(await pull(org.api_key, open), 403, "FORBIDDEN");
    const foreign = await pull(other.api_key, open);
    const missing = await pull(other.api_key, `peer_${"0".repeat(32)}`);
    expectError(foreign, 400, "UNRESOLVED_REFERENCE");
    expect(foreign.json.error).toEqual({
      ...missing.json.error,
      message: missing.json.error.message.replace(`peer_${"0".repeat(32)}`, open),
    });
    const noClaims = await peer(org.api_key, "pull");
    expectError(await pull(org.api_key, noClaims, { include_memory: true }), 400, "VALIDATION_ERROR");
  });

  it("bundles a claim with all its evidence only when every source passes the filters", async () => {
    const org = await newOrg();
    const id = await peer(org.api_key, "pull", [
      { resource_type: "observation", include_kinds: ["note"] },
      { resource_type: "claim" },
    ]);
    const note = await appendOk(org.api_key, obs("s", "note evidence"));
    const doc = await appendOk(org.api_key, obs("s", "document evidence", { kind: "document" }));
    const priv = await appendOk(org.api_key, obs("s", "private evidence", { visibility: "private" }));
    const [good] = await consolidateOk(org.api_key, "s", [
      { kind: "fact", statement: "good", sources: supports(note) },
    ]);
    const [mixed] = await consolidateOk(org.api_key, "s", [
      { kind: "fact", statement: "mixed", sources: [...supports(note), ...supports(doc)] },
    ]);
    const [hidden] = await consolidateOk(org.api_key, "s", [
      {
        kind: "fact",
        statement: "team claim, private source",
        visibility: "team",
        sources: [...supports(note), ...supports(priv)],
      },
    ]);
    const r = await pull(org.api_key, id, { include_memory: true });
    expect(r.headers.get("x-svc-peer-signature")).toBe(sign(SECRET, r.text));
    const bundles = r.json.data.bundles;
    expect(bundles.map((x: any) => x.claim.claim_id)).toEqual([good]);
    const [{ signature, ...rest }] = bundles;
    expect(signature).toBe(signBundle(SECRET, rest).signature);
    expect(rest.source_org_id).toBe(org.org_id);
    expect(rest.observations).toEqual([
      expect.objectContaining({
        observation_id: note,
        content: "note evidence",
        content_hash: expect.stringMatching(/^sha256:/),
      }),
    ]);
    expect(r.text).not.toContain("private evidence");
    expect(r.text).not.toContain("document evidence");
    expect(r.json.data.events.some((e: any) => e.resource_id === mixed)).toBe(true); // its event crosses; its bundle does not
    expect(r.json.data.events.some((e: any) => e.resource_id === hidden)).toBe(true); // a team claim; its private source stays home
    expect(r.text).not.toContain(priv);
  });
});

describe("federation pull and workspaces", () => {
  it("bundles only organization-wide records: a workspace claim, or a claim citing workspace evidence, never crosses with content", async () => {
    const org = await newOrg();
    const id = await peer(org.api_key, "pull", [{ resource_type: "observation" }, { resource_type: "claim" }]);
    const workspace = (await call("POST", "/v1/workspaces", { key: org.api_key, body: { name: unique("ws") } })).json
      .data.workspace_id;
    const project = await call("POST", "/v1/projects/resolve", {
      key: org.api_key,
      body: { reference: unique("repo"), create: true, workspace_id: workspace },
    });
    expect(project.json.data.workspace_id, project.text).toBe(workspace);
    const project_id = project.json.data.project_id;
    const inWorkspace = await appendOk(org.api_key, obs("s", "workspace-only evidence", { project_id }));
    const open = await appendOk(org.api_key, obs("s", "organization evidence"));
    const consolidate = async (body: Record<string, unknown>) => {
      const r = await call("POST", "/v1/consolidations", { key: org.api_key, body: { subject_id: "s", ...body } });
      expect(r.status, r.text).toBe(201);
      return r.json.data.claims[0].claim_id as string;
    };
    // A team claim of the workspace project; an organization-wide team claim citing workspace evidence; a plain one.
    const wsClaim = await consolidate({
      project_id,
      claims: [{ kind: "fact", statement: "workspace-only statement", sources: supports(inWorkspace) }],
    });
    const mixed = await consolidate({
      claims: [
        {
          kind: "fact",
          statement: "organization statement over workspace evidence",
          visibility: "team",
          sources: [...supports(open), ...supports(inWorkspace)],
        },
      ],
    });
    const plain = await consolidate({
      claims: [{ kind: "fact", statement: "organization statement", sources: supports(open) }],
    });
    expect(
      await inOrg(org.org_id, (o) =>
        o.db.all<{ claim_id: string; visibility: string; workspace_id: string | null }>(
          "SELECT claim_id, visibility, workspace_id FROM claims ORDER BY seq",
        ),
      ),
    ).toEqual([
      { claim_id: wsClaim, visibility: "team", workspace_id: workspace },
      { claim_id: mixed, visibility: "team", workspace_id: null },
      { claim_id: plain, visibility: "team", workspace_id: null },
    ]);
    const { bundles } = await pullAll(org.api_key, id, { include_memory: true });
    expect(bundles.map((b) => b.claim.claim_id)).toEqual([plain]);
    expect(JSON.stringify(bundles)).not.toContain("workspace-only");
    // (Whether the events of workspace records cross at all is the event log's rule, not the bundles'.)
  });
});

const fullSession = async (orgKey: string, role: string) => (await fullAccount(orgKey, role)).token;

describe("who may pull and push", () => {
  it("takes an API key naming federation:write, or an owner's or admin's key; never a dashboard session", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const id = await peer(org.api_key, "bidirectional");
    await appendOk(org.api_key, obs("s", "team evidence"));
    const asRole = async (role: string) => {
      const k = await mintKey(org.api_key, { scopes: ["*"] });
      if (role !== "member")
        expect(
          (await call("POST", "/v1/memberships", { key: org.api_key, body: { principal_id: k.principal_id, role } }))
            .status,
        ).toBe(201);
      return k.key;
    };
    const admin = await asRole("admin");
    const member = await asRole("member");
    const handedOver = (await mintKey(org.api_key, { scopes: ["federation:write"] })).key; // a new agent principal: role member
    const sessions = {
      owner: await fullSession(org.api_key, "owner"),
      admin: await fullSession(org.api_key, "admin"),
      member: await fullSession(org.api_key, "member"),
    };
    const state = () =>
      inOrg(org.org_id, (o) => ({
        peer: o.db.first("SELECT cursor, scan_seq, last_exchange_at FROM federation_peers"),
        log: o.db.first<{ n: number }>("SELECT count(*) AS n FROM federation_log")!.n,
        inbox: o.db.first<{ n: number }>("SELECT count(*) AS n FROM federation_inbox")!.n,
      }));
    const before = await state();
    const pushed = () => exchange(id, { events: [event("observation.appended", { subject_id: "s", kind: "note" })] });
    // Refused before anything is read or moved: a member's "*" key and every dashboard session.
    for (const key of [member, ...Object.values(sessions)]) {
      const p = await pull(key, id);
      expectError(p, 403, "FORBIDDEN");
      expectError(await push(key, pushed()), 403, "FORBIDDEN");
    }
    expect(await state()).toEqual(before);
    expect((await pull(sessions.owner, id)).json.error.message).toContain("dashboard session");
    expect((await pull(member, id)).json.error.message).toContain('"federation:write"');
    // The answer does not depend on the peer: a foreign or missing one is refused alike.
    const foreign = await peer(other.api_key, "bidirectional");
    for (const peerId of [foreign, `peer_${"0".repeat(32)}`]) {
      const r = await pull(member, peerId);
      expectError(r, 403, "FORBIDDEN");
      expect(r.json.error.message).toBe((await pull(member, id)).json.error.message);
    }
    // A key handed to the other side names the scope; owners and admins may also use a "*" key.
    for (const key of [handedOver, admin, org.api_key]) {
      expect((await pull(key, id)).status).toBe(200);
      expect((await push(key, pushed())).status).toBe(200);
    }
    // Only an owner or admin mints a key naming federation:write; a member's "*" key stays "*".
    expectError(
      await call("POST", "/v1/keys", { key: member, body: { label: "peer", scopes: ["federation:write"] } }),
      403,
      "FORBIDDEN",
    );
    expectError(
      await call("POST", "/v1/keys", {
        key: sessions.member,
        body: { label: "peer", scopes: ["events:read", "federation:write"] },
      }),
      403,
      "FORBIDDEN",
    );
    const wildcard = (await mintKey(member, { scopes: ["*"] })).key;
    expectError(await pull(wildcard, id), 403, "FORBIDDEN");
    expect((await mintKey(sessions.admin, { scopes: ["federation:write"] })).key).toMatch(/^/);
  });

  it('lets an owner or admin holding "*" pull unsigned (it administers every peer); every other key, and any signature header, is checked', async () => {
    const org = await newOrg();
    const id = await peer(org.api_key, "pull");
    const team = await appendOk(org.api_key, obs("s", "team evidence"));
    const admin = await mintKey(org.api_key, { scopes: ["*"] });
    expect(
      (
        await call("POST", "/v1/memberships", {
          key: org.api_key,
          body: { principal_id: admin.principal_id, role: "admin" },
        })
      ).status,
    ).toBe(201);
    const adminNamed = await mintKey(org.api_key, { scopes: ["federation:write"], principal_id: admin.principal_id });
    const handedOver = (await mintKey(org.api_key, { scopes: ["federation:write"] })).key;
    const unsigned = (key: string, body: Record<string, unknown> = {}) =>
      pull(key, id, { sent_at: undefined, ...body }, { signature: null });
    const cursor = () =>
      inOrg(org.org_id, (o) => o.db.first<{ cursor: string | null }>("SELECT cursor FROM federation_peers")!.cursor);
    // Keys that must sign: the one handed to a peer, and an admin's key naming the scope rather than "*".
    for (const key of [handedOver, adminNamed.key]) expectError(await unsigned(key), 403, "FORBIDDEN");
    // A signature header that is present is always checked, whoever sends it.
    expectError(await pull(org.api_key, id, {}, { signature: "sha256=" + "0".repeat(64) }), 403, "FORBIDDEN");
    expect(await cursor()).toBeNull();
    // The owner's and the admin's "*" keys pull without signature or sent_at, and the answer is signed as always.
    const own = await unsigned(org.api_key);
    expect(own.status, own.text).toBe(200);
    expect(own.json.data.events.map((e: any) => e.resource_id)).toEqual([team]);
    expect(own.headers.get("x-svc-peer-signature")).toBe(sign(SECRET, own.text));
    expect(await cursor()).toBe(own.json.data.events[0].id);
    expect((await unsigned(admin.key)).status).toBe(200);
    expect((await pull(org.api_key, id)).status).toBe(200);
    // An unsigned pull is never mistaken for the peer's own: its log entry and audit row say so, and whose key it was.
    const log = await call("GET", `/v1/federation/log?peer_id=${id}`, { key: org.api_key });
    expect(log.json.data.entries.map((e: any) => e.signed)).toEqual([false, false, true]);
    const audit = await call("GET", "/v1/audit?action=federation.pulled", { key: org.api_key });
    const ownerId = (await call("GET", "/v1/principal", { key: org.api_key })).json.data.principal_id;
    expect(audit.json.data.entries.map((e: any) => [e.actor_id, e.metadata.signed])).toEqual([
      [ownerId, true],
      [admin.principal_id, false],
      [ownerId, false],
    ]);
    // Suspension still holds for them.
    expect((await call("POST", `/v1/federation/peers/${id}/suspend`, { key: org.api_key, body: {} })).status).toBe(200);
    expectError(await unsigned(org.api_key), 403, "FORBIDDEN");
  });
});

describe("federation pull page size", () => {
  it("ends a page before the bundle that would make it unpushable, and skips a bundle too large to ever push", async () => {
    const org = await newOrg();
    const id = await peer(org.api_key, "pull", [{ resource_type: "claim" }, { resource_type: "observation" }]);
    const big = (i: number) => `${i} `.padEnd(190_000, "evidence ");
    const claims: string[] = [];
    for (let i = 0; i < 5; i++) {
      const o = await appendOk(org.api_key, obs(`big-${i}`, big(i)));
      claims.push(
        (
          await consolidateOk(org.api_key, `big-${i}`, [{ kind: "fact", statement: `big ${i}`, sources: supports(o) }])
        )[0],
      );
    }
    const huge = await Promise.all([0, 1, 2, 3].map((j) => appendOk(org.api_key, obs("huge", big(10 + j)))));
    const [tooLarge] = await consolidateOk(org.api_key, "huge", [
      { kind: "fact", statement: "huge", sources: huge.map((o) => supports(o)[0]) },
    ]);
    const first = await pull(org.api_key, id, { include_memory: true });
    expect(first.status, first.text.slice(0, 300)).toBe(200);
    expect(new TextEncoder().encode(first.text).length).toBeLessThan(1_048_576);
    expect(first.json.data.bundles.map((b: any) => b.claim.claim_id)).toEqual(claims.slice(0, 3));
    expect(first.json.data.has_more).toBe(true);
    const firstIds = first.json.data.events.map((e: any) => e.resource_id);
    expect(firstIds).toContain(claims[2]);
    expect(firstIds).not.toContain(claims[3]); // its event comes with its bundle on the next page
    const rest = await pullAll(org.api_key, id, { include_memory: true });
    expect(rest.bundles.map((b: any) => b.claim.claim_id)).toEqual(claims.slice(3));
    expect(rest.events.map((e: any) => e.resource_id)).toContain(tooLarge);
  });
});

describe("federation push", () => {
  it("checks the peer, then the signature over the raw bytes, then status and direction", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const id = await peer(org.api_key, "push");
    expectError(await push(org.api_key, exchange(id), { signature: "sha256=" + "0".repeat(64) }), 403, "FORBIDDEN");
    expectError(await push(org.api_key, exchange(id), { signature: null }), 403, "FORBIDDEN");
    expectError(await push(org.api_key, exchange(id), { secret: "another-secret-0123456789" }), 403, "FORBIDDEN");
    // Signed bytes must be the bytes sent: the same JSON re-spaced is another body.
    const body = exchange(id);
    const raw = JSON.stringify(body, null, 1);
    expectError(
      await call("POST", "/v1/federation/push", {
        key: org.api_key,
        raw,
        headers: { "x-svc-peer-signature": sign(SECRET, JSON.stringify(body)) },
      }),
      403,
      "FORBIDDEN",
    );
    expect(
      (
        await call("POST", "/v1/federation/push", {
          key: org.api_key,
          raw,
          headers: { "x-svc-peer-signature": sign(SECRET, raw) },
        })
      ).status,
    ).toBe(200);
    // Nothing but peer_id is read before the signature: an unsigned malformed body is 403, a signed one 400.
    expectError(await push(org.api_key, { ...exchange(id), events: "nope" }, { signature: null }), 403, "FORBIDDEN");
    expectError(await push(org.api_key, { ...exchange(id), events: "nope" }), 400, "VALIDATION_ERROR");
    expectError(await push(other.api_key, exchange(id)), 400, "UNRESOLVED_REFERENCE");
    expectError(await push(org.api_key, { events: [] }), 400, "VALIDATION_ERROR");
    const pullOnly = await peer(org.api_key, "pull");
    expectError(await push(org.api_key, exchange(pullOnly)), 403, "FORBIDDEN");
    await call("POST", `/v1/federation/peers/${id}/suspend`, { key: org.api_key });
    expectError(await push(org.api_key, exchange(id)), 403, "FORBIDDEN");
  });

  it("refuses sent_at more than 300 seconds away", async () => {
    const org = await newOrg();
    const id = await peer(org.api_key, "push");
    const at = clock.nowMs();
    expectError(
      await push(org.api_key, exchange(id, { sent_at: new Date(at - 301_000).toISOString() })),
      403,
      "FORBIDDEN",
    );
    expectError(
      await push(org.api_key, exchange(id, { sent_at: new Date(at + 301_000).toISOString() })),
      403,
      "FORBIDDEN",
    );
    expect((await push(org.api_key, exchange(id, { sent_at: new Date(at - 250_000).toISOString() }))).status).toBe(200);
    const body = exchange(id);
    clock.advance(301_000);
    expectError(await push(org.api_key, body), 403, "FORBIDDEN");
  });

  it("reports each event and replays an exchange", async () => {
    const org = await newOrg();
    const id = await peer(org.api_key, "push", [{ resource_type: "observation", exclude_subjects: ["nope"] }]);
    const good = event("observation.appended", { subject_id: "s", kind: "note", trust: "medium", visibility: "team" });
    const lease = { ...event("observation.appended", {}), kind: "lease.acquired", resource_type: "lease" };
    const priv = event("observation.appended", { subject_id: "s", kind: "note", visibility: "private" });
    const content = event("observation.appended", { subject_id: "s", kind: "note", content: "leaked text" });
    const excluded = event("observation.appended", { subject_id: "nope", kind: "note" });
    const claim = event("claim.materialized", { subject_id: "s", kind: "fact" }); // no claim filter
    const body = exchange(id, { events: [good, lease, priv, content, excluded, claim, { id: 7 }] });
    const r = await push(org.api_key, body);
    expect(r.status, r.text).toBe(200);
    expect(r.json.data.replayed).toBe(false);
    expect(r.json.data.results.map((x: any) => x.status)).toEqual([
      "success",
      "rejected",
      "rejected",
      "rejected",
      "rejected",
      "rejected",
      "rejected",
    ]);
    expect(r.json.data.results[6].id).toBeNull();
    expect(r.json.data.results[1].reason).toContain("kind");
    const replay = await push(org.api_key, body);
    expect(replay.status).toBe(200);
    expect(replay.json.data).toEqual({ ...r.json.data, replayed: true });
    expectError(await push(org.api_key, { ...body, events: [good] }), 409, "CONFLICT");
    const changed = { ...good, payload: { ...good.payload, kind: "document" } };
    const c = await push(org.api_key, exchange(id, { events: [good, changed] }));
    expect(c.json.data.results.map((x: any) => x.status)).toEqual(["success", "conflict"]);
    expect(
      await inOrg(org.org_id, (o) => o.db.first<{ n: number }>("SELECT count(*) AS n FROM federation_inbox")!.n),
    ).toBe(1);
    expect(JSON.stringify(await inOrg(org.org_id, (o) => o.db.all("SELECT * FROM federation_inbox")))).not.toContain(
      "leaked text",
    );
    expect((await call("GET", "/v1/events", { key: org.api_key })).json.data.events).toEqual([]);
    const log = await call("GET", `/v1/federation/log?peer_id=${id}`, { key: org.api_key });
    expect(log.json.data.entries.map((e: any) => e.counts)).toEqual([
      { events: 7, bundles: 0, success: 1, conflict: 0, rejected: 6 },
      { events: 2, bundles: 0, success: 1, conflict: 1, rejected: 0 },
    ]);
  });
});

describe("federation bundles on push", () => {
  it("imports a claim with its evidence under new ids with federation provenance", async () => {
    const f = await bundled();
    const bundle = f.bundleOf(f.c1);
    const r = await push(f.b.api_key, exchange(f.intoB, { events: f.events, bundles: [bundle] }));
    expect(r.status, r.text).toBe(200);
    expect(r.json.data.results.every((x: any) => x.status === "success")).toBe(true);
    expect(r.json.data.bundles).toEqual([
      { claim_id: f.c1, status: "success", local_claim_id: expect.stringMatching(/^claim_/) },
    ]);
    const local = r.json.data.bundles[0].local_claim_id;
    expect(local).not.toBe(f.c1);
    const ev = await call("GET", `/v1/claims/${local}/evidence`, { key: f.b.api_key });
    expect(ev.status, ev.text).toBe(200);
    expect(ev.text).toContain(`first evidence ${f.subject}`);
    const imported = await federated(f.b.org_id);
    expect(imported.observations).toHaveLength(1);
    expect(imported.observations[0].observation_id).not.toBe(f.o1);
    expect(imported.observations[0].source_ref).toBe(`${f.intoB}:${f.o1}`);
    // Imports land outside every workspace: no project, so no workspace scopes them.
    expect(
      await inOrg(f.b.org_id, (o) =>
        o.db.all(
          "SELECT project_id, workspace_id FROM observations UNION ALL SELECT project_id, workspace_id FROM claims",
        ),
      ),
    ).toEqual([
      { project_id: null, workspace_id: null },
      { project_id: null, workspace_id: null },
    ]);
    const peers = await call("GET", "/v1/federation/peers", { key: f.b.api_key });
    expect(peers.json.data.peers[0].remote_org_id).toBe(f.a.org_id);
    // The second claim shares o1 (imported before) and brings o2: the graph is complete.
    const second = await push(f.b.api_key, exchange(f.intoB, { bundles: [f.bundleOf(f.c2)] }));
    expect(second.json.data.bundles[0].status).toBe("success");
    expect((await federated(f.b.org_id)).observations).toHaveLength(2);
    const again = await push(f.b.api_key, exchange(f.intoB, { bundles: [bundle] }));
    expect(again.json.data.bundles[0]).toMatchObject({ claim_id: f.c1, status: "conflict" });
  });

  it("rejects a tampered bundle and one from another source organization, changing nothing", async () => {
    const f = await bundled();
    const bundle = f.bundleOf(f.c1);
    const before = await federated(f.b.org_id);
    const tampered = [
      { ...bundle, claim: { ...bundle.claim, statement: "tampered" } },
      { ...bundle, observations: [{ ...bundle.observations[0], content: "tampered" }] },
      { ...bundle, signature: undefined },
    ];
    const r = await push(f.b.api_key, exchange(f.intoB, { bundles: tampered }));
    expect(r.json.data.bundles.map((x: any) => x.status)).toEqual(["rejected", "rejected", "rejected"]);
    expect(r.json.data.bundles[0].reason).toContain("signature");
    // Correctly signed, but the content no longer matches its hash.
    const { signature: _s, ...unsigned } = bundle;
    const rehashed = signBundle(SECRET, {
      ...unsigned,
      observations: [{ ...bundle.observations[0], content: "other words" }],
    });
    const h = await push(f.b.api_key, exchange(f.intoB, { bundles: [rehashed] }));
    expect(h.json.data.bundles[0]).toMatchObject({ status: "rejected", reason: expect.stringContaining("hash") });
    expect(await federated(f.b.org_id)).toEqual(before);
    // Pin the source organization with a good bundle, then one re-signed as another organization.
    expect((await push(f.b.api_key, exchange(f.intoB, { bundles: [bundle] }))).json.data.bundles[0].status).toBe(
      "success",
    );
    const { signature: _t, ...second } = f.bundleOf(f.c2);
    const otherOrg = signBundle(SECRET, { ...second, source_org_id: `org_${hex()}` });
    const w = await push(f.b.api_key, exchange(f.intoB, { bundles: [otherOrg] }));
    expect(w.json.data.bundles[0]).toMatchObject({
      status: "rejected",
      reason: expect.stringContaining("source organization"),
    });
  });

  it("rejects a bundle whose source observation is missing", async () => {
    const f = await bundled();
    const { signature: _s, ...rest } = f.bundleOf(f.c2);
    const partial = signBundle(SECRET, {
      ...rest,
      observations: rest.observations.filter((o: any) => o.observation_id !== f.o2),
    });
    const r = await push(f.b.api_key, exchange(f.intoB, { bundles: [partial] }));
    expect(r.json.data.bundles[0]).toMatchObject({ status: "rejected", reason: expect.stringContaining(f.o2) });
    expect((await federated(f.b.org_id)).imports).toBe(0);
  });

  it("caps trust at the pushing key's ceiling and then applies min_trust", async () => {
    const capped = await bundled({ trust: "high", bKeyTrust: "medium" });
    const r = await push(capped.bKey, exchange(capped.intoB, { bundles: [capped.bundleOf(capped.c1)] }));
    expect(r.json.data.bundles[0].status).toBe("success");
    const claim = await call("GET", `/v1/claims/${r.json.data.bundles[0].local_claim_id}/evidence`, {
      key: capped.b.api_key,
    });
    expect(claim.json.data.claim.trust).toBe("medium");
    expect((await federated(capped.b.org_id)).observations.map((o) => o.trust)).toEqual(["medium"]);
    const strict = await bundled({
      trust: "high",
      bKeyTrust: "medium",
      bFilters: [{ resource_type: "observation" }, { resource_type: "claim", min_trust: "high" }],
    });
    const s = await push(strict.bKey, exchange(strict.intoB, { bundles: [strict.bundleOf(strict.c1)] }));
    expect(s.json.data.bundles[0]).toMatchObject({ status: "rejected", reason: expect.stringContaining("min_trust") });
  });

  it("binds filters on push too: no claim filter or an excluded kind rejects the bundle", async () => {
    const none = await bundled({ bFilters: [{ resource_type: "observation" }] });
    const r = await push(none.b.api_key, exchange(none.intoB, { bundles: [none.bundleOf(none.c1)] }));
    expect(r.json.data.bundles[0]).toMatchObject({
      status: "rejected",
      reason: expect.stringContaining("claim filter"),
    });
    const kinds = await bundled({
      bFilters: [{ resource_type: "observation", include_kinds: ["document"] }, { resource_type: "claim" }],
    });
    const k = await push(kinds.b.api_key, exchange(kinds.intoB, { bundles: [kinds.bundleOf(kinds.c1)] }));
    expect(k.json.data.bundles[0]).toMatchObject({
      status: "rejected",
      reason: expect.stringContaining("observation filter"),
    });
    expect((await federated(kinds.b.org_id)).imports).toBe(0);
  });

  it("imports the accepted bundles of a push whose last bundle fails, and nothing of the failing one", async () => {
    const f = await bundled();
    const { signature: _s, ...rest } = f.bundleOf(f.c2);
    // The last bundle carries o1 (fine on its own) and a source that is nowhere: it must leave no trace.
    const broken = signBundle(SECRET, {
      ...rest,
      observations: rest.observations.filter((o: any) => o.observation_id === f.o1),
      claim: { ...rest.claim, claim_id: `claim_${hex()}` },
    });
    const clean = await newOrg();
    const intoClean = await peer(clean.api_key, "push", [{ resource_type: "observation" }, { resource_type: "claim" }]);
    const alone = await push(clean.api_key, exchange(intoClean, { bundles: [broken] }));
    expect(alone.json.data.bundles[0].status).toBe("rejected");
    expect(await federated(clean.org_id)).toEqual({ observations: [], claims: 0, imports: 0 });
    const r = await push(f.b.api_key, exchange(f.intoB, { bundles: [f.bundleOf(f.c1), broken] }));
    expect(r.json.data.bundles.map((x: any) => x.status)).toEqual(["success", "rejected"]);
    const after = await federated(f.b.org_id);
    expect(after.observations.map((o) => o.source_ref)).toEqual([`${f.intoB}:${f.o1}`]);
    expect(after.claims).toBe(1);
    expect(after.imports).toBe(2);
    const log = await call("GET", `/v1/federation/log?peer_id=${f.intoB}`, { key: f.b.api_key });
    expect(log.json.data.entries[0].counts).toEqual({ events: 0, bundles: 2, success: 1, conflict: 0, rejected: 1 });
  });
});

describe("federation push after a local purge", () => {
  it("rejects a bundle citing an imported observation purged here, processes the rest of the page, and keeps doing so on resend", async () => {
    const f = await bundled();
    // A third claim in A whose evidence has nothing to do with o1; pulled with the next page.
    const o3 = await appendOk(f.a.api_key, obs(f.subject, `third evidence ${f.subject}`));
    const [c3] = await consolidateOk(f.a.api_key, f.subject, [
      { kind: "fact", statement: `three ${f.subject}`, sources: supports(o3) },
    ]);
    const next = await pullAll(f.a.api_key, f.fromA, { include_memory: true });
    const events = [...f.events, ...next.events];
    const c3Bundle = next.bundles.find((b) => b.claim.claim_id === c3);
    const first = await push(f.b.api_key, exchange(f.intoB, { bundles: [f.bundleOf(f.c1)] }));
    expect(first.json.data.bundles[0].status, first.text).toBe("success");
    const [localO1] = (await federated(f.b.org_id)).observations.map((o) => o.observation_id);
    expect((await call("DELETE", `/v1/observations/${localO1}`, { key: f.b.api_key })).status).toBe(200);
    // c2 carries o1 again; a re-signed claim cites o1 without carrying it: both need the purged observation.
    const { signature: _s, ...c2 } = f.bundleOf(f.c2);
    const citing = signBundle(SECRET, {
      ...c2,
      claim: { ...c2.claim, claim_id: `claim_${hex()}`, sources: supports(f.o1) },
      observations: [],
    });
    const page = exchange(f.intoB, { events, bundles: [f.bundleOf(f.c2), citing, c3Bundle] });
    const before = await inOrg(f.b.org_id, (o) =>
      o.db.all("SELECT observation_id, content, purged_at FROM observations ORDER BY observation_id"),
    );
    const r = await push(f.b.api_key, page);
    expect(r.status, r.text).toBe(200);
    expect(r.json.data.results.map((x: any) => x.status)).toEqual(events.map(() => "success"));
    expect(r.json.data.bundles).toEqual([
      { claim_id: f.c2, status: "rejected", reason: expect.stringContaining("purged") },
      { claim_id: citing.claim.claim_id, status: "rejected", reason: expect.stringContaining("purged") },
      { claim_id: c3, status: "success", local_claim_id: expect.stringMatching(/^claim_/) },
    ]);
    expect(r.json.data.bundles[0].reason).toContain(f.o1);
    // The refused bundles wrote nothing: o1 stays purged (not re-imported), o2 never arrived; c3 and o3 did.
    const after = await federated(f.b.org_id);
    expect(after.observations.map((o) => o.source_ref).sort()).toEqual(
      [`${f.intoB}:${f.o1}`, `${f.intoB}:${o3}`].sort(),
    );
    expect(after).toMatchObject({ claims: 2, imports: 4 });
    expect(
      await inOrg(f.b.org_id, (o) =>
        o.db.all("SELECT observation_id, content, purged_at FROM observations WHERE observation_id = ?", localO1),
      ),
    ).toEqual(before.filter((o: any) => o.observation_id === localO1));
    // The same bytes replay the stored answer; the same bundles in a new exchange give the same verdicts.
    const replay = await push(f.b.api_key, page);
    expect(replay.json.data).toEqual({ ...r.json.data, replayed: true });
    const again = await push(f.b.api_key, exchange(f.intoB, { events, bundles: [f.bundleOf(f.c2), citing, c3Bundle] }));
    expect(again.status, again.text).toBe(200);
    expect(again.json.data.bundles.map((x: any) => x.status)).toEqual(["rejected", "rejected", "conflict"]);
    expect(await federated(f.b.org_id)).toEqual(after);
    const log = await call("GET", `/v1/federation/log?peer_id=${f.intoB}`, { key: f.b.api_key });
    expect(log.json.data.entries.map((e: any) => e.counts)).toEqual([
      { events: 0, bundles: 1, success: 1, conflict: 0, rejected: 0 },
      { events: events.length, bundles: 3, success: events.length + 1, conflict: 0, rejected: 2 },
      { events: events.length, bundles: 3, success: events.length, conflict: 1, rejected: 2 },
    ]);
    const audit = await call("GET", "/v1/audit?limit=500", { key: f.b.api_key });
    expect(audit.json.data.entries.filter((e: any) => e.action === "federation.pushed")).toHaveLength(3);
  });
});

describe("federation push atomicity", () => {
  it("rolls back every bundle, event result, log and replay record when the last bundle's import fails in storage", async () => {
    const f = await bundled();
    // A real storage failure on the last claim's insert (no code path is stubbed).
    await inOrg(f.b.org_id, (o) =>
      o.db.run(
        `CREATE TRIGGER fail_import BEFORE INSERT ON claims WHEN NEW.statement = 'two ${f.subject}' BEGIN SELECT RAISE(ABORT, 'injected failure'); END`,
      ),
    );
    const body = exchange(f.intoB, { events: f.events, bundles: [f.bundleOf(f.c1), f.bundleOf(f.c2)] });
    const failed = await push(f.b.api_key, body);
    expectError(failed, 500, "INTERNAL");
    const state = () =>
      inOrg(f.b.org_id, (o) => ({
        ...Object.fromEntries(
          [
            "federation_inbox",
            "federation_imports",
            "federation_exchanges",
            "federation_log",
            "claims",
            "observations",
          ].map((t) => [t, o.db.first<{ n: number }>(`SELECT count(*) AS n FROM ${t}`)!.n]),
        ),
        remote: o.db.first<{ remote_org_id: string | null }>("SELECT remote_org_id FROM federation_peers")!
          .remote_org_id,
      }));
    expect(await state()).toEqual({
      federation_inbox: 0,
      federation_imports: 0,
      federation_exchanges: 0,
      federation_log: 0,
      claims: 0,
      observations: 0,
      remote: null,
    });
    await inOrg(f.b.org_id, (o) => o.db.run("DROP TRIGGER fail_import"));
    const retried = await push(f.b.api_key, body);
    expect(retried.status, retried.text).toBe(200);
    expect(retried.json.data.replayed).toBe(false);
    expect(retried.json.data.bundles.map((x: any) => x.status)).toEqual(["success", "success"]);
    expect(await state()).toMatchObject({
      federation_imports: 4,
      claims: 2,
      observations: 2,
      federation_log: 1,
      remote: f.a.org_id,
    });
  });
});

describe("federation log", () => {
  it("pages, and answers 404 for a foreign or missing peer", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const id = await peer(org.api_key, "pull");
    for (let i = 0; i < 3; i++) await pull(org.api_key, id);
    const first = await call("GET", `/v1/federation/log?peer_id=${id}&limit=2`, { key: org.api_key });
    expect(first.json.data.entries).toHaveLength(2);
    expect(first.json.data.has_more).toBe(true);
    const next = await call("GET", `/v1/federation/log?peer_id=${id}&limit=2&after=${first.json.data.next_cursor}`, {
      key: org.api_key,
    });
    expect(next.json.data.entries).toHaveLength(1);
    expect(next.json.data.next_cursor).toBeNull();
    expectError(await call("GET", "/v1/federation/log", { key: org.api_key }), 400, "VALIDATION_ERROR");
    const foreign = await call("GET", `/v1/federation/log?peer_id=${id}`, { key: other.api_key });
    const missing = await call("GET", `/v1/federation/log?peer_id=peer_${"0".repeat(32)}`, { key: other.api_key });
    expectError(foreign, 404, "NOT_FOUND");
    expect(foreign.json.error).toEqual(missing.json.error);
  });
});
