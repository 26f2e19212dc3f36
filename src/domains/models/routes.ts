// Model diagnostics: the configuration snapshot and a bounded probe. Neither changes configuration,
// and neither ever answers a credential, a prompt, a raw provider response or an embedding.
import { isAdmin } from "../../access/policy";
import { clock } from "../../http/clock";
import { orgRoute } from "../../org/route";
import { indexDrift, retrievableIndexedWithOtherModel } from "../indexing/service";
import { ok } from "../../org/request";
import { commitWrite } from "../../org/write";
import { runtimeFor, type VectorRuntime } from "../../vector/runtime";
import { VectorBackendError } from "../../vector/types";
import { modelConfigResponse, PROBE_ERRORS, PROBE_KINDS, probeBody, probeResponse } from "./schema";

export interface ProbeResult {
  kind: (typeof PROBE_KINDS)[number];
  ok: boolean;
  provider: string;
  model: string | null;
  dimensions?: number;
  latency_ms: number;
  error_code?: (typeof PROBE_ERRORS)[number];
}

/** One bounded call to the configured backend; the answer keeps metadata only. */
export async function probe(rt: VectorRuntime, kind: ProbeResult["kind"], text: string): Promise<ProbeResult> {
  const started = clock.nowMs();
  const latency = () => Math.max(0, clock.nowMs() - started);
  if (kind === "embedding") {
    const { provider, model } = rt.config.embedding;
    if (!rt.embedder) return { kind, ok: false, provider, model, latency_ms: 0, error_code: "not_configured" };
    try {
      const [v] = await rt.embedder.embed([text]);
      return { kind, ok: true, provider, model, dimensions: v.length, latency_ms: latency() };
    } catch (err) {
      if (!(err instanceof VectorBackendError)) throw err;
      return { kind, ok: false, provider, model, latency_ms: latency(), error_code: "unavailable" };
    }
  }
  const { provider, model } = rt.config.extraction;
  if (!rt.extractor) return { kind, ok: false, provider, model, latency_ms: 0, error_code: "not_configured" };
  try {
    await rt.extractor.propose(text);
    return { kind, ok: true, provider, model, latency_ms: latency() };
  } catch (err) {
    if (!(err instanceof VectorBackendError)) throw err;
    return { kind, ok: false, provider, model, latency_ms: latency(), error_code: "unavailable" };
  }
}

export const modelRoutes = [
  orgRoute({
    method: "GET",
    path: "/v1/models/config",
    scope: "models:read",
    response: { 200: modelConfigResponse },
    summary: "The isolate's immutable model configuration snapshot (no secrets) and this organization's index drift.",
    operationId: "getModelConfig",
    tag: "Vectors",
    description:
      "Reports the isolate's immutable embedding and extraction configuration (no secrets) and how far this " +
      "organization's index drifts from it.",
    handler: (rc) => {
      const rt = runtimeFor(rc);
      // The counts cover every principal's claims, private ones included: owners and admins only.
      // Anyone else is told the status over the claims it may retrieve, nothing else.
      if (isAdmin(rc.caller)) {
        const { indexed, other } = indexDrift(rc.db, rt.config.embedding);
        return ok({
          ...rt.config,
          drift: { status: other > 0 ? "drifted" : "none", indexed, indexed_with_other_model: other },
        });
      }
      const { model, dimensions } = rt.config.embedding;
      const other = retrievableIndexedWithOtherModel(rc.db, rc.caller, model, dimensions);
      return ok({ ...rt.config, drift: { status: other > 0 ? "drifted" : "none" } });
    },
  }),

  orgRoute({
    method: "POST",
    path: "/v1/models/probe",
    scope: "models:probe",
    body: probeBody,
    response: { 200: probeResponse },
    summary: "One bounded embedding or extraction call; answers metadata only and appends a metadata-only audit entry.",
    operationId: "probeModel",
    tag: "Vectors",
    description:
      "Makes one bounded embedding or extraction call and answers its metadata only (no text or vectors), appending a " +
      "metadata-only audit entry.",
    handler: async (rc) => {
      const result = await probe(runtimeFor(rc), rc.body.kind, rc.body.text);
      return commitWrite(rc, () => ({
        status: 200,
        data: result,
        audit: {
          action: "models.probed",
          resourceType: "model",
          resourceId: null,
          detail: {
            kind: result.kind,
            provider: result.provider,
            model: result.model,
            ok: result.ok,
            error_code: result.error_code ?? null,
            latency_ms: result.latency_ms,
            text_chars: rc.body.text.length,
          },
        },
      }));
    },
  }),
];
