import { env, runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { clock } from "../src/http/clock";
import { type BackgroundJob, jobDueAt, markJobDue, nextAlarm, runDueJobs } from "../src/org/jobs";
import type { OrgStore } from "../src/OrgStore";
import { appendOk, bareRequest, call, expectError, inOrg, newOrg, obs, orgStub } from "./helpers";

describe("nextAlarm", () => {
  it("is null when no job has work pending", () => {
    expect(nextAlarm([])).toBeNull();
    expect(nextAlarm([{ dueAt: null }, { dueAt: null }])).toBeNull();
  });

  it("is the earliest due time, wherever it sits in the list", () => {
    expect(nextAlarm([{ dueAt: 300 }, { dueAt: null }, { dueAt: 100 }, { dueAt: 200 }])).toBe(100);
    expect(nextAlarm([{ dueAt: 5 }, { dueAt: 9 }])).toBe(5);
    expect(nextAlarm([{ dueAt: null }, { dueAt: 42 }])).toBe(42);
  });

  it("keeps a due time in the past (overdue work runs at once) and ignores values that are not times", () => {
    expect(nextAlarm([{ dueAt: 0 }, { dueAt: 1_000 }])).toBe(0);
    expect(nextAlarm([{ dueAt: Number.NaN }, { dueAt: Number.POSITIVE_INFINITY }, { dueAt: 7 }])).toBe(7);
    expect(nextAlarm([{ dueAt: Number.NaN }])).toBeNull();
  });
});

const jobCtx = (o: OrgStore) => ({
  db: o.db,
  storage: (o as unknown as { ctx: DurableObjectState }).ctx.storage,
  indexDb: undefined as never,
  orgId: undefined,
  maintenanceIntervalMs: 0,
  deps: o.deps,
});

describe("runDueJobs", () => {
  it("runs only due jobs, stores each one's next due time, retries a failing job without stopping the others", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, async (o) => {
      const ran: string[] = [];
      const t0 = clock.nowMs();
      const job = (name: string, run: () => number | null): BackgroundJob => ({
        name,
        run: () => {
          ran.push(name);
          return run();
        },
        retryMs: () => 5_000,
      });
      const jobs = [
        job("t_broken", () => {
          throw new Error("down");
        }),
        job("t_later", () => null),
        job("t_again", () => t0 + 100),
        job("t_done", () => null),
      ];
      markJobDue(o.db, "t_broken", t0);
      markJobDue(o.db, "t_later", t0 + 60_000);
      markJobDue(o.db, "t_again", t0 - 1);
      markJobDue(o.db, "t_done", t0);
      const next = await runDueJobs(jobs, jobCtx(o));
      expect(ran).toEqual(["t_broken", "t_again", "t_done"]);
      // Retried retryMs after it failed (the real clock moved on a little meanwhile).
      expect(jobDueAt(o.db, "t_broken")).toBeGreaterThanOrEqual(t0 + 5_000);
      expect(jobDueAt(o.db, "t_broken")).toBeLessThanOrEqual(clock.nowMs() + 5_000);
      expect(jobDueAt(o.db, "t_later")).toBe(t0 + 60_000);
      expect(jobDueAt(o.db, "t_again")).toBe(t0 + 100);
      expect(jobDueAt(o.db, "t_done")).toBeNull();
      expect(next).toBe(t0 + 100);
    });
  });

  it("keeps a due time a request set while the job was running", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, async (o) => {
      const t0 = clock.nowMs();
      markJobDue(o.db, "t_busy", t0);
      const job: BackgroundJob = {
        name: "t_busy",
        retryMs: () => 1,
        run: async () => {
          // A write lands while the job awaits (requests interleave at awaits): new work for this job.
          await Promise.resolve();
          markJobDue(o.db, "t_busy", t0 + 7);
          return null;
        },
      };
      expect(await runDueJobs([job], jobCtx(o))).toBe(t0 + 7);
      expect(jobDueAt(o.db, "t_busy")).toBe(t0 + 7);
    });
  });

  it("keeps work marked while the job ran, whatever its due time: not after the old one, or absorbed by the lease", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, async (o) => {
      const t0 = clock.nowMs() - 10;
      const runOnce = async (markAt: () => number) => {
        markJobDue(o.db, "t_marked", t0);
        let marked = 0;
        const job: BackgroundJob = {
          name: "t_marked",
          retryMs: () => 60_000,
          // The job read its work, then a write commits more and marks the job due while it awaits.
          run: async () => {
            await Promise.resolve();
            markJobDue(o.db, "t_marked", (marked = markAt()));
            return null;
          },
        };
        const next = await runDueJobs([job], jobCtx(o));
        return { next, marked, due: jobDueAt(o.db, "t_marked") };
      };
      // Due now: not earlier than the old due time t0, which a comparison with t0 missed.
      const a = await runOnce(() => clock.nowMs());
      expect(a.due).toBe(a.marked);
      expect(a.next).toBe(a.marked);
      // Due after the lease (the run's retry time): the lease absorbed it, the run's end keeps it.
      const b = await runOnce(() => clock.nowMs() + 120_000);
      expect(b.due).toBe(b.marked);
      // Nothing marked: nothing kept, no lease left behind.
      markJobDue(o.db, "t_marked", t0);
      expect(await runDueJobs([{ name: "t_marked", retryMs: () => 60_000, run: () => null }], jobCtx(o))).toBeNull();
      expect(jobDueAt(o.db, "t_marked")).toBeNull();
    });
  });

  it("markJobDue only ever moves a due time earlier", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, (o) => {
      expect(markJobDue(o.db, "t_x", 500)).toBe(500);
      expect(markJobDue(o.db, "t_x", 900)).toBe(500);
      expect(markJobDue(o.db, "t_x", 100)).toBe(100);
      expect(jobDueAt(o.db, "t_x")).toBe(100);
    });
  });

  it("an alarm fired before a job is due leaves that job alone: a lease acquired now is swept only after it expires", async () => {
    const org = await newOrg();
    const r = await call("POST", "/v1/leases", {
      key: org.api_key,
      body: { resource_type: "r", resource_id: "1", ttl_seconds: 30 },
    });
    expect(r.status, r.text).toBe(201);
    const due = await inOrg(org.org_id, (o) => jobDueAt(o.db, "expiry_sweep"));
    expect(due).toBe(Date.parse(r.json.data.expires_at));
    await runDurableObjectAlarm(orgStub(org.org_id) as unknown as DurableObjectStub);
    expect(await inOrg(org.org_id, (o) => jobDueAt(o.db, "expiry_sweep"))).toBe(due);
  });
});

describe("purge guards are a dependency of the org object", () => {
  it("a guard given to one organization's object vetoes its purges with 409 and nobody else's", async () => {
    const held = await newOrg();
    const free = await newOrg();
    const heldObs = await appendOk(held.api_key, obs("s", "keep me"));
    const freeObs = await appendOk(free.api_key, obs("s", "let me go"));
    await inOrg(held.org_id, (o) => {
      o.deps = {
        ...o.deps,
        purgeGuards: [(_db, id) => (id === heldObs ? "The observation is under legal hold." : null)],
      };
    });
    const refused = await call("DELETE", `/v1/observations/${heldObs}`, { key: held.api_key });
    expectError(refused, 409, "CONFLICT");
    expect(refused.json.error.message).toBe("The observation is under legal hold.");
    expect(
      await inOrg(
        held.org_id,
        (o) =>
          o.db.first<{ content: string | null }>("SELECT content FROM observations WHERE observation_id = ?", heldObs)!
            .content,
      ),
    ).toBe("keep me");
    expect((await call("DELETE", `/v1/observations/${freeObs}`, { key: free.api_key })).status).toBe(200);
  });
});

describe("readiness reports who drives background work", () => {
  const readyz = async (over: Record<string, string>) => {
    const { env } = await import("cloudflare:test");
    const { healthRoutes } = await import("../src/domains/health/routes");
    const route = healthRoutes.find((r) => r.path === "/readyz")!;
    // A copy of this environment with one variable changed: nothing global is touched.
    const res = await route.edge({ ...env, ...over }, "req_test", bareRequest);
    expect(res.status).toBe(200);
    return ((await res.json()) as { data: { capabilities: Record<string, unknown> } }).data.capabilities;
  };

  it("background_repair is disabled when MAINTENANCE_INTERVAL_SECONDS is 0, enabled otherwise", async () => {
    expect(await readyz({ MAINTENANCE_INTERVAL_SECONDS: "0" })).toMatchObject({
      background_repair: "disabled",
      maintenance_interval_seconds: 0,
    });
    expect(await readyz({ MAINTENANCE_INTERVAL_SECONDS: "30" })).toMatchObject({
      background_repair: "enabled",
      maintenance_interval_seconds: 30,
    });
    // The shared environment still has its own interval.
    expect((await call("GET", "/readyz")).json.data.capabilities).toMatchObject({
      background_repair: "enabled",
      maintenance_interval_seconds: 15,
    });
  });
});

describe("starting an organization's object", () => {
  it("arms the alarm for work left due without an alarm (a migration's queued rows, a lost alarm)", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, async (o, state) => {
      const dueAt = clock.nowMs() + 3_600_000;
      state.storage.transactionSync(() => markJobDue(o.db, "index_drain", dueAt));
      await state.storage.deleteAlarm();
      // A second instance over the same storage starts as a restarted object would: it migrates, then arms.
      const Store = o.constructor as new (ctx: DurableObjectState, env: unknown) => OrgStore;
      new Store(state, env);
      await state.blockConcurrencyWhile(async () => {}); // queued behind the constructor's own
      const armed = await state.storage.getAlarm();
      expect(armed).not.toBeNull();
      expect(armed!).toBeLessThanOrEqual(dueAt);
    });
  });
});
