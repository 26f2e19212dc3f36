// One Durable Object per organization, holding all of that tenant's state in its own SQLite.
// The class stays thin: it migrates, authenticates the key row, and hands the request to
// executeRoute (scope, role, validation, handler); background work is the job list (src/jobs.ts) run
// by the alarm, and SQL lives in the domains. Its dependencies (src/deps.ts) are passed in.
import { DurableObject } from "cloudflare:workers";
import { clock } from "../http/clock";
import { ApiError, type ErrorBody, translateStorageError } from "../http/errors";
import type { EdgeEnv, OrgRoute } from "../http/route";
import { executeRoute, type Session } from "./execute";
import { addCredential, removeCredential } from "../index-db";
import { ORG_ROUTES } from "../routes";
import { loadCaller, revokeKey } from "../domains/identity/store";
import { bootstrapOrganization, type BootstrapResult } from "../domains/identity/bootstrap";
import { BACKGROUND_JOBS } from "../jobs";
import { orgDeps } from "../deps";
import { type JobContext, markJobDue, runDueJobs } from "./jobs";
import { maintenanceIntervalMs } from "./maintenance";
import { RegistrationBatcher, registerQueuedOwners } from "./outbox";
import { ReserveGauge, topUpReserves } from "./reserved-ids";
import { getMeta } from "./meta";
import { passwordLogin, type LoginResult } from "../domains/dashboard/login";
import { revokeSessionById } from "../domains/dashboard/store";
import { pepperOf } from "../domains/identity/passwords";
import { Db } from "./db";
import { appliedMigrations, migrate, migrationMismatch } from "./migrate";
import { ORG_MIGRATIONS } from "./migrations";
import type { IndexWrite, OrgDeps, Reply } from "./request";
import { normalizeIdempotencyKey } from "./write";

export interface DispatchInput {
  orgId: string;
  routeId: string;
  params: Record<string, string>;
  query: Record<string, string>;
  bodyText: string | null;
  idempotencyKey: string | null;
  keyHash: string;
  requestId: string;
  /** The few request headers routes may read (lower-case names): accept, cf-connecting-ip, content-type, mcp-protocol-version, origin, x-svc-peer-signature, host. */
  headers: Record<string, string>;
}

export type DispatchResult =
  | ({ ok: true } & Omit<Reply, "indexWrites">)
  | { ok: false; error: ErrorBody };

/** How long a write's registration or a reserve top-up may take before it is left to the outbox's retry. */
const REGISTRY_WAIT_MS = 5_000;

/** `work`, or a rejection once REGISTRY_WAIT_MS passed (a hung registry call must not hold every later one). */
function withinRegistryWait(work: Promise<void>): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error("registry call timed out")), REGISTRY_WAIT_MS); });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

export class OrgStore extends DurableObject<EdgeEnv> {
  readonly db: Db;
  /** Built from env (src/deps.ts). A test may give one object other dependencies (e.g. a recording sender). */
  deps: OrgDeps;
  private migrationError: string | null = null;

  constructor(ctx: DurableObjectState, env: EdgeEnv) {
    super(ctx, env);
    this.db = new Db(ctx.storage.sql);
    this.deps = orgDeps(env);
    ctx.blockConcurrencyWhile(async () => {
      try {
        migrate(this.db, ctx.storage);
      } catch (err) {
        // Reported through readiness and as 503 on every request; never half-applied (each step is a transaction).
        this.migrationError = String(err);
        console.error("org migration failed", err);
      }
    });
  }

  async dispatch(input: DispatchInput): Promise<DispatchResult> {
    try {
      if (this.migrationError) throw new ApiError("UNAVAILABLE", "Storage is unavailable.");
      const route = ORG_ROUTES.get(input.routeId);
      if (!route) throw new Error(`route ${input.routeId} is not an org route`);
      const caller = loadCaller(this.db, input.keyHash);
      if (!caller) throw new ApiError("UNAUTHENTICATED", "The credential is not valid.");
      // A write that created record ids registers those not reserved ahead of use before it answers.
      const created: string[] = [];
      const toRegister: string[] = [];
      const session: Session = {
        orgId: input.orgId, db: this.db, storage: this.ctx.storage, caller, requestId: input.requestId,
        headers: input.headers, env: this.env, deps: this.deps,
        jobDue: (job, dueAtMs, armAtMs) => this.jobDue(job, dueAtMs, armAtMs),
        eventsWritten: () => this.eventsWritten(),
        recordsCreated: (ids, unregistered) => { created.push(...ids); toRegister.push(...unregistered); },
      };
      const reply = await executeRoute(session, route, {
        params: input.params, query: input.query, bodyText: route.rawBody ? undefined : input.bodyText,
        rawBody: input.bodyText, idempotencyKey: normalizeIdempotencyKey(input.idempotencyKey),
      });
      await this.settleAlarmWork();
      if (toRegister.length) this.registrations.register(toRegister);
      // No answer leaves while a registration is under way: a read (or a replay) running during another
      // write's registration could otherwise show that write's new id before the registry knows it.
      await this.registrations.settled();
      if (created.length) this.topUpReserves(created);
      await this.applyIndexWrites(input.orgId, reply);
      const { indexWrites: _applied, ...answer } = reply;
      return { ok: true, ...answer };
    } catch (err) {
      if (!(err instanceof ApiError)) console.error("request failed", input.routeId, err);
      return { ok: false, error: translateStorageError(err).toBody() };
    }
  }

  /**
   * New ids reach the ownership registry before the reply that reveals them, so no other organization
   * can learn an id before the registry knows its owner (docs/operations.md, "Limits and scale"). Each write's own
   * ids, batched with those of writes running at the same time (RegistrationBatcher); a failure leaves
   * the rows to the alarm's retry and the write stands.
   */
  private readonly registrations = new RegistrationBatcher(
    (ids) => withinRegistryWait(registerQueuedOwners(this.db, this.deps.registry, getMeta(this.db, "org_id")!, ids)),
    (err) => console.error("ownership registration failed; the outbox retries", err));

  /** The reserve top-up in progress, if any: at most one at a time. */
  private toppingUp: Promise<void> | null = null;
  private readonly reserve = new ReserveGauge();

  /**
   * Keep ids registered ahead of use (src/org/reserved-ids.ts), so that the next writes answer without
   * a registry call. Not awaited: a write never waits for it; a failure leaves the fallback in place.
   */
  private topUpReserves(created: string[]): void {
    this.reserve.spent(created);
    if (this.toppingUp) return;
    const low = this.reserve.low(this.db, created);
    if (!low.length) return;
    const orgId = getMeta(this.db, "org_id");
    if (!orgId) return;
    this.toppingUp = withinRegistryWait(topUpReserves(this.db, this.deps.registry, orgId, low, clock.nowIso()))
      .catch((err) => console.error("record id reserve top-up failed; writes register after commit", err))
      .finally(() => { this.reserve.forget(low); this.toppingUp = null; });
  }

  /** D1 follows the DO: applied only after the DO transaction committed. */
  private async applyIndexWrites(orgId: string, reply: Reply): Promise<void> {
    for (const w of reply.indexWrites ?? ([] as IndexWrite[])) {
      if (w.op === "add_credential") {
        const kind = w.kind ?? "api_key";
        try {
          await addCredential(this.env.INDEX_DB, w.keyHash, orgId, kind, clock.nowIso());
        } catch (err) {
          // The raw key never reached the caller; retire the row so nothing half-made remains usable.
          if (kind === "dashboard_session") revokeSessionById(this.db, w.keyId);
          else revokeKey(this.db, w.keyId);
          throw new ApiError("UNAVAILABLE", "The credential index is unavailable; the key was not created.");
        }
      } else {
        // Revocation is already effective: the DO re-reads the key row on every request.
        await removeCredential(this.env.INDEX_DB, w.keyHash).catch((err) => console.error("index cleanup failed", err));
      }
    }
  }

  /** Creates the organization's owner principal, account and key (no HTTP route does this). */
  async bootstrap(orgId: string, username: string): Promise<BootstrapResult> {
    return bootstrapOrganization(this.db, this.ctx.storage, orgId, username, pepperOf(this.env));
  }

  /** Password login for POST /v1/dashboard-sessions (the front Worker found this org by username). */
  async login(input: { username: string; password: string; requestId: string }): Promise<LoginResult> {
    try {
      if (this.migrationError) throw new ApiError("UNAVAILABLE", "Storage is unavailable.");
      return await passwordLogin({ db: this.db, storage: this.ctx.storage, env: this.env, requestId: input.requestId }, input.username, input.password);
    } catch (err) {
      if (!(err instanceof ApiError)) console.error("login failed", err);
      const e = translateStorageError(err);
      return { ok: false, error: { code: "UNAVAILABLE", message: e.code === "UNAVAILABLE" ? e.message : "Storage is unavailable." } };
    }
  }

  /** Re-checked on every call: the applied migrations by name against the list, not by count. */
  async readiness(): Promise<{ ok: boolean; applied: number; expected: number; error?: string }> {
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
    this.scheduleAlarm(armAtMs);
  }

  /** Events were committed: jobs that follow events (webhook delivery) may become due. */
  private eventsWritten(): void {
    for (const job of BACKGROUND_JOBS) {
      const at = job.dueAfterEvents?.(this.db, maintenanceIntervalMs(this.env));
      if (at != null) this.jobDue(job.name, at);
    }
  }

  /** Alarm changes requested during the current request; dispatch awaits them before answering. */
  private alarmWork: Promise<void>[] = [];

  /** The alarm time this object last set (undefined: unknown, e.g. after a restart). */
  private armedAt: number | null | undefined;

  private scheduleAlarm(atMs: number): void {
    // Hot path: an alarm already armed no later than atMs needs no storage call at all.
    if (this.armedAt != null && this.armedAt <= atMs) return;
    // Noted at once, not when the storage answers: a later request in the same write (the outbox's, one
    // second on) must not overwrite an earlier one (webhook delivery, due now) whose setAlarm is still
    // on its way. Storage calls run in order, so the earliest time requested is the one that stays.
    this.armedAt = atMs;
    this.alarmWork.push(this.ctx.storage.getAlarm().then(async (current) => {
      if (current == null || current > atMs) await this.ctx.storage.setAlarm(atMs);
    }));
  }

  private async settleAlarmWork(): Promise<void> {
    const work = this.alarmWork;
    this.alarmWork = [];
    await Promise.all(work);
  }

  /** Runs the background jobs that are due (src/jobs.ts), then re-arms for the earliest due time left. */
  override async alarm(): Promise<void> {
    this.armedAt = null; // this alarm has fired; whatever is set below is the next one
    const ctx: JobContext = {
      db: this.db, storage: this.ctx.storage, indexDb: this.env.INDEX_DB, orgId: getMeta(this.db, "org_id"),
      maintenanceIntervalMs: maintenanceIntervalMs(this.env), deps: this.deps,
    };
    const next = await runDueJobs(BACKGROUND_JOBS, ctx);
    if (next != null) {
      await this.ctx.storage.setAlarm(next);
      this.armedAt = next;
    }
  }
}
