// One Durable Object per organization, holding all of that tenant's state in its own SQLite. The
// class ties the house together and does little itself: it migrates, authenticates the key row, hands
// the request to executeRoute (src/org/execute.ts) and what the write left to do to AfterCommit
// (src/org/after-commit.ts); its alarm runs the job list (src/jobs.ts). What it is built with is
// src/deps.ts; the front Worker calls it through the contract of src/env.ts (OrgObject).
import { DurableObject } from "cloudflare:workers";
import { bootstrapOrganization } from "./domains/dashboard/bootstrap";
import { passwordLogin } from "./domains/dashboard/login";
import { drainsInBackground, INDEX_DRAIN_DELAY_MS, indexDrainJob } from "./domains/indexing/background";
import { loadCaller } from "./domains/identity/store";
import { pepperOf } from "./domains/identity/passwords";
import { orgDeps } from "./deps";
import type {
  BootstrapResult,
  DispatchInput,
  DispatchResult,
  EdgeEnv,
  LoginInput,
  LoginResult,
  OrgObject,
  Readiness,
} from "./env";
import { clock } from "./http/clock";
import { ApiError, translateStorageError } from "./http/errors";
import { BACKGROUND_JOBS } from "./jobs";
import { AfterCommit } from "./org/after-commit";
import { AlarmArming } from "./org/alarm";
import { executeRoute, type Session } from "./org/execute";
import { jobDueAt, markJobDue, nextAlarm, runDueJobs } from "./org/jobs";
import { maintenanceIntervalMs } from "./org/maintenance";
import { getMeta } from "./org/meta";
import { appliedMigrations, migrate, migrationMismatch } from "./org/migrate";
import { ORG_MIGRATIONS } from "./org/migrations";
import type { OrgDeps } from "./org/request";
import { normalizeIdempotencyKey } from "./org/write";
import { WriteTurn } from "./org/write-turn";
import { ORG_ROUTES } from "./routes";
import { Db } from "./sql/db";

export class OrgStore extends DurableObject<EdgeEnv> implements OrgObject {
  readonly db: Db;
  /** Built from env (src/deps.ts). A test may give one object other dependencies (e.g. a recording sender). */
  deps: OrgDeps;
  private migrationError: string | null = null;
  private readonly afterCommit: AfterCommit;
  private readonly alarmArming: AlarmArming;
  private readonly writeTurn = new WriteTurn();

  constructor(ctx: DurableObjectState, env: EdgeEnv) {
    super(ctx, env);
    this.db = new Db(ctx.storage.sql);
    this.deps = orgDeps(env);
    this.afterCommit = new AfterCommit(this.db, env.INDEX_DB, () => this.deps);
    this.alarmArming = new AlarmArming(ctx.storage);
    ctx.blockConcurrencyWhile(async () => {
      try {
        migrate(this.db, ctx.storage);
      } catch (err) {
        // Reported through readiness and as 503 on every request; never half-applied (each step is a transaction).
        this.migrationError = String(err);
        console.error("org migration failed", err);
      }
      if (this.migrationError) return;
      // A migration may leave background work due (index rows queued again) and cannot arm the alarm,
      // and a quiet organization writes nothing that would: armed here, that work runs without a write.
      const next = nextAlarm(BACKGROUND_JOBS.map((j) => ({ dueAt: jobDueAt(this.db, j.name) })));
      if (next != null) this.alarmArming.armBy(next);
      await this.alarmArming.settled().catch((err) => console.error("arming the alarm for due work failed", err));
    });
  }

  async dispatch(input: DispatchInput): Promise<DispatchResult> {
    try {
      if (this.migrationError) throw new ApiError("UNAVAILABLE", "Storage is unavailable.");
      const route = ORG_ROUTES.get(input.routeId);
      if (!route) throw new Error(`route ${input.routeId} is not an org route`);
      // Writes share their turn's commit (src/org/write-turn.ts). The key row is read after the wait, so a
      // revocation that lands meanwhile applies to this request.
      if (route.method !== "GET" && !route.readOnly) await this.writeTurn.wait();
      const session = this.authenticate(input);
      const reply = await executeRoute(session.request, route, {
        params: input.params,
        query: input.query,
        bodyText: route.rawBody ? undefined : input.bodyText,
        rawBody: input.bodyText,
        idempotencyKey: normalizeIdempotencyKey(input.idempotencyKey),
      });
      await this.alarmArming.settled();
      const { indexWrites = [], ...answer } = reply;
      await this.afterCommit.settle({ orgId: input.orgId, ...session.committed, indexWrites });
      return { ok: true, ...answer };
    } catch (err) {
      if (!(err instanceof ApiError)) console.error("request failed", input.routeId, err);
      return { ok: false, error: translateStorageError(err).toBody() };
    }
  }

  /** The key row, re-read on every request (revocation is immediate), and what the request's writes tell this object. */
  private authenticate(input: DispatchInput): {
    request: Session;
    committed: { created: string[]; toRegister: string[] };
  } {
    const caller = loadCaller(this.db, input.keyHash);
    if (!caller) throw new ApiError("UNAUTHENTICATED", "The credential is not valid.");
    // A write that created record ids registers those not reserved ahead of use before it answers.
    const committed = { created: [] as string[], toRegister: [] as string[] };
    const request: Session = {
      orgId: input.orgId,
      db: this.db,
      storage: this.ctx.storage,
      caller,
      requestId: input.requestId,
      headers: input.headers,
      env: this.env,
      deps: this.deps,
      jobDue: (job, dueAtMs, armAtMs) => this.jobDue(job, dueAtMs, armAtMs),
      eventsWritten: () => this.eventsWritten(),
      indexRowsQueued: () => this.indexRowsQueued(),
      recordsCreated: (ids, unregistered) => {
        committed.created.push(...ids);
        committed.toRegister.push(...unregistered);
      },
    };
    return { request, committed };
  }

  /** Creates the organization's owner principal, account and key (no HTTP route does this). */
  async bootstrap(orgId: string, username: string): Promise<BootstrapResult> {
    return bootstrapOrganization(this.db, this.ctx.storage, orgId, username, pepperOf(this.env));
  }

  /** Password login for POST /v1/dashboard-sessions (the front Worker found this org by username). */
  async login(input: LoginInput): Promise<LoginResult> {
    try {
      if (this.migrationError) throw new ApiError("UNAVAILABLE", "Storage is unavailable.");
      return await passwordLogin(
        { db: this.db, storage: this.ctx.storage, env: this.env, requestId: input.requestId },
        input.username,
        input.password,
      );
    } catch (err) {
      if (!(err instanceof ApiError)) console.error("login failed", err);
      const e = translateStorageError(err);
      return {
        ok: false,
        error: { code: "UNAVAILABLE", message: e.code === "UNAVAILABLE" ? e.message : "Storage is unavailable." },
      };
    }
  }

  /** Re-checked on every call: the applied migrations by name against the list, not by count. */
  async readiness(): Promise<Readiness> {
    const expected = ORG_MIGRATIONS.length;
    try {
      const applied = appliedMigrations(this.db);
      const error = this.migrationError ?? migrationMismatch(applied, ORG_MIGRATIONS);
      if (error) return { ok: false, applied: applied.length, expected, error };
      return { ok: applied.length === expected, applied: applied.length, expected };
    } catch {
      return { ok: false, applied: 0, expected, error: "storage check failed" };
    }
  }

  /** A job has work from `dueAtMs` (stored in the caller's transaction); the alarm fires by `armAtMs`. */
  private jobDue(job: string, dueAtMs: number, armAtMs = dueAtMs): void {
    if (!BACKGROUND_JOBS.some((j) => j.name === job)) throw new Error(`no background job named ${job}`);
    markJobDue(this.db, job, dueAtMs);
    this.alarmArming.armBy(armAtMs);
  }

  /** Events were committed: jobs that follow events (webhook delivery) may become due. */
  private eventsWritten(): void {
    for (const job of BACKGROUND_JOBS) {
      const at = job.dueAfterEvents?.(this.db, maintenanceIntervalMs(this.env));
      if (at != null) this.jobDue(job.name, at);
    }
  }

  /** Rows for the vector index were queued: the index drain runs in the background when the timer and vectors are on. */
  private indexRowsQueued(): void {
    if (drainsInBackground(this.deps.models, maintenanceIntervalMs(this.env)))
      this.jobDue(indexDrainJob.name, clock.nowMs() + INDEX_DRAIN_DELAY_MS);
  }

  /** Runs the background jobs that are due (src/jobs.ts), then re-arms for the earliest due time left. */
  override async alarm(): Promise<void> {
    await this.alarmArming.fired(() =>
      runDueJobs(BACKGROUND_JOBS, {
        db: this.db,
        storage: this.ctx.storage,
        indexDb: this.env.INDEX_DB,
        orgId: getMeta(this.db, "org_id"),
        maintenanceIntervalMs: maintenanceIntervalMs(this.env),
        deps: this.deps,
      }),
    );
  }
}
