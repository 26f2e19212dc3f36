// One Durable Object per organization, holding all of that tenant's state in its own SQLite.
// The class stays thin: it migrates, authenticates the key row, checks scope and role, validates,
// and hands the request to the route's handler. SQL lives in the domains.
import { DurableObject } from "cloudflare:workers";
import { clock } from "../http/clock";
import { ApiError, type ErrorBody, translateStorageError } from "../http/errors";
import type { EdgeEnv, OrgRoute } from "../http/route";
import { executeRoute, type Session } from "./execute";
import { addCredential, removeCredential } from "../index-db";
import { ORG_ROUTES } from "../routes";
import { loadCaller } from "../domains/identity/store";
import { bootstrapOrganization, type BootstrapResult } from "../domains/identity/bootstrap";
import { runMaintenance } from "./maintenance";
import { drainRecordOwners } from "./outbox";
import { backgroundDrain, hasActiveHooks, maintenanceIntervalMs } from "../domains/webhooks/delivery";
import { delivery } from "../domains/webhooks/routes";
import { Db } from "./db";
import { appliedCount, migrate } from "./migrate";
import { ORG_MIGRATIONS } from "./migrations";
import type { IndexWrite, Reply } from "./request";
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
  /** The few request headers routes may read (lower-case names): accept, content-type, mcp-protocol-version, origin, host. */
  headers: Record<string, string>;
}

export type DispatchResult =
  | { ok: true; status: number; data: unknown; meta?: Record<string, unknown>; ndjson?: string[]; stream?: ReadableStream<Uint8Array>; bare?: Reply["bare"] }
  | { ok: false; error: ErrorBody };

/** Retry delay after a failed outbox drain. */
const OUTBOX_RETRY_MS = 30_000;

export class OrgStore extends DurableObject<EdgeEnv> {
  readonly db: Db;
  private migrationError: string | null = null;

  constructor(ctx: DurableObjectState, env: EdgeEnv) {
    super(ctx, env);
    this.db = new Db(ctx.storage.sql);
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
      const session: Session = {
        orgId: input.orgId, db: this.db, storage: this.ctx.storage, caller, requestId: input.requestId,
        headers: input.headers, env: this.env,
        scheduleAlarm: (atMs) => this.scheduleAlarm(atMs),
        eventsWritten: () => this.eventsWritten(),
      };
      const reply = await executeRoute(session, route, {
        params: input.params, query: input.query, bodyText: route.rawBody ? undefined : input.bodyText,
        rawBody: input.bodyText, idempotencyKey: normalizeIdempotencyKey(input.idempotencyKey),
      });
      await this.settleAlarmWork();
      await this.applyIndexWrites(input.orgId, reply);
      return { ok: true, status: reply.status, data: reply.data, meta: reply.meta, ndjson: reply.ndjson, stream: reply.stream, bare: reply.bare };
    } catch (err) {
      if (!(err instanceof ApiError)) console.error("request failed", input.routeId, err);
      return { ok: false, error: translateStorageError(err).toBody() };
    }
  }

  /** D1 follows the DO: applied only after the DO transaction committed. */
  private async applyIndexWrites(orgId: string, reply: Reply): Promise<void> {
    for (const w of reply.indexWrites ?? ([] as IndexWrite[])) {
      if (w.op === "add_credential") {
        try {
          await addCredential(this.env.INDEX_DB, w.keyHash, orgId, "api_key", clock.nowIso());
        } catch (err) {
          // The raw key never reached the caller; retire the row so nothing half-made remains usable.
          this.db.run("UPDATE api_keys SET status = 'revoked', revoked_at = ? WHERE key_id = ?", clock.nowIso(), w.keyId);
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
    return bootstrapOrganization(this.db, this.ctx.storage, orgId, username);
  }

  async readiness(): Promise<{ ok: boolean; applied: number; expected: number; error?: string }> {
    try {
      const applied = appliedCount(this.db);
      return { ok: !this.migrationError && applied === ORG_MIGRATIONS.length, applied, expected: ORG_MIGRATIONS.length };
    } catch {
      return { ok: false, applied: 0, expected: ORG_MIGRATIONS.length, error: "storage check failed" };
    }
  }

  /**
   * With a maintenance interval, new events make background delivery due within one interval. The due
   * time is stored with the write (this runs inside its transaction), so an alarm woken early for other
   * work does not deliver ahead of time.
   */
  private eventsWritten(): void {
    const interval = maintenanceIntervalMs(this.env);
    if (interval <= 0 || !hasActiveHooks(this.db)) return;
    const due = clock.nowMs() + interval;
    const current = Number(this.db.first<{ value: string }>("SELECT value FROM org_meta WHERE name = 'webhook_due_at'")?.value ?? Infinity);
    if (due < current) this.db.run("INSERT INTO org_meta (name, value) VALUES ('webhook_due_at', ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value", String(due));
    this.scheduleAlarm(Math.min(due, current));
  }

  /** Alarm changes requested during the current request; dispatch awaits them before answering. */
  private alarmWork: Promise<void>[] = [];

  /** The alarm time this object last set (undefined: unknown, e.g. after a restart). */
  private armedAt: number | null | undefined;

  private scheduleAlarm(atMs: number): void {
    // Hot path: an alarm already armed no later than atMs needs no storage call at all.
    if (this.armedAt != null && this.armedAt <= atMs) return;
    this.alarmWork.push(this.ctx.storage.getAlarm().then(async (current) => {
      if (current == null || current > atMs) {
        await this.ctx.storage.setAlarm(atMs);
        this.armedAt = atMs;
      } else this.armedAt = current;
    }));
  }

  private async settleAlarmWork(): Promise<void> {
    const work = this.alarmWork;
    this.alarmWork = [];
    await Promise.all(work);
  }

  /**
   * Background work, idempotent and bounded per run: expiry sweeps, then the outbox. Re-arms for the
   * earliest pending work; a failing step is logged and retried on the next run.
   */
  override async alarm(): Promise<void> {
    this.armedAt = null; // this alarm has fired; whatever is set below is the next one
    const wakeAt: number[] = [];
    const nextExpiry = runMaintenance(this.db, this.ctx.storage);
    if (nextExpiry != null) wakeAt.push(nextExpiry);
    const orgId = this.db.first<{ value: string }>("SELECT value FROM org_meta WHERE name = 'org_id'")?.value;
    if (orgId) {
      try {
        if (await drainRecordOwners(this.db, this.env.INDEX_DB, orgId)) wakeAt.push(clock.nowMs());
      } catch (err) {
        console.error("outbox drain failed; retrying", err);
        wakeAt.push(clock.nowMs() + OUTBOX_RETRY_MS);
      }
    }
    const interval = maintenanceIntervalMs(this.env);
    const dueAt = this.db.first<{ value: string }>("SELECT value FROM org_meta WHERE name = 'webhook_due_at'")?.value;
    if (interval > 0 && dueAt !== undefined) {
      if (Number(dueAt) > clock.nowMs()) wakeAt.push(Number(dueAt));
      else {
        let next: number | null = null;
        try {
          if (await backgroundDrain(this.db, this.ctx.storage, delivery.send)) next = clock.nowMs();
        } catch (err) {
          console.error("background webhook delivery failed; retrying", err);
          next = clock.nowMs() + interval;
        }
        if (next == null) this.db.run("DELETE FROM org_meta WHERE name = 'webhook_due_at'");
        else {
          this.db.run("UPDATE org_meta SET value = ? WHERE name = 'webhook_due_at'", String(next));
          wakeAt.push(next);
        }
      }
    }
    if (wakeAt.length) {
      const next = Math.min(...wakeAt);
      await this.ctx.storage.setAlarm(next);
      this.armedAt = next;
    }
  }
}
