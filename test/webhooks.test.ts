import { runDurableObjectAlarm } from "cloudflare:test";
import { verify } from "@octokit/webhooks-methods";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Webhook } from "standardwebhooks";
import {
  claimDeliveries,
  DeliveriesInFlight,
  DRAIN_WAIT_MS,
  fetchSender,
  MAX_ATTEMPTS,
  parseRetrySchedule,
  RECLAIM_AFTER_MS,
  retryScheduleOf,
  type Sender,
  SEND_CONCURRENCY,
  SPEC_RETRY_SCHEDULE_MS,
  webhookDeliveryJob,
} from "../src/domains/webhooks/delivery";
import { webhookUrlProblem } from "../src/domains/webhooks/url-guard";
import type { EventRow } from "../src/org/events";
import { jobDueAt, markJobDue } from "../src/org/jobs";
import { type EventInput, insertEvent } from "../src/org/write";
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
/** Which test is running: an alarm a finished test left behind records nothing into a later test's `sent`. */
let testRun = 0;

/** Records each send into this test's `sent` and answers `respond` (no network). */
const recordingSender = (): Sender => {
  const run = testRun;
  return async (url, init) => {
    if (run !== testRun) return 200;
    sent.push({ url, headers: init.headers, body: init.body });
    return respond(sent.length);
  };
};

/** Give one organization's Durable Object another outbound sender (its dependency, not a module global). */
const useSender = (orgId: string, send: Sender) =>
  inOrg(orgId, (o) => {
    o.deps = { ...o.deps, sendWebhook: send };
  });

/** Every organization in this file delivers to the recording sender. */
const newOrg = async () => {
  const org = await newBareOrg();
  await useSender(org.org_id, recordingSender());
  return org;
};

beforeEach(() => {
  testRun++;
  sent = [];
  respond = () => 200;
});
afterEach(() => {
  vi.restoreAllMocks();
});

const register = async (key: string, body: Record<string, unknown> = {}) => {
  const r = await call("POST", "/v1/webhooks", {
    key,
    body: { url: "https://hooks.example.com/in", secret, events: ["*"], ...body },
  });
  expect(r.status, r.text).toBe(201);
  return r.json.data as { webhook_id: string };
};
const drain = (key: string, body: Record<string, unknown> = {}) => call("POST", "/v1/webhooks/deliver", { key, body });

interface Delivery {
  id: string;
  event_id: string;
  status: string;
  attempts: number;
  last_attempt_at: string | null;
  next_retry_at: string | null;
  response_status: number | null;
  failure_reason: string | null;
  created_at: string;
}
const deliveries = async (key: string, webhookId: string): Promise<Delivery[]> =>
  (await call("GET", `/v1/webhooks/${webhookId}/deliveries?limit=200`, { key })).json.data.deliveries;
/** Waits for work the organization's own alarm does: seconds, not vi.waitFor's default second, on a loaded machine. */
const eventually = <T>(check: () => T | Promise<T>) => vi.waitFor(check, { timeout: 10_000, interval: 20 });
const storageOf = (o: unknown) => (o as { ctx: DurableObjectState }).ctx.storage;
/** Runs the organization's alarm now, if one is set (whatever its time): the jobs that are due by the clock run. */
const runAlarm = (orgId: string) => runDurableObjectAlarm(orgStub(orgId) as unknown as DurableObjectStub);
const alarmAt = (orgId: string) => inOrg(orgId, (o) => storageOf(o).getAlarm());
const deliveryDueAt = (orgId: string) => inOrg(orgId, (o) => jobDueAt(o.db, webhookDeliveryJob.name));
const redeliver = (key: string, webhookId: string, deliveryId: string) =>
  call("POST", `/v1/webhooks/${webhookId}/deliveries/${deliveryId}/retry`, { key });
const ownerOf = async (key: string) => (await call("GET", "/v1/principal", { key })).json.data.principal_id as string;
/**
 * Events committed straight into the log, `actorId`'s, without making the delivery job due (a route's
 * commit would, and the alarm would claim them before the test does what it means to).
 */
const insertEvents = (orgId: string, actorId: string, n: number, extra: Partial<EventInput> = {}) =>
  inOrg(orgId, (o) =>
    storageOf(o).transactionSync(() =>
      Array.from({ length: n }, (_, i) =>
        insertEvent(
          o.db,
          actorId,
          {
            kind: "observation.appended",
            resourceType: "observation",
            resourceId: `obs_${String(i).padStart(32, "0")}`,
            payload: { subject_id: "s", n: i },
            ...extra,
          },
          clock.nowIso(),
        ),
      ),
    ),
  );
/** The crash: an event committed and its delivery claimed ('sending'), then the instance dies before it sends. */
const claimThenCrash = (orgId: string, actorId: string, extra: Partial<EventInput> = {}) =>
  inOrg(orgId, (o) => {
    const storage = storageOf(o);
    const eventId = storage.transactionSync(() =>
      insertEvent(
        o.db,
        actorId,
        {
          kind: "observation.appended",
          resourceType: "observation",
          resourceId: `obs_${"1".repeat(32)}`,
          payload: { subject_id: "s" },
          ...extra,
        },
        clock.nowIso(),
      ),
    );
    return claimDeliveries(o.db, storage, o.db.all<EventRow>("SELECT * FROM events WHERE event_id = ?", eventId)).map(
      (j) => j.deliveryId,
    );
  });

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

  it.each([
    "https://hooks.example.com/x",
    "http://localhost:8080/hook",
    "http://127.0.0.1:9/h",
    "https://8.8.8.8/h",
    "https://[2606:4700::1111]/h",
  ])("accepts %s", (url) => expect(webhookUrlProblem(url)).toBeNull());

  it("validates secret and events, never echoes the secret, returns the signing object", async () => {
    const org = await newOrg();
    const base = { url: "https://hooks.example.com/x", secret, events: ["claim.revoked"] };
    for (const body of [
      { ...base, secret: "short" },
      { ...base, events: [] },
      { ...base, events: ["no.such"] },
      { ...base, events: Array.from({ length: 51 }, () => "claim.revoked") },
      { ...base, url: undefined },
      { ...base, extra: 1 },
    ])
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
    expectError(
      await call("POST", "/v1/webhooks", {
        key: ro.key,
        body: { url: "https://a.example.com/", secret, events: ["*"] },
      }),
      403,
      "FORBIDDEN",
    );
    const hook = await register(org.api_key);
    for (const [m, p] of [
      ["DELETE", ""],
      ["POST", "/pause"],
      ["POST", "/resume"],
      ["GET", "/deliveries"],
      ["POST", `/deliveries/dlv_${"0".repeat(32)}/retry`],
    ]) {
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
    if (role !== "member")
      expect(
        (await call("POST", "/v1/memberships", { key: ownerKey, body: { principal_id: k.principal_id, role } })).status,
      ).toBe(201);
    return k;
  };
  const listed = async (key: string) =>
    (await call("GET", "/v1/webhooks", { key })).json.data.webhooks.map((w: any) => w.webhook_id);

  it("lists a member's and a reader's own hooks only; owners and admins see every hook", async () => {
    const org = await newOrg();
    const admin = await principalWithRole(org.api_key, "admin");
    const member = await principalWithRole(org.api_key, "member");
    const demoted = await principalWithRole(org.api_key, "member");
    const owners = await register(org.api_key, { url: "https://hooks.example.com/in?token=owner-token" });
    const members = await register(member.key);
    const later = await register(demoted.key);
    expect(
      (
        await call("POST", "/v1/memberships", {
          key: org.api_key,
          body: { principal_id: demoted.principal_id, role: "reader" },
        })
      ).status,
    ).toBe(201);
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

  it("lets only the creator or an owner/admin pause, resume, delete, list or redeliver; to another member the hook is missing", async () => {
    const org = await newOrg();
    const admin = await principalWithRole(org.api_key, "admin");
    const member = await principalWithRole(org.api_key, "member");
    const other = await principalWithRole(org.api_key, "member");
    const owners = await register(org.api_key);
    const members = await register(member.key);
    const actions: [string, string][] = [
      ["GET", "/deliveries"],
      ["POST", `/deliveries/dlv_${"0".repeat(32)}/retry`],
      ["POST", "/pause"],
      ["POST", "/resume"],
      ["DELETE", ""],
    ];
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
    expect(
      (await call("GET", "/v1/webhooks", { key: org.api_key })).json.data.webhooks.map((w: any) => w.status),
    ).toEqual(["active", "active"]);
    // The creator manages its own; an admin and the owner manage anyone's.
    expect((await call("POST", `/v1/webhooks/${members.webhook_id}/pause`, { key: member.key })).json.data.status).toBe(
      "paused",
    );
    expect((await call("POST", `/v1/webhooks/${members.webhook_id}/resume`, { key: admin.key })).json.data.status).toBe(
      "active",
    );
    expect((await call("GET", `/v1/webhooks/${members.webhook_id}/deliveries`, { key: org.api_key })).status).toBe(200);
    expect((await call("POST", `/v1/webhooks/${owners.webhook_id}/pause`, { key: admin.key })).json.data.status).toBe(
      "paused",
    );
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
    expect(decodeCursor(d1.json.data.cursor, (_v): _v is unknown => true)).toEqual([events[0].id]);
    expect((await drain(org.api_key, { after: d1.json.data.cursor })).json.data).toMatchObject({
      events_drained: 0,
      cursor: d1.json.data.cursor,
    });
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
    expect(list.json.data.deliveries[0]).toMatchObject({
      id: s.headers["x-svc-delivery"],
      status: "delivered",
      attempts: 1,
      response_status: 200,
      next_retry_at: null,
    });
    expect(Object.keys(list.json.data.deliveries[0]).sort()).toEqual([
      "attempts",
      "created_at",
      "event_id",
      "failure_reason",
      "id",
      "last_attempt_at",
      "next_retry_at",
      "response_status",
      "status",
    ]);
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
    const claimsHook = (await call("GET", `/v1/webhooks/${claims.webhook_id}/deliveries`, { key: org.api_key })).json
      .data.deliveries;
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
    expect((await drain(other.key, { limit: 200 })).json.data).toMatchObject({
      events_drained: 4,
      pending_deliveries: 4,
    });
    // The owner manages both hooks but reads only the team event: one pending delivery.
    expect((await drain(org.api_key, { limit: 200 })).json.data).toMatchObject({
      events_drained: 1,
      pending_deliveries: 1,
    });
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

  it("disables a hook after ten consecutive deliveries failed for good (retried attempts do not count); pause, resume and redelivery are then 403", async () => {
    const org = await newOrg();
    const hook = await register(org.api_key);
    const status = async () => (await call("GET", "/v1/webhooks", { key: org.api_key })).json.data.webhooks[0];
    respond = () => 503;
    // Twelve events reach the hook at once (they accrued while it was paused).
    await call("POST", `/v1/webhooks/${hook.webhook_id}/pause`, { key: org.api_key });
    for (let i = 0; i < 12; i++) await appendOk(org.api_key, obs("s", `n${i}`));
    await call("POST", `/v1/webhooks/${hook.webhook_id}/resume`, { key: org.api_key });
    await runAlarm(org.org_id);
    await drain(org.api_key);
    expect(sent).toHaveLength(12);
    // Failed attempts that will be retried cost the hook nothing: a receiver down for a while is no reason to disable it.
    expect(await status()).toMatchObject({ status: "active", failure_count: 0 });
    for (let n = 1; n < MAX_ATTEMPTS - 1; n++) {
      clock.advance(SPEC_RETRY_SCHEDULE_MS[n - 1]);
      await runAlarm(org.org_id);
    }
    expect(sent).toHaveLength(48);
    expect(await status()).toMatchObject({ status: "active", failure_count: 0 });
    // The fifth attempts: each that fails ends a delivery for good, one at a time (the hook is failing);
    // the tenth disables the hook, and the last two deliveries are never attempted a fifth time.
    clock.advance(SPEC_RETRY_SCHEDULE_MS[MAX_ATTEMPTS - 2]);
    await runAlarm(org.org_id);
    expect(sent).toHaveLength(58);
    expect(await status()).toMatchObject({ status: "disabled", failure_count: 10 });
    const rows = await deliveries(org.api_key, hook.webhook_id);
    expect(rows.map((d) => [d.status, d.next_retry_at])).toEqual(Array.from({ length: 12 }, () => ["failed", null]));
    expect(rows.map((d) => [d.attempts, d.failure_reason]).sort()).toEqual([
      ...Array(2).fill([4, "hook_disabled"]),
      ...Array(10).fill([5, "attempts_exhausted"]),
    ]);
    const p = await call("POST", `/v1/webhooks/${hook.webhook_id}/pause`, { key: org.api_key });
    expectError(p, 403, "FORBIDDEN");
    expect(p.json.error.message).toBe("Cannot pause a disabled webhook.");
    const r = await call("POST", `/v1/webhooks/${hook.webhook_id}/resume`, { key: org.api_key });
    expectError(r, 403, "FORBIDDEN");
    expect(r.json.error.message).toBe("Cannot resume a disabled webhook. Re-register it.");
    const again = await call("POST", `/v1/webhooks/${hook.webhook_id}/deliveries/${rows[0].id}/retry`, {
      key: org.api_key,
    });
    expectError(again, 403, "FORBIDDEN");
    expect(again.json.error.message).toBe("Cannot redeliver to a disabled webhook. Re-register it.");
  });

  it("counts consecutive deliveries failed for good; a success resets the count", async () => {
    const org = await newOrg();
    await register(org.api_key);
    respond = () => 500;
    for (let i = 0; i < 3; i++) await appendOk(org.api_key, obs("s", `n${i}`));
    await drain(org.api_key);
    for (let n = 1; n < MAX_ATTEMPTS; n++) {
      clock.advance(SPEC_RETRY_SCHEDULE_MS[n - 1]);
      await runAlarm(org.org_id);
    }
    expect((await call("GET", "/v1/webhooks", { key: org.api_key })).json.data.webhooks[0]).toMatchObject({
      status: "active",
      failure_count: 3,
    });
    respond = () => 200;
    await appendOk(org.api_key, obs("s", "delivered"));
    await drain(org.api_key);
    expect((await call("GET", "/v1/webhooks", { key: org.api_key })).json.data.webhooks[0]).toMatchObject({
      status: "active",
      failure_count: 0,
    });
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
    expectError(
      await call("GET", `/v1/webhooks/${hook.webhook_id}/deliveries`, { key: org.api_key }),
      404,
      "NOT_FOUND",
    );
  });

  it("pages deliveries newest first", async () => {
    const org = await newOrg();
    const hook = await register(org.api_key);
    for (let i = 0; i < 3; i++) await appendOk(org.api_key, obs("s", `n${i}`));
    await drain(org.api_key);
    const p1 = await call("GET", `/v1/webhooks/${hook.webhook_id}/deliveries?limit=2`, { key: org.api_key });
    const p2 = await call(
      "GET",
      `/v1/webhooks/${hook.webhook_id}/deliveries?limit=2&after=${p1.json.data.next_cursor}`,
      { key: org.api_key },
    );
    const ids = [...p1.json.data.deliveries, ...p2.json.data.deliveries].map((d: any) => d.id);
    expect(ids).toEqual(sent.map((s) => s.headers["x-svc-delivery"]).reverse());
    expectError(
      await call("GET", `/v1/webhooks/${hook.webhook_id}/deliveries?limit=201`, { key: org.api_key }),
      400,
      "VALIDATION_ERROR",
    );
  });

  it("emits no events and audits every administrative change", async () => {
    const org = await newOrg();
    const hook = await register(org.api_key);
    await call("POST", `/v1/webhooks/${hook.webhook_id}/pause`, { key: org.api_key });
    await call("POST", `/v1/webhooks/${hook.webhook_id}/resume`, { key: org.api_key });
    await call("DELETE", `/v1/webhooks/${hook.webhook_id}`, { key: org.api_key });
    const rows = await inOrg(org.org_id, (o) => ({
      audit: o.db
        .all<{ action: string }>("SELECT action FROM audit_log WHERE resource_id = ? ORDER BY seq", hook.webhook_id)
        .map((r) => r.action),
      events: o.db.first<{ n: number }>("SELECT count(*) AS n FROM events")!.n,
    }));
    expect(rows).toEqual({
      audit: ["webhook.created", "webhook.paused", "webhook.resumed", "webhook.deleted"],
      events: 0,
    });
    await drain(org.api_key, { limit: 7 });
    const drained = await inOrg(org.org_id, (o) =>
      o.db.all<{ detail: string }>("SELECT detail FROM audit_log WHERE action = 'webhook.drained'"),
    );
    expect(drained.map((d) => JSON.parse(d.detail))).toEqual([
      { after: null, limit: 7, events_drained: 0, cursor: null, pending_deliveries: 0 },
    ]);
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
    const hook = await register(org.api_key);
    await appendOk(org.api_key, obs("s", "x"));
    await drain(org.api_key);
    expect(calls).toHaveLength(1);
    expect(calls[0].redirect).toBe("manual");
    // A timeout signal bounds every delivery attempt.
    expect(calls[0].signal).toBeInstanceOf(AbortSignal);
    expect(await deliveries(org.api_key, hook.webhook_id)).toMatchObject([
      { status: "pending", attempts: 1, response_status: 302 },
    ]);
  });
});

describe("background delivery", () => {
  it("is reported enabled with the configured interval", async () => {
    const ready = await call("GET", "/readyz");
    expect(ready.json.data.capabilities).toMatchObject({
      background_repair: "enabled",
      maintenance_interval_seconds: 15,
    });
  });

  it("makes the first attempt promptly: a commit with events makes the job due now, and the alarm fires by itself", async () => {
    const org = await newOrg();
    const hook = await register(org.api_key);
    const before = clock.nowMs();
    await appendOk(org.api_key, obs("s", "x"));
    const appended = Date.now();
    // No drain, no manual alarm: the organization's own alarm delivers, long before the 15 s maintenance
    // interval that would otherwise wake it (tens of milliseconds on a quiet machine: BENCHMARKS.md part 10).
    await eventually(() => expect(sent).toHaveLength(1));
    expect(Date.now() - appended).toBeLessThan(5_000);
    const [row] = await deliveries(org.api_key, hook.webhook_id);
    expect(row).toMatchObject({ status: "delivered", attempts: 1, id: sent[0].headers["x-svc-delivery"] });
    expect(Date.parse(row.last_attempt_at!) - before).toBeLessThan(5_000);
  });

  it("continues each hook from its own position: nothing is sent twice, a later hook gets only later events", async () => {
    const org = await newOrg();
    await register(org.api_key, { url: "https://first.example.com/in" });
    await appendOk(org.api_key, obs("s", "one"));
    await eventually(() => expect(sent).toHaveLength(1));
    await register(org.api_key, { url: "https://second.example.com/in" });
    await appendOk(org.api_key, obs("s", "two"));
    await eventually(() => expect(sent).toHaveLength(3));
    await runAlarm(org.org_id);
    await drain(org.api_key);
    expect(sent.map((s) => [new URL(s.url).host, JSON.parse(s.body).subject_id]).sort()).toEqual([
      ["first.example.com", "s"],
      ["first.example.com", "s"],
      ["second.example.com", "s"],
    ]);
    expect(new Set(sent.map((s) => s.headers["x-svc-event-id"] + s.url)).size).toBe(3);
  });
});

describe("retries, driven by the organization's alarm", () => {
  it("retries a receiver that fails twice, then succeeds: three attempts on SPEC's schedule, one delivery id", async () => {
    const org = await newOrg();
    const hook = await register(org.api_key);
    respond = (n) => (n <= 2 ? 500 : 200);
    await appendOk(org.api_key, obs("s", "x"));
    await drain(org.api_key); // returns once the first attempt (its own or the alarm's) has settled
    let [row] = await deliveries(org.api_key, hook.webhook_id);
    expect(row).toMatchObject({ status: "pending", attempts: 1, response_status: 500 });
    expect(Date.parse(row.next_retry_at!) - Date.parse(row.last_attempt_at!)).toBe(SPEC_RETRY_SCHEDULE_MS[0]);
    // The alarm is armed for the retry: the job's due time is the row's next_retry_at.
    await eventually(async () => expect(await deliveryDueAt(org.org_id)).toBe(Date.parse(row.next_retry_at!)));
    expect(await alarmAt(org.org_id)).toBeLessThanOrEqual(Date.parse(row.next_retry_at!));

    // Before its time nothing is re-attempted, even if the alarm runs.
    clock.advance(SPEC_RETRY_SCHEDULE_MS[0] - 1_000);
    await runAlarm(org.org_id);
    expect(sent).toHaveLength(1);
    clock.advance(1_000);
    expect(await runAlarm(org.org_id)).toBe(true);
    [row] = await deliveries(org.api_key, hook.webhook_id);
    expect(row).toMatchObject({ status: "pending", attempts: 2, response_status: 500 });
    expect(Date.parse(row.next_retry_at!) - Date.parse(row.last_attempt_at!)).toBe(SPEC_RETRY_SCHEDULE_MS[1]);
    expect(await deliveryDueAt(org.org_id)).toBe(Date.parse(row.next_retry_at!));

    clock.advance(SPEC_RETRY_SCHEDULE_MS[1]);
    await runAlarm(org.org_id);
    [row] = await deliveries(org.api_key, hook.webhook_id);
    expect(row).toMatchObject({ status: "delivered", attempts: 3, response_status: 200, next_retry_at: null });
    expect(sent.map((s) => s.headers["x-svc-delivery"])).toEqual([row.id, row.id, row.id]);
    expect(sent.map((s) => s.headers["webhook-id"])).toEqual([row.id, row.id, row.id]);
    expect((await call("GET", "/v1/webhooks", { key: org.api_key })).json.data.webhooks[0].failure_count).toBe(0);
    expect(await deliveryDueAt(org.org_id)).toBeNull(); // nothing left to do
  });

  it("gives up after five failed attempts: failed, next_retry_at null, never tried again automatically", async () => {
    const org = await newOrg();
    const hook = await register(org.api_key);
    respond = () => 500;
    await appendOk(org.api_key, obs("s", "x"));
    await drain(org.api_key);
    for (let n = 1; n < MAX_ATTEMPTS; n++) {
      clock.advance(SPEC_RETRY_SCHEDULE_MS[n - 1]);
      await runAlarm(org.org_id);
      expect(sent, `after the wait that follows attempt ${n}`).toHaveLength(n + 1);
    }
    const [row] = await deliveries(org.api_key, hook.webhook_id);
    expect(row).toMatchObject({
      status: "failed",
      attempts: 5,
      next_retry_at: null,
      response_status: 500,
      failure_reason: "attempts_exhausted",
    });
    expect(await deliveryDueAt(org.org_id)).toBeNull();
    clock.advance(SPEC_RETRY_SCHEDULE_MS[4] * 2);
    await runAlarm(org.org_id);
    await drain(org.api_key);
    expect(sent).toHaveLength(5);
    expect(new Set(sent.map((s) => s.headers["x-svc-delivery"]))).toEqual(new Set([row.id]));
    expect((await call("GET", "/v1/webhooks", { key: org.api_key })).json.data.webhooks[0]).toMatchObject({
      status: "active",
      failure_count: 1,
    });
    expect((await drain(org.api_key)).json.data.pending_deliveries).toBe(0);
  });

  it("retries by itself on a short schedule (WEBHOOK_RETRY_SCHEDULE), with no clock moved and no drain", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, (o) => {
      o.deps = { ...o.deps, webhookRetrySchedule: parseRetrySchedule("100ms,100ms,100ms,100ms")! };
    });
    const hook = await register(org.api_key);
    respond = (n) => (n <= 2 ? 503 : 204);
    await appendOk(org.api_key, obs("s", "x"));
    await vi.waitFor(
      async () =>
        expect((await deliveries(org.api_key, hook.webhook_id))[0]).toMatchObject({ status: "delivered", attempts: 3 }),
      { timeout: 5_000, interval: 50 },
    );
    const gaps = sent
      .slice(1)
      .map((s, i) => Number(s.headers["webhook-timestamp"]) - Number(sent[i].headers["webhook-timestamp"]));
    expect(gaps.every((g) => g >= 0 && g <= 2)).toBe(true);
    expect(new Set(sent.map((s) => s.headers["x-svc-delivery"])).size).toBe(1);
  });

  it("sends each delivery exactly once when the alarm and drains race, first attempts and retries alike", async () => {
    const org = await newOrg();
    const hook = await register(org.api_key);
    respond = async (n) => {
      await new Promise((r) => setTimeout(r, 5));
      return n <= 8 ? 500 : 200;
    };
    for (let i = 0; i < 8; i++) await appendOk(org.api_key, obs("s", `n${i}`));
    await Promise.all([
      runAlarm(org.org_id),
      drain(org.api_key),
      drain(org.api_key),
      runAlarm(org.org_id),
      drain(org.api_key),
    ]);
    expect(sent).toHaveLength(8);
    expect(new Set(sent.map((s) => s.headers["x-svc-delivery"])).size).toBe(8);
    // Every retry is due: the alarm and two drains all claim due retries at once.
    clock.advance(SPEC_RETRY_SCHEDULE_MS[0]);
    await inOrg(org.org_id, (o) => storageOf(o).setAlarm(clock.nowMs()));
    await Promise.all([runAlarm(org.org_id), drain(org.api_key), drain(org.api_key)]);
    await runAlarm(org.org_id);
    const perDelivery = new Map<string, number>();
    for (const s of sent)
      perDelivery.set(s.headers["x-svc-delivery"], (perDelivery.get(s.headers["x-svc-delivery"]) ?? 0) + 1);
    expect([...perDelivery.values()]).toEqual(Array.from({ length: 8 }, () => 2));
    expect((await deliveries(org.api_key, hook.webhook_id)).map((d) => [d.status, d.attempts])).toEqual(
      Array.from({ length: 8 }, () => ["delivered", 2]),
    );
  });

  it("a paused hook accrues new events and due retries, and resumes where it stopped", async () => {
    const org = await newOrg();
    const hook = await register(org.api_key);
    respond = () => 500;
    await appendOk(org.api_key, obs("s", "failed once"));
    await drain(org.api_key);
    const p = await call("POST", `/v1/webhooks/${hook.webhook_id}/pause`, { key: org.api_key });
    expect(p.json.data.status).toBe("paused");
    respond = () => 200;
    await appendOk(org.api_key, obs("s", "while paused 1"));
    await appendOk(org.api_key, obs("s", "while paused 2"));
    clock.advance(SPEC_RETRY_SCHEDULE_MS[0] * 10); // the retry's time passes while paused
    await inOrg(org.org_id, (o) => storageOf(o).setAlarm(clock.nowMs()));
    await runAlarm(org.org_id);
    await drain(org.api_key);
    expect(sent).toHaveLength(1);
    expect(await deliveries(org.api_key, hook.webhook_id)).toMatchObject([{ status: "pending", attempts: 1 }]);
    // Resume: failure_count back to 0, and the job is due now: the alarm sends the retry and both new events.
    const r = await call("POST", `/v1/webhooks/${hook.webhook_id}/resume`, { key: org.api_key });
    expect(r.json.data).toMatchObject({ status: "active", failure_count: 0 });
    expect(await deliveryDueAt(org.org_id)).toBeLessThanOrEqual(clock.nowMs());
    await runAlarm(org.org_id);
    expect(sent.map((s) => JSON.parse(s.body).subject_id)).toHaveLength(4);
    const rows = await deliveries(org.api_key, hook.webhook_id);
    expect(rows.map((d) => [d.status, d.attempts])).toEqual([
      ["delivered", 1],
      ["delivered", 1],
      ["delivered", 2],
    ]);
  });
});

describe("a hook paused while its deliveries are being sent", () => {
  it("keeps the claims not yet sent waiting (pending, due at once) and sends them after the resume", async () => {
    const org = await newOrg();
    const hook = await register(org.api_key);
    const path = `/v1/webhooks/${hook.webhook_id}`;
    // The drain answers without waiting for its sends.
    await inOrg(org.org_id, (o) => {
      o.deps = { ...o.deps, webhookDeliveries: new DeliveriesInFlight({ wait: async () => {} }) };
    });
    const hanging: ((status: number) => void)[] = [];
    respond = (n) => (n <= SEND_CONCURRENCY ? new Promise<number>((r) => hanging.push(r)) : 200);
    await insertEvents(org.org_id, await ownerOf(org.api_key), 8);
    // The drain claims all eight (its cursor moves past them): six sends hang, two claims wait for a send slot.
    await drain(org.api_key);
    await eventually(() => expect(sent).toHaveLength(6));
    await call("POST", `${path}/pause`, { key: org.api_key });
    await inOrg(org.org_id, () => hanging.forEach((r) => r(200)));
    await eventually(async () =>
      expect((await deliveries(org.api_key, hook.webhook_id)).map((d) => d.status).sort()).toEqual([
        ...Array(6).fill("delivered"),
        "pending",
        "pending",
      ]),
    );
    expect(sent).toHaveLength(6);
    const waiting = (await deliveries(org.api_key, hook.webhook_id)).filter((d) => d.status === "pending");
    expect(waiting.map((d) => d.attempts)).toEqual([0, 0]);
    for (const d of waiting) expect(Date.parse(d.next_retry_at!)).toBeLessThanOrEqual(clock.nowMs());
    // Resumed, the job is due now and the alarm sends them.
    await call("POST", `${path}/resume`, { key: org.api_key });
    await eventually(() => expect(sent).toHaveLength(8));
    expect(new Set(sent.map((s) => s.headers["x-svc-delivery"])).size).toBe(8);
    expect((await deliveries(org.api_key, hook.webhook_id)).map((d) => d.status)).toEqual(Array(8).fill("delivered"));
  });
});

describe("a claim its hook may no longer send", () => {
  it("ends failed, unsent, when the creator lost the read between claim and send; the event is never claimed again", async () => {
    const org = await newOrg();
    const member = await mintKey(org.api_key, { scopes: ["*"] });
    const hook = await register(member.key);
    const readAll = { principal_id: member.principal_id, permissions: ["read"], organization: true };
    const grant = await call("POST", "/v1/grants", { key: org.api_key, body: readAll });
    expect(grant.status, grant.text).toBe(201);
    // The owner's private event, which the member reads through the grant: claimed for its hook, and
    // the sender dies before it sends; then the grant is revoked.
    const claimed = await claimThenCrash(org.org_id, await ownerOf(org.api_key), { visibility: "private" });
    expect(claimed).toHaveLength(1);
    expect((await call("DELETE", `/v1/grants/${grant.json.data.grant_id}`, { key: org.api_key })).status).toBe(200);
    clock.advance(RECLAIM_AFTER_MS);
    await drain(org.api_key); // reclaims the claim; the check at the send finds the event unreadable
    expect(sent).toHaveLength(0);
    const failed = {
      id: claimed[0],
      status: "failed",
      attempts: 0,
      next_retry_at: null,
      response_status: null,
      failure_reason: "event_unreadable",
    };
    expect(await deliveries(org.api_key, hook.webhook_id)).toMatchObject([failed]);
    // The read comes back: the row still holds the (webhook, event) pair, so no drain or alarm sends it
    // again under another delivery id (its first sender may have sent it before it died).
    expect((await call("POST", "/v1/grants", { key: org.api_key, body: readAll })).status).toBe(201);
    clock.advance(RECLAIM_AFTER_MS);
    await drain(member.key);
    await drain(org.api_key);
    await inOrg(org.org_id, async (o) => {
      storageOf(o).transactionSync(() => markJobDue(o.db, webhookDeliveryJob.name, clock.nowMs()));
      await storageOf(o).setAlarm(clock.nowMs());
    });
    await runAlarm(org.org_id);
    expect(sent).toHaveLength(0);
    expect(await deliveries(org.api_key, hook.webhook_id)).toMatchObject([failed]);
    // An unsent delivery is no failure of the receiver: it costs the hook nothing.
    expect((await call("GET", "/v1/webhooks", { key: member.key })).json.data.webhooks[0]).toMatchObject({
      status: "active",
      failure_count: 0,
    });
  });

  it("ends failed, unsent, when its hook was disabled between claim and send", async () => {
    const org = await newOrg();
    const member = await mintKey(org.api_key, { scopes: ["*"] });
    const hook = await register(member.key);
    const claimed = await claimThenCrash(org.org_id, await ownerOf(org.api_key));
    // Removing the member from the organization disables its hooks.
    const memberships = (await call("GET", "/v1/memberships?limit=200", { key: org.api_key })).json.data.memberships;
    const membership = memberships.find(
      (m: any) => m.principal_id === member.principal_id && m.workspace_id === null,
    ).membership_id;
    expect(
      (await call("DELETE", `/v1/memberships/${membership}`, { key: org.api_key })).json.data.webhooks_disabled,
    ).toBe(1);
    clock.advance(RECLAIM_AFTER_MS);
    await drain(org.api_key);
    expect(sent).toHaveLength(0);
    expect(await deliveries(org.api_key, hook.webhook_id)).toMatchObject([
      { id: claimed[0], status: "failed", attempts: 0, next_retry_at: null, failure_reason: "hook_disabled" },
    ]);
  });
});

describe("no hook holds up the others", () => {
  const HOUR = 3_600_000;
  /** Waits that end only when the test ends them (inside the object, where they began). */
  const gatedWaits = () => {
    const waits: { ms: number; end: () => void }[] = [];
    return { waits, wait: (ms: number) => new Promise<void>((end) => waits.push({ ms, end })) };
  };
  const statuses = async (key: string, webhookId: string) => (await deliveries(key, webhookId)).map((d) => d.status);

  it("an alarm pass sends another hook's deliveries beside a receiver that never answers, claims for each hook what it may send at once, and ends at its budget", async () => {
    const org = await newOrg();
    const budget = gatedWaits();
    await inOrg(org.org_id, (o) => {
      o.deps = { ...o.deps, webhookDeliveries: new DeliveriesInFlight({ passBudgetMs: HOUR, wait: budget.wait }) };
    });
    const stuck = await register(org.api_key, { url: "https://stuck.example.com/in" });
    const healthy = await register(org.api_key, { url: "https://healthy.example.com/in" });
    const hanging: ((status: number) => void)[] = [];
    let stuckAnswers = false;
    respond = (n) =>
      !stuckAnswers && sent[n - 1].url.includes("stuck") ? new Promise<number>((r) => hanging.push(r)) : 200;
    // Ten events, and the delivery job due: one alarm pass takes them.
    await insertEvents(org.org_id, await ownerOf(org.api_key), 10);
    await inOrg(org.org_id, async (o) => {
      storageOf(o).transactionSync(() => markJobDue(o.db, webhookDeliveryJob.name, clock.nowMs()));
      await storageOf(o).setAlarm(clock.nowMs() + HOUR);
    });
    let passEnded = false;
    const pass = runAlarm(org.org_id).then((ran) => {
      passEnded = true;
      return ran;
    });
    // All ten of the healthy hook go out in this pass, while the stuck receiver holds its sends.
    await eventually(async () =>
      expect(await statuses(org.api_key, healthy.webhook_id)).toEqual(Array(10).fill("delivered")),
    );
    expect(passEnded).toBe(false);
    // The stuck hook was claimed only what it may send at once: six sends in flight; its other four
    // events wait unclaimed at its position.
    expect(await statuses(org.api_key, stuck.webhook_id)).toEqual(Array(SEND_CONCURRENCY).fill("sending"));
    expect(hanging).toHaveLength(SEND_CONCURRENCY);
    // Its budget spent, the pass ends though those sends never answered, and the alarm looks again a budget later.
    expect(budget.waits.map((w) => w.ms)).toEqual([HOUR]);
    await inOrg(org.org_id, () => budget.waits[0].end());
    expect(await pass).toBe(true);
    expect(await deliveryDueAt(org.org_id)).toBeGreaterThan(clock.nowMs() + HOUR / 2);
    // Held sends are never reclaimed, however long they take, and nothing more is claimed beside them.
    clock.advance(HOUR);
    expect(await runAlarm(org.org_id)).toBe(true);
    expect(hanging).toHaveLength(SEND_CONCURRENCY);
    expect(await statuses(org.api_key, stuck.webhook_id)).toEqual(Array(SEND_CONCURRENCY).fill("sending"));
    // The receiver answers at last; the next pass sends the stuck hook's four others.
    stuckAnswers = true;
    await inOrg(org.org_id, () => hanging.forEach((r) => r(200)));
    await eventually(async () =>
      expect(await statuses(org.api_key, stuck.webhook_id)).toEqual(Array(SEND_CONCURRENCY).fill("delivered")),
    );
    clock.advance(HOUR);
    await runAlarm(org.org_id);
    expect(await statuses(org.api_key, stuck.webhook_id)).toEqual(Array(10).fill("delivered"));
    expect(sent).toHaveLength(20);
    expect(new Set(sent.map((s) => s.headers["x-svc-delivery"])).size).toBe(20);
  });

  it("a drain waits only for the hooks its caller manages, and for those at most its bound", async () => {
    const org = await newOrg();
    const bound = gatedWaits();
    await inOrg(org.org_id, (o) => {
      o.deps = { ...o.deps, webhookDeliveries: new DeliveriesInFlight({ passBudgetMs: HOUR, wait: bound.wait }) };
    });
    const member = await mintKey(org.api_key, { scopes: ["*"] });
    const stuck = await register(org.api_key, { url: "https://stuck.example.com/in" });
    const own = await register(member.key, { url: "https://member.example.com/in" });
    respond = (n) => (sent[n - 1].url.includes("stuck") ? new Promise<number>(() => {}) : 200);
    await insertEvents(org.org_id, await ownerOf(org.api_key), 2);
    // The member's drain delivers to every subscribed hook (it drains the outbox), but answers once its
    // own hook's deliveries settled: the owner's receiver, which never answers, does not hold it up.
    const mine = await drain(member.key);
    expect(mine.json.data).toMatchObject({ events_drained: 2, pending_deliveries: 0 });
    expect(await statuses(member.key, own.webhook_id)).toEqual(["delivered", "delivered"]);
    await eventually(() => expect(sent.filter((s) => s.url.includes("stuck"))).toHaveLength(2));
    // The owner manages both: its drain waits for the stuck hook too, until its bound runs out.
    let answered = false;
    const owners = drain(org.api_key).then((r) => {
      answered = true;
      return r;
    });
    // (An alarm pass may have waited too, for its own budget: only the drains' waits are counted.)
    const drainWaits = () => bound.waits.filter((w) => w.ms === DRAIN_WAIT_MS);
    await eventually(() => expect(drainWaits()).toHaveLength(2));
    expect(answered).toBe(false);
    await inOrg(org.org_id, () => drainWaits()[1].end());
    expect((await owners).json.data).toMatchObject({ events_drained: 2, pending_deliveries: 2 });
    // Nothing was claimed or sent twice; the stuck sends are still in flight.
    expect(sent).toHaveLength(4);
    expect(await statuses(org.api_key, stuck.webhook_id)).toEqual(["sending", "sending"]);
  });
});

describe("reclaiming a delivery whose sender died", () => {
  it("sends a claim left 'sending' past the timeout again, exactly once, under the same delivery id", async () => {
    const org = await newOrg();
    const hook = await register(org.api_key);
    const claimed = await claimThenCrash(org.org_id, await ownerOf(org.api_key));
    expect(claimed).toHaveLength(1);

    // Within the timeout the claim may still be in flight: nothing is resent, and it is reported pending.
    clock.advance(RECLAIM_AFTER_MS - 1_000);
    const early = await drain(org.api_key);
    expect(sent).toHaveLength(0);
    expect(early.json.data.pending_deliveries).toBe(1);
    expect((await deliveries(org.api_key, hook.webhook_id))[0]).toMatchObject({
      id: claimed[0],
      status: "sending",
      attempts: 0,
    });

    clock.advance(1_000);
    const reclaimed = await drain(org.api_key);
    expect(sent.map((s) => s.headers["x-svc-delivery"])).toEqual(claimed);
    expect(reclaimed.json.data.pending_deliveries).toBe(0);
    expect(await deliveries(org.api_key, hook.webhook_id)).toMatchObject([
      { id: claimed[0], status: "delivered", attempts: 1, response_status: 200 },
    ]);

    // Delivered is final: later drains, however late, never send it again.
    clock.advance(RECLAIM_AFTER_MS * 2);
    await drain(org.api_key);
    expect(sent).toHaveLength(1);
  });

  it("the background job reclaims it too, waking when the claim becomes reclaimable", async () => {
    const org = await newOrg();
    const hook = await register(org.api_key);
    const claimed = await claimThenCrash(org.org_id, await ownerOf(org.api_key));
    const claimedAt = Date.parse((await deliveries(org.api_key, hook.webhook_id))[0].created_at);
    // Another commit runs the job now; the claim is not reclaimable yet, so the job wakes for it later.
    await appendOk(org.api_key, obs("s", "another"));
    await eventually(async () => expect(await deliveryDueAt(org.org_id)).toBe(claimedAt + RECLAIM_AFTER_MS));
    expect(sent.map((s) => s.headers["x-svc-delivery"])).not.toContain(claimed[0]);
    clock.advance(RECLAIM_AFTER_MS);
    await runAlarm(org.org_id);
    expect(sent.filter((s) => s.headers["x-svc-delivery"] === claimed[0])).toHaveLength(1);
  });

  it("never reclaims a send still in flight in this object, however long it takes; after a restart it does", async () => {
    const org = await newOrg();
    const hook = await register(org.api_key);
    let release!: (status: number) => void;
    respond = (n) => (n === 1 ? new Promise<number>((r) => (release = r)) : 200);
    await appendOk(org.api_key, obs("s", "slow"));
    await eventually(() => expect(sent).toHaveLength(1)); // the alarm's send hangs
    const last = (await call("GET", "/v1/events", { key: org.api_key })).json.data.cursor;
    clock.advance(RECLAIM_AFTER_MS * 10);
    await drain(org.api_key, { after: last }); // reclaims only claims no pass of this object holds
    expect(sent).toHaveLength(1);
    // The object restarts: what it held is forgotten, and the claim is sent again under the same delivery id.
    await inOrg(org.org_id, (o) => {
      o.deps = { ...o.deps, webhookDeliveries: new DeliveriesInFlight() };
    });
    await drain(org.api_key, { after: last });
    const id = sent[0].headers["x-svc-delivery"];
    expect(sent.map((s) => s.headers["x-svc-delivery"])).toEqual([id, id]);
    expect((await deliveries(org.api_key, hook.webhook_id))[0]).toMatchObject({ id, status: "delivered" });
    await inOrg(org.org_id, () => release(200)); // settled inside the object, where the send started
  });
});

describe("redelivery: POST /v1/webhooks/:id/deliveries/:delivery_id/retry", () => {
  /** A hook of `key`'s principal with one failed delivery (five failed attempts). */
  const failedDelivery = async (orgId: string, key: string) => {
    const hook = await register(key);
    respond = () => 500;
    await appendOk(key, obs("s", "x"));
    await drain(key);
    for (let n = 1; n < MAX_ATTEMPTS; n++) {
      clock.advance(SPEC_RETRY_SCHEDULE_MS[n - 1]);
      await runAlarm(orgId);
    }
    const [row] = await deliveries(key, hook.webhook_id);
    expect(row.status).toBe("failed");
    return { hook, row };
  };

  it("puts a failed delivery back to pending, due now; the alarm sends it under the same delivery id; audited", async () => {
    const org = await newOrg();
    const { hook, row } = await failedDelivery(org.org_id, org.api_key);
    respond = () => 200;
    const r = await redeliver(org.api_key, hook.webhook_id, row.id);
    expect(r.status, r.text).toBe(200);
    expect(r.json.data).toMatchObject({
      id: row.id,
      event_id: row.event_id,
      status: "pending",
      attempts: 5,
      response_status: 500,
      failure_reason: null,
    });
    expect(Math.abs(Date.parse(r.json.data.next_retry_at) - clock.nowMs())).toBeLessThan(1_000);
    expect(await deliveryDueAt(org.org_id)).toBeLessThanOrEqual(clock.nowMs());
    await runAlarm(org.org_id);
    expect(await deliveries(org.api_key, hook.webhook_id)).toMatchObject([
      { id: row.id, status: "delivered", attempts: 6, response_status: 200 },
    ]);
    expect(sent.map((s) => s.headers["x-svc-delivery"])).toEqual(Array.from({ length: 6 }, () => row.id));
    const audit = await inOrg(org.org_id, (o) =>
      o.db.all<{ action: string; resource_id: string; detail: string }>(
        "SELECT action, resource_id, detail FROM audit_log WHERE action = 'webhook.redelivered'",
      ),
    );
    expect(audit.map((a) => [a.resource_id, JSON.parse(a.detail)])).toEqual([
      [hook.webhook_id, { delivery_id: row.id, event_id: row.event_id }],
    ]);
    expect(await inOrg(org.org_id, (o) => o.db.first<{ n: number }>("SELECT count(*) AS n FROM events")!.n)).toBe(1); // no event
  });

  it("a redelivery that fails again is failed again after one attempt", async () => {
    const org = await newOrg();
    const { hook, row } = await failedDelivery(org.org_id, org.api_key);
    expect((await redeliver(org.api_key, hook.webhook_id, row.id)).status).toBe(200);
    await runAlarm(org.org_id);
    expect(await deliveries(org.api_key, hook.webhook_id)).toMatchObject([
      { id: row.id, status: "failed", attempts: 6, next_retry_at: null, failure_reason: "attempts_exhausted" },
    ]);
  });

  it("refuses every other state with 400 naming it", async () => {
    const org = await newOrg();
    const hook = await register(org.api_key);
    respond = () => 500;
    await appendOk(org.api_key, obs("s", "pending"));
    await drain(org.api_key);
    respond = () => 200;
    await appendOk(org.api_key, obs("s", "delivered"));
    await drain(org.api_key);
    const claimed = await inOrg(org.org_id, (o) => {
      const storage = storageOf(o);
      const eventId = storage.transactionSync(() =>
        insertEvent(
          o.db,
          "prn_x",
          {
            kind: "observation.appended",
            resourceType: "observation",
            resourceId: `obs_${"2".repeat(32)}`,
            payload: {},
          },
          clock.nowIso(),
        ),
      );
      return claimDeliveries(o.db, storage, o.db.all<EventRow>("SELECT * FROM events WHERE event_id = ?", eventId))[0]
        .deliveryId;
    });
    const rows = await deliveries(org.api_key, hook.webhook_id);
    expect(rows.map((d) => d.status)).toEqual(["sending", "delivered", "pending"]);
    expect(rows[0].id).toBe(claimed);
    for (const d of rows) {
      const r = await redeliver(org.api_key, hook.webhook_id, d.id);
      expectError(r, 400, "VALIDATION_ERROR");
      expect(r.json.error.message).toBe(`Only a failed delivery can be redelivered; this one is ${d.status}.`);
    }
    expect((await deliveries(org.api_key, hook.webhook_id)).map((d) => d.status)).toEqual([
      "sending",
      "delivered",
      "pending",
    ]);
  });

  it("answers an unknown, foreign, other hook's or unreadable delivery, and a hook the caller does not manage, like a missing one", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const alice = await mintKey(org.api_key, { scopes: ["*"] });
    const bob = await mintKey(org.api_key, { scopes: ["*"] });
    const { hook, row } = await failedDelivery(org.org_id, alice.key);
    const second = await register(alice.key);
    // Alice's private event, delivered to her hook: the owner manages the hook but may not read the event.
    respond = () => 500;
    await appendOk(alice.key, obs("s", "private", { visibility: "private" }));
    await drain(alice.key);
    const privateRow = (await deliveries(alice.key, hook.webhook_id))[0];
    expect(privateRow.id).not.toBe(row.id);
    const missing = await redeliver(alice.key, hook.webhook_id, `dlv_${"0".repeat(32)}`);
    expectError(missing, 404, "NOT_FOUND");
    const missingHook = await redeliver(bob.key, `whk_${"0".repeat(32)}`, row.id);
    expectError(missingHook, 404, "NOT_FOUND");
    const same = (r: Awaited<ReturnType<typeof call>>, like: Awaited<ReturnType<typeof call>>) =>
      expect([r.status, r.json.error]).toEqual([404, like.json.error]);
    same(await redeliver(alice.key, second.webhook_id, row.id), missing); // a delivery of another hook
    same(await redeliver(org.api_key, hook.webhook_id, privateRow.id), missing); // an event the caller may not read
    same(await redeliver(bob.key, hook.webhook_id, row.id), missingHook); // another member's hook
    same(await redeliver(other.api_key, hook.webhook_id, row.id), missingHook); // another organization
    // A malformed delivery id is no route at all.
    expectError(
      await call("POST", `/v1/webhooks/${hook.webhook_id}/deliveries/not-an-id/retry`, { key: alice.key }),
      404,
      "NOT_FOUND",
    );
    expect((await deliveries(alice.key, hook.webhook_id)).find((d) => d.id === row.id)!.status).toBe("failed");
  });

  it("is for the hook's creator or an owner/admin with webhooks:write; readers and read-only keys get 403", async () => {
    const org = await newOrg();
    const member = await mintKey(org.api_key, { scopes: ["*"] });
    const admin = await mintKey(org.api_key, { scopes: ["*"] });
    expect(
      (
        await call("POST", "/v1/memberships", {
          key: org.api_key,
          body: { principal_id: admin.principal_id, role: "admin" },
        })
      ).status,
    ).toBe(201);
    const readOnly = await mintKey(org.api_key, {
      scopes: ["webhooks:read", "events:read"],
      principal_id: member.principal_id,
    });
    const { hook, row } = await failedDelivery(org.org_id, member.key);
    const denied = await redeliver(readOnly.key, hook.webhook_id, row.id);
    expectError(denied, 403, "FORBIDDEN");
    expect(denied.json.error.message).toContain('"webhooks:write"');
    expect(
      (
        await call("POST", "/v1/memberships", {
          key: org.api_key,
          body: { principal_id: member.principal_id, role: "reader" },
        })
      ).status,
    ).toBe(201);
    expectError(await redeliver(member.key, hook.webhook_id, row.id), 403, "FORBIDDEN"); // its creator, now a reader
    expect((await redeliver(admin.key, hook.webhook_id, row.id)).json.data.status).toBe("pending");
    await runAlarm(org.org_id);
    expect((await redeliver(org.api_key, hook.webhook_id, row.id)).json.data.status).toBe("pending");
  });
});

describe("Standard Webhooks 1.0 signatures", () => {
  it("a real delivery verifies with the standardwebhooks package, keyed with the secret's UTF-8 bytes; retries re-sign", async () => {
    const org = await newOrg();
    const unicodeSecret = "ünïcødé-s3cret-✓-0123";
    await register(org.api_key, { secret: unicodeSecret });
    respond = (n) => (n === 1 ? 500 : 200);
    await appendOk(org.api_key, obs("s", "x"));
    await drain(org.api_key);
    const secretBase64 = btoa(String.fromCharCode(...new TextEncoder().encode(unicodeSecret)));
    const [first] = sent;
    expect(first.headers["webhook-id"]).toBe(first.headers["x-svc-delivery"]);
    expect(Math.abs(Number(first.headers["webhook-timestamp"]) - Date.now() / 1000)).toBeLessThan(5);
    expect(first.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(secretBase64).verify(first.body, first.headers)).toEqual(JSON.parse(first.body));
    expect(() => new Webhook(btoa("another-secret-entirely")).verify(first.body, first.headers)).toThrow();
    expect(() => new Webhook(secretBase64).verify(first.body.replace("}", ',"x":1}'), first.headers)).toThrow();
    // The retry (a minute later, within the library's five-minute tolerance) carries the same id, its
    // own timestamp and a signature over them.
    clock.advance(SPEC_RETRY_SCHEDULE_MS[0]);
    await runAlarm(org.org_id);
    const [, retry] = sent;
    expect(
      Number(retry.headers["webhook-timestamp"]) - Number(first.headers["webhook-timestamp"]),
    ).toBeGreaterThanOrEqual(60);
    expect(retry.headers["webhook-id"]).toBe(first.headers["webhook-id"]);
    expect(retry.headers["webhook-timestamp"]).not.toBe(first.headers["webhook-timestamp"]);
    expect(retry.headers["webhook-signature"]).not.toBe(first.headers["webhook-signature"]);
    expect(new Webhook(secretBase64).verify(retry.body, retry.headers)).toEqual(JSON.parse(retry.body));
    expect(await verify(unicodeSecret, retry.body, retry.headers["x-svc-signature"])).toBe(true);
  });
});

describe("the retry schedule", () => {
  it("parses WEBHOOK_RETRY_SCHEDULE; SPEC's schedule when unset or malformed", () => {
    expect(retryScheduleOf({})).toEqual([60_000, 300_000, 1_800_000, 7_200_000, 43_200_000]);
    expect(retryScheduleOf({ WEBHOOK_RETRY_SCHEDULE: "2s,2s,2s,2s,2s" })).toEqual([2_000, 2_000, 2_000, 2_000, 2_000]);
    expect(retryScheduleOf({ WEBHOOK_RETRY_SCHEDULE: " 500ms, 1m ,2h,1d " })).toEqual([
      500, 60_000, 7_200_000, 86_400_000,
    ]);
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    for (const bad of ["2", "2x", "0s", "-1s", "1.5s", "2s,,2s", "soon"]) {
      expect(parseRetrySchedule(bad), bad).toBeNull();
      expect(retryScheduleOf({ WEBHOOK_RETRY_SCHEDULE: bad })).toEqual(SPEC_RETRY_SCHEDULE_MS);
    }
    expect(logged).toHaveBeenCalledTimes(7);
  });

  it("spaces attempts by the object's schedule; a schedule shorter than the attempts repeats its last step", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, (o) => {
      // Minutes, so the alarm each attempt arms never fires by itself before the loop moves the clock.
      o.deps = { ...o.deps, webhookRetrySchedule: [120_000, 180_000] };
    });
    const hook = await register(org.api_key);
    respond = () => 500;
    await appendOk(org.api_key, obs("s", "x"));
    await drain(org.api_key);
    const gaps: number[] = [];
    for (let n = 1; n <= MAX_ATTEMPTS; n++) {
      const [row] = await deliveries(org.api_key, hook.webhook_id);
      if (!row.next_retry_at) break;
      gaps.push(Date.parse(row.next_retry_at) - Date.parse(row.last_attempt_at!));
      clock.advance(gaps.at(-1)!);
      await runAlarm(org.org_id);
    }
    expect(gaps).toEqual([120_000, 180_000, 180_000, 180_000]);
    expect((await deliveries(org.api_key, hook.webhook_id))[0]).toMatchObject({ status: "failed", attempts: 5 });
  });
});
