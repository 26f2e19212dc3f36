// One Durable Object per organization, holding all of that tenant's state in its own SQLite.
// The class stays thin: it migrates, authenticates the key row, and hands the request to
// executeRoute (scope, role, validation, handler); background work lives in maintenance.ts and SQL
// in the domains.
import { DurableObject } from "cloudflare:workers";
import { clock } from "../http/clock";
import { ApiError, type ErrorBody, translateStorageError } from "../http/errors";
import type { EdgeEnv, OrgRoute } from "../http/route";
import { executeRoute, type Session } from "./execute";
import { addCredential, removeCredential } from "../index-db";
import { ORG_ROUTES } from "../routes";
import { loadCaller, revokeKey } from "../domains/identity/store";
import { bootstrapOrganization, type BootstrapResult } from "../domains/identity/bootstrap";
import { runAlarm } from "./maintenance";
import { markDeliveryDue, maintenanceIntervalMs } from "../domains/webhooks/delivery";
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
  /** The few request headers routes may read (lower-case names): accept, content-type, mcp-protocol-version, origin, x-svc-peer-signature, host. */
  headers: Record<string, string>;
}

export type DispatchResult =
  | ({ ok: true } & Omit<Reply, "indexWrites">)
  | { ok: false; error: ErrorBody };

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
      const { indexWrites: _applied, ...answer } = reply;
      return { ok: true, ...answer };
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
          revokeKey(this.db, w.keyId);
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

  /** Events were committed: background delivery may become due (stored with the write). */
  private eventsWritten(): void {
    const wake = markDeliveryDue(this.db, maintenanceIntervalMs(this.env));
    if (wake != null) this.scheduleAlarm(wake);
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

  /** Background work (src/org/maintenance.ts), then re-armed for the earliest pending step. */
  override async alarm(): Promise<void> {
    this.armedAt = null; // this alarm has fired; whatever is set below is the next one
    const next = await runAlarm({
      db: this.db, storage: this.ctx.storage, indexDb: this.env.INDEX_DB,
      maintenanceIntervalMs: maintenanceIntervalMs(this.env), send: delivery.send,
    });
    if (next != null) {
      await this.ctx.storage.setAlarm(next);
      this.armedAt = next;
    }
  }
}
