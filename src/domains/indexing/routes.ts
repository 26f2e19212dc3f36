// The vector index queue's routes (drain, verify) and the enrichment drain. Organization-wide
// maintenance that reports organization-wide counts, so owners and admins only.
import { ADMIN_ROLES } from "../../auth/roles";
import { clock } from "../../http/clock";
import { orgRoute } from "../../org/route";
import { commitWrite } from "../../org/write";
import { runtimeFor } from "../../vector/runtime";
import { maintenanceIntervalMs } from "../../org/maintenance";
import { drainsInBackground, INDEX_DRAIN_DELAY_MS, indexDrainJob } from "./background";
import { applyEnrichment, enrichmentPosition, observationsAfterCount, runEnrichment } from "./enrichment";

import { indexQueueSize, queueIndex } from "./queue";
import {
  enrichmentDrainBody,
  enrichmentDrainResponse,
  indexDrainBody,
  indexDrainResponse,
  indexVerifyBody,
  indexVerifyResponse,
} from "./schema";
import { applyDrain, runDrain, runVerify } from "./service";

export const indexingRoutes = [
  orgRoute({
    method: "POST",
    path: "/v1/index/drain",
    scope: "index:write",
    roles: ADMIN_ROLES,
    body: indexDrainBody,
    bodyOptional: true,
    response: { 200: indexDrainResponse },
    summary:
      "Embed and upsert up to `limit` queued records, delete revoked/superseded/expired ones from the vector index.",
    operationId: "drainIndex",
    tag: "Vectors",
    description:
      "Embeds and upserts up to `limit` queued records and deletes revoked, superseded or expired ones from the " +
      "vector index. Without a vector capability it is 400; an unreachable model or index is 503 with the queue " +
      "untouched.",
    handler: async (rc) => {
      const plan = await runDrain(rc.db, runtimeFor(rc), rc.body.limit, clock.nowIso());
      return commitWrite(rc, (db) => {
        const at = clock.nowIso();
        applyDrain(db, plan, at);
        const counts = {
          drained: plan.seqs.length,
          indexed: plan.indexed.length,
          removed: plan.removed.length,
          skipped: plan.skipped,
        };
        return {
          status: 200,
          data: { ...counts, remaining: indexQueueSize(db), model: plan.model, dimensions: plan.dimensions, at },
          audit: { action: "index.drained", resourceType: "vector_index", detail: counts },
        };
      });
    },
  }),

  orgRoute({
    method: "POST",
    path: "/v1/index/verify",
    scope: "index:write",
    roles: ADMIN_ROLES,
    body: indexVerifyBody,
    bodyOptional: true,
    response: { 200: indexVerifyResponse },
    summary: "Check up to 100 current claims against the vector index (ids only) and queue one repair per missing id.",
    operationId: "verifyIndex",
    tag: "Vectors",
    description:
      "Checks up to 100 current claims against the vector index by id and queues one repair per missing id; continue " +
      "with `next_after`. Never reads embedding values.",
    handler: async (rc) => {
      const v = await runVerify(rc.db, runtimeFor(rc), rc.body.limit, rc.body.after, clock.nowIso());
      return commitWrite(rc, (db) => {
        queueIndex(db, v.repair, clock.nowIso());
        if (v.repair.length && drainsInBackground(rc.deps.models, maintenanceIntervalMs(rc.env)))
          rc.jobDue(indexDrainJob.name, clock.nowMs() + INDEX_DRAIN_DELAY_MS);
        const { repair: _ids, ...data } = v;
        return {
          status: 200,
          data,
          audit: {
            action: "index.verified",
            resourceType: "vector_index",
            detail: {
              checked: v.checked,
              present: v.present,
              missing: v.missing,
              pending: v.pending,
              repairs_queued: v.repairs_queued,
            },
          },
        };
      });
    },
  }),

  orgRoute({
    method: "POST",
    path: "/v1/enrichment/drain",
    scope: "enrichment:write",
    roles: ADMIN_ROLES,
    body: enrichmentDrainBody,
    bodyOptional: true,
    response: { 200: enrichmentDrainResponse },
    summary:
      "Propose candidate claims from up to `limit` new observations into the review ledger (never canonical claims).",
    operationId: "drainEnrichment",
    tag: "Vectors",
    description:
      "Proposes candidate claims from up to `limit` new observations into a review ledger; it never writes canonical " +
      "claims. With extraction disabled it drains nothing and answers `status: disabled`.",
    handler: async (rc) => {
      const plan = await runEnrichment(rc.db, runtimeFor(rc), rc.body.limit);
      return commitWrite(rc, (db) => {
        if (!plan)
          return {
            status: 200,
            data: { drained: 0, status: "disabled" },
            audit: {
              action: "enrichment.drained",
              resourceType: "enrichment",
              detail: { drained: 0, status: "disabled" },
            },
          };
        const ids = applyEnrichment(db, plan, clock.nowIso());
        const drained = ids ? plan.observations : 0;
        const data = {
          drained,
          proposed: ids?.length ?? 0,
          remaining: observationsAfterCount(db, enrichmentPosition(db)),
          status: "enabled",
          model: plan.model,
        };
        return {
          status: 200,
          data,
          audit: {
            action: "enrichment.drained",
            resourceType: "enrichment",
            detail: { drained, proposed: data.proposed },
          },
        };
      });
    },
  }),
];
