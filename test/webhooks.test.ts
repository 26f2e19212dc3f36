import { runDurableObjectAlarm } from "cloudflare:test";
import { verify } from "@octokit/webhooks-methods";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { claimDeliveries, fetchSender, RECLAIM_AFTER_MS, type Sender } from "../src/domains/webhooks/delivery";
import { webhookUrlProblem } from "../src/domains/webhooks/url-guard";
import type { EventRow } from "../src/org/events";
import { clock } from "../src/http/clock";
import { decodeCursor } from "../src/http/cursor";
import { appendOk, call, expectError, inOrg, mintKey, newOrg as newBareOrg, obs, orgStub } from "./helpers";

const secret = "s3cret-s3cret-s3cret";

interface Sent {
  url: string;
  headers: Record<string, string>;
  body: string;
}

let sent: Sent[] = [];
let respond: (n: number) => number | Promise<number> = () => 200;

const recordingSender: Sender = async (url, init) => {
  sent.push({ url, headers: init.headers, body: init.body });
  return respond(sent.length);
};

/** Give one organization's Durable Object another outbound sender (its dependency, not a module global). */
const useSender = (orgId: string, send: Sender) => inOrg(orgId, (o) => { o.deps = { ...o.deps, sendWebhook: send }; });

/** Every organization in this file delivers to the recording sender. */
const newOrg = async () => {
  const org = await newBareOrg();
  await useSender(org.org_id, recordingSender);
  return org;
};

beforeEach(() => {
  sent = [];
  respond = () => 200;
});
afterEach(() => {
  vi.restoreAllMocks();
});

const register = async (key: string, body: Record<string, unknown> = {}) => {
  const r = await call("POST", "/v1/webhooks", { key, body: { url: "https://hooks.example.com/in", secret, events: ["*"], ...body } });
  expect(r.status, r.text).toBe(201);
  return r.json.data as { webhook_id: string };
};
const drain = (key: string, body: Record<string, unknown> = {}) => call("POST", "/v1/webhooks/deliver", { key, body });

describe("webhook registration", () => {
  it.each([
    ["http://example.com/h", "plain http to a public host"],
    ["ftp://example.com/h", "another scheme"],
    ["https://10.1.2.3/h", "10/8"],
    ["https://192.168.1.1/h", "192.168/16"],
    ["https://169.254.169.254/latest", "link-local metadata"],
    ["https://172.16.0.1/h", "172.16/12 low"],
    ["https://172.31.255.255/h", "172.16/12 high"],
    ["https://100.64.0.1/h", "CGNAT"],
    ["https://0.0.0.0/h", "unspecified"],
    ["https://127.0.0.2/h", "loopback other than 127.0.0.1"],
    ["https://[::1]/h", "IPv6 loopback"],
    ["https://[fe80::1]/h", "IPv6 link-local"],
    ["https://[fd00::1]/h", "IPv6 unique-local"],
    ["https://[::ffff:10.0.0.1]/h", "IPv4-mapped IPv6"],
    ["https://[::ffff:a00:1]/h", "IPv4-mapped IPv6, hex"],
    ["https://0x0a000001/h", "hex IPv4"],
    ["https://167772161/h", "decimal IPv4"],
    ["https://012.0.0.1/h", "octal IPv4"],
    ["http://2130706433/h", "decimal loopback over http"],
    ["http://0x7f.0.0.1/h", "hex loopback over http"],
    ["https://user:pw@hooks.example.com/h", "credentials"],
    ["https://user@hooks.example.com/h", "user only"],
    ["http://localhost.evil.com/h", "localhost prefix"],
    ["https://intranet/h", "single-label host"],
    ["not a url", "garbage"],
  ])("refuses %s (%s) with 400", async (url) => {
    expect(webhookUrlProblem(url)).not.toBeNull();
    const org = await newOrg();
    const r = await call("POST", "/v1/webhooks", { key: org.api_key, body: { url, secret, events: ["*"] } });
    expectError(r, 400, "VALIDATION_ERROR");
    expect(r.json.error.message).toContain('"url"');
  });

  it.each(["https://hooks.example.com/x", "http://localhost:8080/hook", "http://127.0.0.1:9/h", "https://8.8.8.8/h", "https://[2606:4700::1111]/h"])(
    "accepts %s", (url) => expect(webhookUrlProblem(url)).toBeNull());

  it("validates secret and events, never echoes the secret, returns the signing object", async () => {
    const org = await newOrg();
    const base = { url: "https://hooks.example.com/x", secret, events: ["claim.revoked"] };
    for (const body of [{ ...base, secret: "short" }, { ...base, events: [] }, { ...base, events: ["no.such"] },
      { ...base, events: Array.from({ length: 51 }, () => "claim.revoked") }, { ...base, url: undefined }, { ...base, extra: 1 }])
      expectError(await call("POST", "/v1/webhooks", { key: org.api_key, body }), 400, "VALIDATION_ERROR");
    const r = await call("POST", "/v1/webhooks", { key: org.api_key, body: base });
    expect(r.status).toBe(201);
    expect(r.json.data).toMatchObject({ url: base.url, events: ["claim.revoked"], status: "active", failure_count: 0 });
    expect(r.json.data.webhook_id).toMatch(/^whk_[0-9a-f]{32}$/);
    expect(r.json.data.signing).toMatchObject({ header: "X-Svc-Signature", algorithm: "HMAC-SHA256" });
    expect(typeof r.json.data.signing.format).toBe("string");
    expect(typeof r.json.data.signing.note).toBe("string");
    expect(r.text).not.toContain(secret);
    const list = await call("GET", "/v1/webhooks", { key: org.api_key });
    expect(list.json.data.webhooks).toHaveLength(1);
    expect(list.text).not.toContain(secret);
    await register(org.api_key);
    expect((await call("GET", "/v1/webhooks", { key: org.api_key })).json.data.webhooks).toHaveLength(2);
  });

  it("needs the webhook scopes and hides other organizations' hooks", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const ro = await mintKey(org.api_key, { scopes: ["webhooks:read"] });
    expectError(await call("POST", "/v1/webhooks", { key: ro.key, body: { url: "https://a.example.com/", secret, events: ["*"] } }), 403, "FORBIDDEN");
    const hook = await register(org.api_key);
    for (const [m, p] of [["DELETE", ""], ["POST", "/pause"], ["POST", "/resume"], ["GET", "/deliveries"]]) {
      const foreign = await call(m, `/v1/webhooks/${hook.webhook_id}${p}`, { key: other.api_key });
      const missing = await call(m, `/v1/webhooks/whk_${"0".repeat(32)}${p}`, { key: other.api_key });
      expectError(foreign, 404, "NOT_FOUND");
      expect(foreign.json.error).toEqual(missing.json.error);
    }
    expect((await call("GET", "/v1/webhooks", { key: other.api_key })).json.data.webhooks).toEqual([]);
  });
});

describe("who manages a webhook", () => {
  /** A key holding every scope for a new principal with `role` (minted principals start as members). */
  const principalWithRole = async (ownerKey: string, role: "admin" | "member" | "reader") => {
    const k = await mintKey(ownerKey, { scopes: ["*"] });
    if (role !== "member") expect((await call("POST", "/v1/memberships", { key: ownerKey, body: { principal_id: k.principal_id, role } })).status).toBe(201);
    return k;
  };
  const listed = async (key: string) => (await call("GET", "/v1/webhooks", { key })).json.data.webhooks.map((w: any) => w.webhook_id);

  it("lists a member's and a reader's own hooks only; owners and admins see every hook", async () => {
    const org = await newOrg();
    const admin = await principalWithRole(org.api_key, "admin");
    const member = await principalWithRole(org.api_key, "member");
    const demoted = await principalWithRole(org.api_key, "member");
    const owners = await register(org.api_key, { url: "https://hooks.example.com/in?token=owner-token" });
    const members = await register(member.key);
    const later = await register(demoted.key);
    expect((await call("POST", "/v1/memberships", { key: org.api_key, body: { principal_id: demoted.principal_id, role: "reader" } })).status).toBe(201);
    const reader = await principalWithRole(org.api_key, "reader");
    const all = [owners.webhook_id, members.webhook_id, later.webhook_id];
    expect(await listed(org.api_key)).toEqual(all);
    expect(await listed(admin.key)).toEqual(all);
    expect(await listed(member.key)).toEqual([members.webhook_id]);
    expect(await listed(demoted.key)).toEqual([later.webhook_id]);
    const readers = await call("GET", "/v1/webhooks", { key: reader.key });
    expect(readers.json.data.webhooks).toEqual([]);
    expect(readers.text).not.toContain("owner-token");
  });

  it("lets only the creator or an owner/admin pause, resume, delete or list deliveries; to another member the hook is missing", async () => {
    const org = await newOrg();
    const admin = await principalWithRole(org.api_key, "admin");
    const member = await principalWithRole(org.api_key, "member");
    const other = await principalWithRole(org.api_key, "member");
    const owners = await register(org.api_key);
    const members = await register(member.key);
    const actions: [string, string][] = [["GET", "/deliveries"], ["POST", "/pause"], ["POST", "/resume"], ["DELETE", ""]];
    for (const [method, suffix] of actions) {
      const missing = await call(method, `/v1/webhooks/whk_${"0".repeat(32)}${suffix}`, { key: other.key });
      expectError(missing, 404, "NOT_FOUND");
      for (const hook of [owners, members]) {
        const refused = await call(method, `/v1/webhooks/${hook.webhook_id}${suffix}`, { key: other.key });
        expect([refused.status, refused.json.error]).toEqual([404, missing.json.error]);
      }
      const asMember = await call(method, `/v1/webhooks/${owners.webhook_id}${suffix}`, { key: member.key });
      expect([asMember.status, asMember.json.error]).toEqual([404, missing.json.error]);
    }
    expect(await listed(org.api_key)).toHaveLength(2); // nothing was paused or deleted by the refused calls
    expect((await call("GET", "/v1/webhooks", { key: org.api_key })).json.data.webhooks.map((w: any) => w.status)).toEqual(["active", "active"]);
    // The creator manages its own; an admin and the owner manage anyone's.
    expect((await call("POST", `/v1/webhooks/${members.webhook_id}/pause`, { key: member.key })).json.data.status).toBe("paused");
    expect((await call("POST", `/v1/webhooks/${members.webhook_id}/resume`, { key: admin.key })).json.data.status).toBe("active");
    expect((await call("GET", `/v1/webhooks/${members.webhook_id}/deliveries`, { key: org.api_key })).status).toBe(200);
    expect((await call("POST", `/v1/webhooks/${owners.webhook_id}/pause`, { key: admin.key })).json.data.status).toBe("paused");
    expect((await call("DELETE", `/v1/webhooks/${members.webhook_id}`, { key: org.api_key })).status).toBe(200);
    expect((await call("DELETE", `/v1/webhooks/${owners.webhook_id}`, { key: org.api_key })).status).toBe(200);
  });
});

describe("delivery", () => {
  it("posts the stored payload once with a signature an independent verifier accepts", async () => {
    const org = await newOrg();
    const hook = await register(org.api_key, { events: ["observation.appended"] });
    const id = await appendOk(org.api_key, obs("subj-1", "hello"));
    const d1 = await drain(org.api_key, { limit: 200 });
    expect(d1.status).toBe(200);
    expect(d1.json.data).toMatchObject({ events_drained: 1, pending_deliveries: 0 });
    // The cursor names the last event drained (the observation's), like the memories cursor names a claim.
    const events = (await call("GET", "/v1/events", { key: org.api_key })).json.data.events;
    expect(events.map((e: any) => e.resource_id)).toEqual([id]);
    expect(decodeCursor(d1.json.data.cursor, (v): v is unknown => true)).toEqual([events[0].id]);
    expect((await drain(org.api_key, { after: d1.json.data.cursor })).json.data).toMatchObject({ events_drained: 0, cursor: d1.json.data.cursor });
    expect(sent).toHaveLength(1);
    const s = sent[0];
    // What a receiver needs to act without parsing the body: the event, its resource and its time.
    expect(s.headers["x-svc-event-id"]).toBe(events[0].id);
    expect(s.headers["x-svc-resource"]).toBe(`observation/${id}`);
    expect(s.headers["x-svc-timestamp"]).toBe(events[0].created_at);
    expect(JSON.parse(s.body)).toEqual({ subject_id: "subj-1", kind: "note", trust: "medium", visibility: "team" });
    expect(s.headers["x-svc-event"]).toBe("observation.appended");
    expect(s.headers["x-svc-delivery"]).toMatch(/^dlv_[0-9a-f]{32}$/);
    expect(s.headers["x-svc-signature"]).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(await verify(secret, s.body, s.headers["x-svc-signature"])).toBe(true);
    expect(await verify("another-secret-entirely", s.body, s.headers["x-svc-signature"])).toBe(false);
    await drain(org.api_key);
    expect(sent).toHaveLength(1);
    const list = await call("GET", `/v1/webhooks/${hook.webhook_id}/deliveries`, { key: org.api_key });
    expect(list.json.data.deliveries).toHaveLength(1);
    expect(list.json.data.deliveries[0]).toMatchObject({ id: s.headers["x-svc-delivery"], status: "delivered", attempts: 1, response_status: 200, next_retry_at: null });
    expect(Object.keys(list.json.data.deliveries[0]).sort()).toEqual(
      ["attempts", "created_at", "event_id", "id", "last_attempt_at", "next_retry_at", "response_status", "status"]);
    expect(id).toMatch(/^obs_/);
  });

  it("filters by subscribed kinds and by what the hook's creator may read", async () => {
    const org = await newOrg();
    const other = await mintKey(org.api_key, { scopes: ["*"] });
    const claims = await register(org.api_key, { events: ["claim.materialized"] });
    await register(org.api_key, { events: ["*"] });
    await appendOk(org.api_key, obs("s", "x"));
    await appendOk(other.key, obs("s", "private to other", { visibility: "private" }));
    await drain(org.api_key);
    expect(sent).toHaveLength(1);
    const claimsHook = (await call("GET", `/v1/webhooks/${claims.webhook_id}/deliveries`, { key: org.api_key })).json.data.deliveries;
    expect(claimsHook).toHaveLength(0);
    expect(JSON.parse(sent[0].body).visibility).toBe("team");
  });

  it("counts and cursors cover only events the caller may read, and pending deliveries only hooks it manages", async () => {
    const org = await newOrg();
    const member = await mintKey(org.api_key, { scopes: ["*"] });
    const other = await mintKey(org.api_key, { scopes: ["*"] });
    await register(member.key);
    await register(other.key, { url: "https://other.example.com/in" });
    respond = (n) => (sent[n - 1].url.includes("other") ? 500 : 200); // the other principal's hook keeps its deliveries pending
    await appendOk(member.key, obs("s", "the member's own"));
    const toEnd = await drain(member.key, { limit: 200 });
    expect(toEnd.json.data).toMatchObject({ events_drained: 1, pending_deliveries: 0 });
    const cursor = toEnd.json.data.cursor;
    for (let i = 0; i < 3; i++) await appendOk(other.key, obs("s", `private ${i}`, { visibility: "private" }));
    await drain(other.key, { limit: 200 });
    const next = await drain(member.key, { after: cursor, limit: 200 });
    expect(next.json.data).toEqual({ events_drained: 0, cursor, pending_deliveries: 0 });
    const fromStart = await drain(member.key, { limit: 200 });
    expect(fromStart.json.data).toEqual({ events_drained: 1, cursor, pending_deliveries: 0 });
    // The other principal sees its own three, and the team one, pending at its own hook.
    expect((await drain(other.key, { limit: 200 })).json.data).toMatchObject({ events_drained: 4, pending_deliveries: 4 });
    // The owner manages both hooks but reads only the team event: one pending delivery.
    expect((await drain(org.api_key, { limit: 200 })).json.data).toMatchObject({ events_drained: 1, pending_deliveries: 1 });
  });

  it("sends exactly once when drains run concurrently", async () => {
    const org = await newOrg();
    await register(org.api_key);
    for (let i = 0; i < 5; i++) await appendOk(org.api_key, obs("s", `n${i}`));
    respond = async () => {
      await new Promise((r) => setTimeout(r, 5));
      return 200;
    };
    await Promise.all([drain(org.api_key), drain(org.api_key), drain(org.api_key)]);
    expect(sent).toHaveLength(5);
    expect(new Set(sent.map((s) => s.headers["x-svc-delivery"])).size).toBe(5);
  });

  it("records a failed first attempt as pending with next_retry_at and never re-attempts it", async () => {
    const org = await newOrg();
    const hook = await register(org.api_key);
    await appendOk(org.api_key, obs("s", "x"));
    respond = () => 500;
    const d = await drain(org.api_key);
    expect(d.json.data.pending_deliveries).toBe(1);
    const [row] = (await call("GET", `/v1/webhooks/${hook.webhook_id}/deliveries`, { key: org.api_key })).json.data.deliveries;
    expect(row).toMatchObject({ status: "pending", attempts: 1, response_status: 500 });
    expect(Date.parse(row.next_retry_at) - Date.parse(row.last_attempt_at)).toBe(60_000);
    respond = () => 200;
    await drain(org.api_key);
    expect(sent).toHaveLength(1);
    const hooks = await call("GET", "/v1/webhooks", { key: org.api_key });
    expect(hooks.json.data.webhooks[0].failure_count).toBe(1);
  });

  it("disables a hook after ten consecutive failures; pause and resume are then 403", async () => {
    const org = await newOrg();
    const hook = await register(org.api_key);
    for (let i = 0; i < 12; i++) await appendOk(org.api_key, obs("s", `n${i}`));
    respond = () => 503;
    await drain(org.api_key);
    expect(sent).toHaveLength(10);
    const h = (await call("GET", "/v1/webhooks", { key: org.api_key })).json.data.webhooks[0];
    expect(h).toMatchObject({ status: "disabled", failure_count: 10 });
    const p = await call("POST", `/v1/webhooks/${hook.webhook_id}/pause`, { key: org.api_key });
    expectError(p, 403, "FORBIDDEN");
    expect(p.json.error.message).toBe("Cannot pause a disabled webhook.");
    const r = await call("POST", `/v1/webhooks/${hook.webhook_id}/resume`, { key: org.api_key });
    expectError(r, 403, "FORBIDDEN");
    expect(r.json.error.message).toBe("Cannot resume a disabled webhook. Re-register it.");
  });

  it("resets the consecutive count on success", async () => {
    const org = await newOrg();
    await register(org.api_key);
    for (let i = 0; i < 12; i++) await appendOk(org.api_key, obs("s", `n${i}`));
    respond = (n) => (n === 6 ? 200 : 500);
    await drain(org.api_key);
    const h = (await call("GET", "/v1/webhooks", { key: org.api_key })).json.data.webhooks[0];
    expect(h).toMatchObject({ status: "active", failure_count: 6 });
  });

  it("pauses delivery while events accrue; resume resets failure_count and delivers them", async () => {
    const org = await newOrg();
    const hook = await register(org.api_key);
    respond = () => 500;
    await appendOk(org.api_key, obs("s", "fails"));
    await drain(org.api_key);
    const p = await call("POST", `/v1/webhooks/${hook.webhook_id}/pause`, { key: org.api_key });
    expect(p.json.data.status).toBe("paused");
    respond = () => 200;
    await appendOk(org.api_key, obs("s", "while paused"));
    await drain(org.api_key);
    expect(sent).toHaveLength(1);
    const r = await call("POST", `/v1/webhooks/${hook.webhook_id}/resume`, { key: org.api_key });
    expect(r.json.data).toMatchObject({ status: "active", failure_count: 0 });
    await drain(org.api_key);
    expect(sent).toHaveLength(2);
  });

  it("drains from `after` and pages by limit; validates the body", async () => {
    const org = await newOrg();
    await register(org.api_key);
    for (let i = 0; i < 3; i++) await appendOk(org.api_key, obs("s", `n${i}`));
    const first = await drain(org.api_key, { limit: 2 });
    expect(first.json.data.events_drained).toBe(2);
    const rest = await drain(org.api_key, { after: first.json.data.cursor });
    expect(rest.json.data.events_drained).toBe(1);
    expect(sent).toHaveLength(3);
    const none = await drain(org.api_key, { after: rest.json.data.cursor });
    expect(none.json.data).toMatchObject({ events_drained: 0, cursor: rest.json.data.cursor });
    for (const body of [{ limit: 0 }, { limit: 201 }, { limit: "5" }])
      expectError(await drain(org.api_key, body), 400, "VALIDATION_ERROR");
    expectError(await drain(org.api_key, { after: `evt_${"0".repeat(32)}` }), 404, "NOT_FOUND");
  });

  it("deletes a hook with its delivery rows", async () => {
    const org = await newOrg();
    const hook = await register(org.api_key);
    await appendOk(org.api_key, obs("s", "x"));
    await drain(org.api_key);
    const d = await call("DELETE", `/v1/webhooks/${hook.webhook_id}`, { key: org.api_key });
    expect(d.json.data).toMatchObject({ deleted: true, deliveries_removed: 1 });
    const left = await inOrg(org.org_id, (o) => o.db.first<{ n: number }>("SELECT count(*) AS n FROM deliveries")!.n);
    expect(left).toBe(0);
    expectError(await call("GET", `/v1/webhooks/${hook.webhook_id}/deliveries`, { key: org.api_key }), 404, "NOT_FOUND");
  });

  it("pages deliveries newest first", async () => {
    const org = await newOrg();
    const hook = await register(org.api_key);
    for (let i = 0; i < 3; i++) await appendOk(org.api_key, obs("s", `n${i}`));
    await drain(org.api_key);
    const p1 = await call("GET", `/v1/webhooks/${hook.webhook_id}/deliveries?limit=2`, { key: org.api_key });
    const p2 = await call("GET", `/v1/webhooks/${hook.webhook_id}/deliveries?limit=2&after=${p1.json.data.next_cursor}`, { key: org.api_key });
    const ids = [...p1.json.data.deliveries, ...p2.json.data.deliveries].map((d: any) => d.id);
    expect(ids).toEqual(sent.map((s) => s.headers["x-svc-delivery"]).reverse());
    expectError(await call("GET", `/v1/webhooks/${hook.webhook_id}/deliveries?limit=201`, { key: org.api_key }), 400, "VALIDATION_ERROR");
  });

  it("emits no events and audits every administrative change", async () => {
    const org = await newOrg();
    const hook = await register(org.api_key);
    await call("POST", `/v1/webhooks/${hook.webhook_id}/pause`, { key: org.api_key });
    await call("POST", `/v1/webhooks/${hook.webhook_id}/resume`, { key: org.api_key });
    await call("DELETE", `/v1/webhooks/${hook.webhook_id}`, { key: org.api_key });
    const rows = await inOrg(org.org_id, (o) => ({
      audit: o.db.all<{ action: string }>("SELECT action FROM audit_log WHERE resource_id = ? ORDER BY seq", hook.webhook_id).map((r) => r.action),
      events: o.db.first<{ n: number }>("SELECT count(*) AS n FROM events")!.n,
    }));
    expect(rows).toEqual({ audit: ["webhook.created", "webhook.paused", "webhook.resumed", "webhook.deleted"], events: 0 });
    await drain(org.api_key, { limit: 7 });
    const drained = await inOrg(org.org_id, (o) => o.db.all<{ detail: string }>("SELECT detail FROM audit_log WHERE action = 'webhook.drained'"));
    expect(drained.map((d) => JSON.parse(d.detail))).toEqual([{ after: null, limit: 7, events_drained: 0, cursor: null, pending_deliveries: 0 }]);
  });
});

describe("the real sender", () => {
  it("does not follow redirects: a 3xx is a failure; only 2xx succeeds", async () => {
    const org = await newOrg();
    await useSender(org.org_id, fetchSender);
    const calls: RequestInit[] = [];
    vi.spyOn(globalThis, "fetch").mockImplementation(async (_url, init) => {
      calls.push(init as RequestInit);
      return new Response("ignored body", { status: 302, headers: { location: "https://elsewhere.example.com/" } });
    });
    await register(org.api_key);
    await appendOk(org.api_key, obs("s", "x"));
    await drain(org.api_key);
    expect(calls).toHaveLength(1);
    expect(calls[0].redirect).toBe("manual");
    // A timeout signal bounds every delivery attempt.
    expect(calls[0].signal).toBeInstanceOf(AbortSignal);
    const h = (await call("GET", "/v1/webhooks", { key: org.api_key })).json.data.webhooks[0];
    expect(h.failure_count).toBe(1);
  });
});

describe("background repair", () => {
  it("is reported enabled with the configured interval, and the alarm delivers new events", async () => {
    const ready = await call("GET", "/readyz");
    expect(ready.json.data.capabilities).toMatchObject({ background_repair: "enabled", maintenance_interval_seconds: 15 });
    const org = await newOrg();
    await register(org.api_key);
    await appendOk(org.api_key, obs("s", "x"));
    // An alarm that runs before delivery is due (e.g. for the outbox) delivers nothing yet.
    await runDurableObjectAlarm(orgStub(org.org_id) as unknown as DurableObjectStub);
    expect(sent).toHaveLength(0);
    clock.advance(15_000);
    expect(await runDurableObjectAlarm(orgStub(org.org_id) as unknown as DurableObjectStub)).toBe(true);
    expect(sent).toHaveLength(1);
    // The alarm continues from its own cursor: nothing is sent twice.
    await appendOk(org.api_key, obs("s", "y"));
    clock.advance(15_000);
    await runDurableObjectAlarm(orgStub(org.org_id) as unknown as DurableObjectStub);
    await drain(org.api_key);
    expect(sent).toHaveLength(2);
  });
});

describe("reclaiming a delivery whose sender died", () => {
  /** The crash: the delivery rows are claimed ('sending') and the instance dies before it sends. */
  const claimThenCrash = (orgId: string) => inOrg(orgId, (o) =>
    claimDeliveries(o.db, (o as unknown as { ctx: DurableObjectState }).ctx.storage, o.db.all<EventRow>("SELECT * FROM events"))
      .map((j) => j.deliveryId));
  const deliveries = async (key: string) =>
    (await call("GET", `/v1/webhooks/${(await call("GET", "/v1/webhooks", { key })).json.data.webhooks[0].webhook_id}/deliveries`, { key })).json.data.deliveries;

  it("sends a claim left 'sending' past the timeout again, exactly once, under the same delivery id", async () => {
    const org = await newOrg();
    await register(org.api_key);
    await appendOk(org.api_key, obs("s", "x"));
    const claimed = await claimThenCrash(org.org_id);
    expect(claimed).toHaveLength(1);

    // Within the timeout the claim may still be in flight: nothing is resent, and it is reported pending.
    clock.advance(RECLAIM_AFTER_MS - 1_000);
    const early = await drain(org.api_key);
    expect(sent).toHaveLength(0);
    expect(early.json.data.pending_deliveries).toBe(1);
    expect((await deliveries(org.api_key))[0]).toMatchObject({ id: claimed[0], status: "sending", attempts: 0 });

    clock.advance(1_000);
    const reclaimed = await drain(org.api_key);
    expect(sent.map((s) => s.headers["x-svc-delivery"])).toEqual(claimed);
    expect(reclaimed.json.data.pending_deliveries).toBe(0);
    expect(await deliveries(org.api_key)).toMatchObject([{ id: claimed[0], status: "delivered", attempts: 1, response_status: 200 }]);

    // Delivered is final: later drains, however late, never send it again.
    clock.advance(RECLAIM_AFTER_MS * 2);
    await drain(org.api_key);
    expect(sent).toHaveLength(1);
  });

  it("the background job reclaims it too, waking when the claim becomes reclaimable", async () => {
    const org = await newOrg();
    await register(org.api_key);
    await appendOk(org.api_key, obs("s", "x"));
    const claimed = await claimThenCrash(org.org_id);
    const claimedAt = Date.parse((await deliveries(org.api_key))[0].created_at);
    const stub = orgStub(org.org_id) as unknown as DurableObjectStub;
    clock.advance(15_000); // background delivery is due; the claim is not reclaimable yet
    await runDurableObjectAlarm(stub);
    expect(sent).toHaveLength(0);
    expect(await inOrg(org.org_id, (o) => (o as unknown as { ctx: DurableObjectState }).ctx.storage.getAlarm())).toBe(claimedAt + RECLAIM_AFTER_MS);
    clock.advance(RECLAIM_AFTER_MS);
    await runDurableObjectAlarm(stub);
    expect(sent.map((s) => s.headers["x-svc-delivery"])).toEqual(claimed);
  });
});
