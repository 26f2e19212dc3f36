// Review findings on events, deliveries, context feedback, list cursors, MCP errors and idempotency:
// events about a workspace's records are read like the workspace's team records (list, get, `after`,
// webhooks, delivery lists); feedback reaches only items the caller may retrieve; list cursors name
// the caller's own last row, never a position among everybody's; MCP tools translate storage failures
// like HTTP routes; a reused Idempotency-Key says nothing about whose it was.
import { beforeEach, describe, expect, it } from "vitest";
import type { Sender } from "../src/domains/webhooks/delivery";
import { appendOk, call, consolidateOk, expectError, inOrg, mintKey, newOrg, obs, supports } from "./helpers";

const secret = "s3cret-s3cret-s3cret";
let sent: { url: string; eventId: string }[] = [];
const recordingSender: Sender = async (url, init) => {
  sent.push({ url, eventId: init.headers["x-svc-event-id"] });
  return 200;
};
beforeEach(() => {
  sent = [];
});

const ZERO_EVENT = "evt_" + "0".repeat(32);
/** An answer with its request-specific meta left out, to compare two answers. */
const body = (r: { json: any }) => ({ ...r.json, meta: null });
const decode = (cursor: string) => JSON.parse(atob(cursor.replace(/-/g, "+").replace(/_/g, "/")));

async function member(
  ownerKey: string,
  role: "admin" | "member" | "reader",
  workspace?: { id: string; role: "owner" | "admin" | "member" | "reader" },
) {
  const k = await mintKey(ownerKey, { scopes: ["*"] });
  if (role !== "member") {
    const m = await call("POST", "/v1/memberships", { key: ownerKey, body: { principal_id: k.principal_id, role } });
    expect(m.status, m.text).toBe(201);
  }
  if (workspace) {
    const m = await call("POST", "/v1/memberships", {
      key: ownerKey,
      body: { principal_id: k.principal_id, role: workspace.role, workspace_id: workspace.id },
    });
    expect(m.status, m.text).toBe(201);
  }
  return k;
}

/** An organization with a workspace project holding team records, and who is who around it. */
async function workspaceOrg() {
  const org = await newOrg();
  await inOrg(org.org_id, (o) => {
    o.deps = { ...o.deps, sendWebhook: recordingSender };
  });
  const w = await call("POST", "/v1/workspaces", { key: org.api_key, body: { name: "scoped" } });
  expect(w.status, w.text).toBe(201);
  const ws = w.json.data.workspace_id as string;
  const author = await member(org.api_key, "member", { id: ws, role: "member" });
  const wsReader = await member(org.api_key, "member", { id: ws, role: "reader" });
  const outsider = await member(org.api_key, "member");
  const orgAdmin = await member(org.api_key, "admin");
  const hooks: Record<string, string> = {};
  for (const [name, k] of Object.entries({ author, wsReader, outsider, orgAdmin })) {
    const h = await call("POST", "/v1/webhooks", {
      key: k.key,
      body: { url: `https://hooks.example.com/${name}`, secret, events: ["*"] },
    });
    expect(h.status, h.text).toBe(201);
    hooks[name] = h.json.data.webhook_id;
  }
  const p = await call("POST", "/v1/projects/resolve", {
    key: author.key,
    body: { reference: "scoped-project", create: true, workspace_id: ws },
  });
  expect(p.status, p.text).toBe(201);
  const project = p.json.data.project_id as string;
  const wsObs = await appendOk(author.key, obs("scoped-subject", "workspace evidence", { project_id: project }));
  const wsClaim = (
    await call("POST", "/v1/consolidations", {
      key: author.key,
      body: {
        subject_id: "scoped-subject",
        project_id: project,
        claims: [{ kind: "fact", statement: "workspace claim", sources: supports(wsObs) }],
      },
    })
  ).json.data.claims[0].claim_id as string;
  expect((await call("POST", `/v1/claims/${wsClaim}/revoke`, { key: author.key, body: {} })).status).toBe(200);
  const orgObs = await appendOk(author.key, obs("open-subject", "organization-wide evidence"));
  const [orgClaim] = await consolidateOk(author.key, "open-subject", [
    { kind: "fact", statement: "organization-wide claim", sources: supports(orgObs) },
  ]);
  const events = (await call("GET", "/v1/events?limit=200", { key: author.key })).json.data.events as {
    id: string;
    kind: string;
    resource_id: string;
  }[];
  const wsEvents = events.filter((e) => e.resource_id === wsObs || e.resource_id === wsClaim);
  const orgEvents = events.filter((e) => e.resource_id === orgObs || e.resource_id === orgClaim);
  expect(wsEvents.map((e) => e.kind)).toEqual(["observation.appended", "claim.materialized", "claim.revoked"]);
  expect(orgEvents.map((e) => e.kind)).toEqual(["observation.appended", "claim.materialized"]);
  return { org, ws, author, wsReader, outsider, orgAdmin, hooks, wsEvents, orgEvents, wsRecords: [wsObs, wsClaim] };
}

describe("events about a workspace's records are read like its team records", () => {
  it("list, get, after, webhook delivery and the delivery list agree; members and organization admins read them", async () => {
    const t = await workspaceOrg();
    const wsIds = t.wsEvents.map((e) => e.id);
    const orgIds = t.orgEvents.map((e) => e.id);
    const who: [string, string, boolean][] = [
      ["workspace member", t.author.key, true],
      ["workspace reader", t.wsReader.key, true],
      ["organization admin outside the workspace", t.orgAdmin.key, true],
      ["organization owner", t.org.api_key, true],
      ["organization member outside the workspace", t.outsider.key, false],
    ];
    const drained = await call("POST", "/v1/webhooks/deliver", { key: t.org.api_key, body: { limit: 200 } });
    expect(drained.status, drained.text).toBe(200);
    for (const [name, key, reads] of who) {
      const listed = (await call("GET", "/v1/events?limit=200", { key })).json.data.events.map(
        (e: { id: string }) => e.id,
      );
      expect(listed, name).toEqual(expect.arrayContaining(orgIds));
      for (const id of wsIds) {
        expect(listed.includes(id), `${name} lists ${id}`).toBe(reads);
        const one = await call("GET", `/v1/events/${id}`, { key });
        const after = await call("GET", `/v1/events?after=${id}`, { key });
        if (reads) {
          expect(one.status, name).toBe(200);
          expect(after.status, name).toBe(200);
        } else {
          // Exactly like an event that does not exist.
          expectError(one, 404, "NOT_FOUND");
          expect(body(one)).toEqual(body(await call("GET", `/v1/events/${ZERO_EVENT}`, { key })));
          expectError(after, 404, "NOT_FOUND");
          expect(body(after)).toEqual(body(await call("GET", `/v1/events?after=${ZERO_EVENT}`, { key })));
        }
      }
      // The event payloads name the workspace's records only where the reader may read them.
      const text = (await call("GET", "/v1/events?limit=200", { key })).text;
      for (const id of t.wsRecords) expect(text.includes(id), `${name} sees ${id}`).toBe(reads);
    }
    // Webhooks deliver as their creator reads.
    for (const [name, reads] of [
      ["author", true],
      ["wsReader", true],
      ["orgAdmin", true],
      ["outsider", false],
    ] as const) {
      const deliveries = (
        await call("GET", `/v1/webhooks/${t.hooks[name]}/deliveries?limit=200`, { key: t.org.api_key })
      ).json.data.deliveries.map((d: { event_id: string }) => d.event_id);
      expect(deliveries, name).toEqual(expect.arrayContaining(orgIds));
      for (const id of wsIds) expect(deliveries.includes(id), `${name}'s hook got ${id}`).toBe(reads);
    }
    // Sent: every workspace event went to the three hooks whose creators read it, never to the outsider's.
    for (const id of wsIds) expect(sent.filter((s) => s.eventId === id)).toHaveLength(3);
    for (const id of orgIds) expect(sent.filter((s) => s.eventId === id)).toHaveLength(4);

    // The outsider's `after` cursor walks only what it may read, one at a time, and stays put at the end.
    let cursor: string | null = null;
    const seen: string[] = [];
    for (;;) {
      const page: any = await call("GET", `/v1/events?limit=1${cursor ? `&after=${cursor}` : ""}`, {
        key: t.outsider.key,
      });
      expect(page.status, page.text).toBe(200);
      if (!page.json.data.events.length) {
        expect(page.json.data.cursor).toBe(cursor);
        break;
      }
      seen.push(page.json.data.events[0].id);
      expect(page.json.data.cursor).toBe(page.json.data.events[0].id);
      cursor = page.json.data.cursor;
    }
    expect(seen).toEqual(expect.arrayContaining(orgIds));
    for (const id of wsIds) expect(seen).not.toContain(id);

    // Leaving the workspace ends reading its events on the next request.
    const ms = (await call("GET", `/v1/memberships?workspace_id=${t.ws}`, { key: t.org.api_key })).json.data
      .memberships;
    const m = ms.find((x: { principal_id: string }) => x.principal_id === t.wsReader.principal_id);
    expect((await call("DELETE", `/v1/memberships/${m.membership_id}`, { key: t.org.api_key })).status).toBe(200);
    expectError(await call("GET", `/v1/events/${wsIds[0]}`, { key: t.wsReader.key }), 404, "NOT_FOUND");
  }, 60_000);

  it("stores each memory event with its record's workspace; the migration backfills older events from the record", async () => {
    const t = await workspaceOrg();
    const rows = await inOrg(t.org.org_id, (o) =>
      o.db.all<{ event_id: string; workspace_id: string | null }>(
        "SELECT event_id, workspace_id FROM events WHERE resource_type IN ('observation', 'claim') ORDER BY seq",
      ),
    );
    const byId = new Map(rows.map((r) => [r.event_id, r.workspace_id]));
    for (const e of t.wsEvents) expect(byId.get(e.id), e.kind).toBe(t.ws);
    for (const e of t.orgEvents) expect(byId.get(e.id), e.kind).toBeNull();
  });

  it("claim.superseded names a workspace replacement only to readers of that workspace's events", async () => {
    const t = await workspaceOrg();
    const project = (
      await call("POST", "/v1/projects/resolve", { key: t.author.key, body: { reference: "scoped-project" } })
    ).json.data.project_id;
    const o = await appendOk(t.author.key, obs("swap", "evidence", { project_id: project }));
    const replacement = (
      await call("POST", "/v1/consolidations", {
        key: t.author.key,
        body: {
          subject_id: "swap",
          project_id: project,
          claims: [{ kind: "fact", statement: "in the workspace", sources: supports(o) }],
        },
      })
    ).json.data.claims[0].claim_id as string;
    const [open] = await consolidateOk(t.author.key, "swap", [
      {
        kind: "fact",
        statement: "organization-wide",
        sources: supports(await appendOk(t.author.key, obs("swap", "open"))),
      },
    ]);
    expect(
      (await call("POST", `/v1/claims/${open}/supersede`, { key: t.author.key, body: { superseded_by: replacement } }))
        .status,
    ).toBe(200);
    const ev = (await call("GET", "/v1/events?kind=claim.superseded", { key: t.outsider.key })).json.data.events;
    expect(ev.map((e: { resource_id: string }) => e.resource_id)).toEqual([open]);
    expect(ev[0].payload).not.toHaveProperty("superseded_by");
    expect(JSON.stringify(ev)).not.toContain(replacement);
  });

  it("federation pull serves only organization-wide team events: a peer is in no workspace", async () => {
    const t = await workspaceOrg();
    const { teamEventsAfter } = await import("../src/org/events");
    const served = await inOrg(t.org.org_id, (o) =>
      teamEventsAfter(o.db, 0, ["observation.appended", "claim.materialized", "claim.revoked"], 200).map(
        (e) => e.event_id,
      ),
    );
    expect(served).toEqual(expect.arrayContaining(t.orgEvents.map((e) => e.id)));
    for (const e of t.wsEvents) expect(served).not.toContain(e.id);
  });
});

describe("a webhook's delivery list shows only deliveries of events the caller may read", () => {
  it("filters before the page limit; the cursor continues among them", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, (o) => {
      o.deps = { ...o.deps, sendWebhook: recordingSender };
    });
    const alice = await mintKey(org.api_key, { scopes: ["*"] });
    // "bob" is the owner: it manages every hook (alice's too) but cannot read alice's private event.
    const bob = { key: org.api_key };
    const hook = await call("POST", "/v1/webhooks", {
      key: alice.key,
      body: { url: "https://hooks.example.com/a", secret, events: ["*"] },
    });
    expect(hook.status, hook.text).toBe(201);
    const id = hook.json.data.webhook_id as string;
    await appendOk(alice.key, obs("s", "team one"));
    await appendOk(alice.key, obs("s", "team two"));
    await appendOk(alice.key, obs("s", "private, newest", { visibility: "private" }));
    expect((await call("POST", "/v1/webhooks/deliver", { key: alice.key, body: {} })).status).toBe(200);
    const list = (key: string, q = "") => call("GET", `/v1/webhooks/${id}/deliveries${q}`, { key });
    const all = (await list(alice.key)).json.data.deliveries as { id: string; event_id: string }[];
    expect(all).toHaveLength(3);
    const privateDelivery = all[0];
    const bobs = (await list(bob.key)).json.data.deliveries as { id: string; event_id: string }[];
    expect(bobs.map((d) => d.id)).toEqual(all.slice(1).map((d) => d.id));
    // Newest first, one per page: bob's first page is the newest delivery he may see, and more follows.
    const first = await list(bob.key, "?limit=1");
    expect(first.json.data.deliveries.map((d: { id: string }) => d.id)).toEqual([all[1].id]);
    expect(first.json.data.has_more).toBe(true);
    const second = await list(bob.key, `?limit=1&after=${first.json.data.next_cursor}`);
    expect(second.json.data.deliveries.map((d: { id: string }) => d.id)).toEqual([all[2].id]);
    expect(second.json.data.has_more).toBe(false);
    expect(second.json.data.next_cursor).toBeNull();
    // Alice's private delivery as a cursor is, for bob, the same as one that does not exist.
    const aliceCursor = (await list(alice.key, "?limit=1")).json.data.next_cursor as string;
    expect(decode(aliceCursor)).toEqual([privateDelivery.id]);
    const hidden = await list(bob.key, `?after=${aliceCursor}`);
    const missing = await list(bob.key, `?after=${btoa(JSON.stringify(["dlv_" + "0".repeat(32)])).replace(/=+$/, "")}`);
    expectError(hidden, 404, "NOT_FOUND");
    expect(body(hidden)).toEqual(body(missing));
    expect(
      (await list(alice.key, `?after=${aliceCursor}`)).json.data.deliveries.map((d: { id: string }) => d.id),
    ).toEqual(all.slice(1).map((d) => d.id));
  });
});

describe("list cursors name the caller's own last row, never a position among everybody's", () => {
  it("GET /v1/handoffs: the cursor holds the last handoff of the page; another's handoff as `after` is a missing one", async () => {
    const org = await newOrg();
    const alice = await mintKey(org.api_key, { scopes: ["*"] });
    const bob = await mintKey(org.api_key, { scopes: ["*"] });
    const carol = await mintKey(org.api_key, { scopes: ["*"] });
    const offer = async (to: string) => {
      const r = await call("POST", "/v1/handoffs", { key: alice.key, body: { to_principal_id: to } });
      expect(r.status, r.text).toBe(201);
      return r.json.data.handoff_id as string;
    };
    const forBob = [await offer(bob.principal_id)];
    const forCarol = [await offer(carol.principal_id), await offer(carol.principal_id)];
    forBob.push(await offer(bob.principal_id), await offer(bob.principal_id));
    const page = (q: string) => call("GET", `/v1/handoffs${q}`, { key: bob.key });
    const p1 = await page("?limit=2");
    expect(p1.json.data.handoffs.map((x: { handoff_id: string }) => x.handoff_id)).toEqual(forBob.slice(0, 2));
    expect(decode(p1.json.data.next_cursor)).toEqual([forBob[1]]);
    const p2 = await page(`?limit=2&after=${p1.json.data.next_cursor}`);
    expect(p2.json.data).toMatchObject({ has_more: false, next_cursor: null });
    expect(p2.json.data.handoffs.map((x: { handoff_id: string }) => x.handoff_id)).toEqual([forBob[2]]);
    // A resolved handoff still marks its place.
    expect(
      (await call("POST", `/v1/handoffs/${forBob[1]}/resolve`, { key: bob.key, body: { status: "accepted" } })).status,
    ).toBe(200);
    expect(
      (await page(`?after=${p1.json.data.next_cursor}`)).json.data.handoffs.map(
        (x: { handoff_id: string }) => x.handoff_id,
      ),
    ).toEqual([forBob[2]]);
    const cursorOf = (id: string) =>
      btoa(JSON.stringify([id]))
        .replace(/\+/g, "-")
        .replace(/\//g, "_")
        .replace(/=+$/, "");
    const carols = await page(`?after=${cursorOf(forCarol[0])}`);
    const missing = await page(`?after=${cursorOf("hnd_" + "0".repeat(32))}`);
    expectError(carols, 404, "NOT_FOUND");
    expect(body(carols)).toEqual(body(missing));
    expectError(await page("?after=garbage"), 400, "VALIDATION_ERROR");
  });

  it("GET /v1/leases: the cursor holds the last lease of the page", async () => {
    const org = await newOrg();
    const ids: string[] = [];
    for (const r of ["a", "b", "c"]) {
      const l = await call("POST", "/v1/leases", {
        key: org.api_key,
        body: { resource_type: "file", resource_id: r, ttl_seconds: 60 },
      });
      expect(l.status, l.text).toBe(201);
      ids.push(l.json.data.lease_id);
    }
    const p1 = await call("GET", "/v1/leases?limit=2", { key: org.api_key });
    expect(decode(p1.json.data.next_cursor)).toEqual([ids[1]]);
    const p2 = await call("GET", `/v1/leases?limit=2&after=${p1.json.data.next_cursor}`, { key: org.api_key });
    expect(p2.json.data.leases.map((l: { lease_id: string }) => l.lease_id)).toEqual([ids[2]]);
  });
});

describe("feedback on a handed-off run reaches only the items the caller may retrieve", () => {
  it("run-level feedback skips unreadable items; naming one answers like a non-item", async () => {
    const org = await newOrg();
    const alice = await mintKey(org.api_key, { scopes: ["*"] });
    const bob = await mintKey(org.api_key, { scopes: ["*"] });
    const teamObs = await appendOk(alice.key, obs("fb", "heron team note"));
    const privObs = await appendOk(alice.key, obs("fb", "heron private note", { visibility: "private" }));
    const [teamClaim] = await consolidateOk(alice.key, "fb", [
      { kind: "fact", statement: "heron team claim", sources: supports(teamObs) },
    ]);
    const [privClaim] = await consolidateOk(alice.key, "fb", [
      { kind: "fact", statement: "heron private claim", visibility: "private", sources: supports(privObs) },
    ]);
    const run = await call("POST", "/v1/context/compile", {
      key: alice.key,
      body: { query: "heron", token_budget: 1000 },
    });
    expect(run.status, run.text).toBe(201);
    const ctx = run.json.data.context_id as string;
    expect(run.json.data.items.map((i: { claim_id: string }) => i.claim_id).sort()).toEqual(
      [teamClaim, privClaim].sort(),
    );
    const h = await call("POST", "/v1/handoffs", {
      key: alice.key,
      body: { to_principal_id: bob.principal_id, context_id: ctx },
    });
    expect(h.status, h.text).toBe(201);
    const scores = () =>
      inOrg(org.org_id, (o) =>
        Object.fromEntries(
          o.db
            .all<{ claim_id: string; score: number }>("SELECT claim_id, score FROM claim_feedback_score")
            .map((r) => [r.claim_id, r.score]),
        ),
      );

    const feedback = (b: Record<string, unknown>) =>
      call("POST", `/v1/context/${ctx}/feedback`, { key: bob.key, body: b });
    expect((await feedback({ outcome: "useful" })).status).toBe(201);
    expect(await scores()).toEqual({ [teamClaim]: 0.5 });

    const hidden = await feedback({ outcome: "harmful", claim_id: privClaim });
    const nonItem = await feedback({ outcome: "harmful", claim_id: "claim_" + "0".repeat(32) });
    expectError(hidden, 400, "VALIDATION_ERROR");
    expect(body(hidden)).toEqual(body(nonItem));
    expect((await feedback({ outcome: "useful", claim_id: teamClaim })).status).toBe(201);
    expect(await scores()).toEqual({ [teamClaim]: 1.5 });
    // The run's own compiler still reaches both.
    expect(
      (await call("POST", `/v1/context/${ctx}/feedback`, { key: alice.key, body: { outcome: "used" } })).status,
    ).toBe(201);
    expect(await scores()).toEqual({ [teamClaim]: 1.75, [privClaim]: 0.25 });
  });
});

describe("MCP tools translate storage failures exactly like HTTP routes", () => {
  it("a unique-constraint failure is CONFLICT through both", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, (o) =>
      o.db.run("CREATE UNIQUE INDEX forced_unique ON observations(subject_id) WHERE subject_id = 'forced'"),
    );
    expect((await call("POST", "/v1/observations", { key: org.api_key, body: obs("forced", "first") })).status).toBe(
      201,
    );
    const http = await call("POST", "/v1/observations", { key: org.api_key, body: obs("forced", "second") });
    expectError(http, 409, "CONFLICT");
    const r = await call("POST", "/mcp", {
      key: org.api_key,
      raw: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "svc_remember", arguments: { subject_id: "forced", content: "third" } },
      }),
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.result.isError).toBe(true);
    expect(r.json.result.content[0].text).toBe(`CONFLICT: ${http.json.error.message}`);
  });
});

describe("a reused Idempotency-Key says nothing about whose it was", () => {
  it("another principal's key and a different body of one's own get the same 409", async () => {
    const org = await newOrg();
    const bob = await mintKey(org.api_key, { scopes: ["*"] });
    const post = (key: string, content: string) =>
      call("POST", "/v1/observations", {
        key,
        body: obs("idem", content),
        headers: { "idempotency-key": "shared-key" },
      });
    expect((await post(org.api_key, "one")).status).toBe(201);
    const other = await post(bob.key, "one");
    const changed = await post(org.api_key, "two");
    expectError(other, 409, "CONFLICT");
    expectError(changed, 409, "CONFLICT");
    expect(other.json.error.message).toBe("Idempotency-Key was already used for a different request.");
    expect(body(other)).toEqual(body(changed));
  });
});
