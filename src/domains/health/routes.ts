// Public liveness and readiness, served by the front Worker without a credential.
import { D1_MIGRATIONS, appliedMigrationCount } from "../../index-db";
import { clock } from "../../http/clock";
import { dataResponse, errorResponse } from "../../http/envelope";
import type { EdgeEnv } from "../../env";
import type { PublicRoute } from "../../org/route";
import { maintenanceIntervalMs } from "../../org/maintenance";
import { modelConfig } from "../../vector/config";
import { healthResponse, readinessResponse } from "./schema";

export const REVISION = "0.10.0";

/**
 * Who drives background delivery (SPEC "Who drives delivery"): with a maintenance interval above zero
 * each org Durable Object's alarm delivers webhooks; "external" is never reported because Durable
 * Object alarms are always available on this runtime.
 */
export const backgroundRepair = (env: EdgeEnv): "enabled" | "external" | "disabled" =>
  maintenanceIntervalMs(env) > 0 ? "enabled" : "disabled";

async function readiness(env: EdgeEnv) {
  const models = modelConfig(env, clock.nowIso);
  const checks: Record<string, "ok" | "failing"> = { index_db: "ok", org_store: "ok" };
  let indexApplied = 0;
  let orgApplied = 0;
  let orgExpected = 0;
  let orgError: string | undefined;
  try {
    indexApplied = await appliedMigrationCount(env.INDEX_DB);
  } catch {
    checks.index_db = "failing";
  }
  try {
    // A dedicated probe object exercises the same class, storage and migration list as every org.
    const probe = env.ORG.get(env.ORG.idFromName("readiness-probe"));
    const r = await probe.readiness();
    orgApplied = r.applied;
    orgExpected = r.expected;
    orgError = r.error;
    if (!r.ok) checks.org_store = "failing";
  } catch {
    checks.org_store = "failing";
  }
  const expected = D1_MIGRATIONS.length + orgExpected;
  const applied = indexApplied + orgApplied;
  const ready = Object.values(checks).every((c) => c === "ok") && applied === expected;
  return {
    ready,
    runtime: env.SVC_RUNTIME ?? "workerd",
    revision: env.SVC_REVISION ?? REVISION,
    schema: {
      applied,
      expected,
      index_db: { applied: indexApplied, expected: D1_MIGRATIONS.length },
      org_store: { applied: orgApplied, expected: orgExpected, ...(orgError ? { error: orgError } : {}) },
    },
    checks,
    capabilities: {
      background_repair: backgroundRepair(env),
      maintenance_interval_seconds: maintenanceIntervalMs(env) / 1000,
      vectors: models.vectors.status === "enabled",
      model: models.extraction.status === "enabled",
    },
  };
}

export const healthRoutes: PublicRoute[] = [
  {
    method: "GET",
    path: "/healthz",
    auth: "public",
    response: { 200: healthResponse },
    summary: "Liveness, runtime label and build revision.",
    operationId: "getHealth",
    tag: "Health",
    description:
      "Answers as long as the Worker runs, with the runtime label and build revision; it reveals nothing sensitive " +
      "and needs no credential.",
    edge: async (env, requestId) =>
      dataResponse(requestId, 200, {
        status: "ok",
        runtime: env.SVC_RUNTIME ?? "workerd",
        revision: env.SVC_REVISION ?? REVISION,
      }),
  },
  {
    method: "GET",
    path: "/readyz",
    auth: "public",
    response: { 200: readinessResponse },
    summary: "Storage check, applied and expected migration counts, capability flags.",
    operationId: "getReadiness",
    tag: "Health",
    description:
      "Checks both stores and compares applied with expected migrations. Ready is 200; otherwise 503 `NOT_READY` " +
      "carries the same body in `meta`. `capabilities.background_repair` says who drives webhook delivery and " +
      "indexing.",
    edge: async (env, requestId) => {
      const body = await readiness(env);
      if (body.ready) return dataResponse(requestId, 200, body);
      return errorResponse(requestId, { code: "NOT_READY", message: "The service is not ready.", meta: body });
    },
  },
];
