// Model diagnostics: the configuration snapshot and the probe.
import { describe, expect, it } from "vitest";
import { probe } from "../src/domains/models/routes";
import { modelConfig, readModelConfig } from "../src/vector/config";
import { maintenanceIntervalMs } from "../src/org/maintenance";
import { vectorRuntime } from "../src/vector/runtime";
import { FakeAi } from "./fakes/vector";
import { appendOk, call, consolidateOk, expectError, inOrg, mintKey, newOrg, obs, supports } from "./helpers";

const AT = "2026-01-01T00:00:00.000Z";
const hasVector = (v: unknown): boolean =>
  Array.isArray(v)
    ? (v.length > 8 && v.every((x) => typeof x === "number")) || v.some(hasVector)
    : v !== null && typeof v === "object"
      ? Object.values(v).some(hasVector)
      : false;

describe("configuration snapshot", () => {
  it("defaults to the embedded backends with extraction disabled", () => {
    const c = readModelConfig({}, AT);
    expect(c.embedding).toMatchObject({ provider: "local", status: "enabled", dimensions: 100, key_state: "absent" });
    expect(c.vector_index).toMatchObject({ provider: "local", status: "enabled", metric: "cosine" });
    expect(c.extraction).toMatchObject({ provider: "none", status: "disabled", model: null });
    expect(c.vectors.status).toBe("enabled");
  });

  it("chooses backends by the variables, never by which bindings exist", () => {
    // Bindings present, variables say local/none: the bindings are not used.
    const local = readModelConfig({ EMBEDDING_PROVIDER: "local", VECTOR_INDEX: "local", AI: {}, VECTORIZE: {} }, AT);
    expect(local.embedding.provider).toBe("local");
    expect(local.vector_index.provider).toBe("local");
    // Variables say workers-ai/vectorize but the bindings are missing: reported partial, not swapped for local.
    const missing = readModelConfig(
      { EMBEDDING_PROVIDER: "workers-ai", VECTOR_INDEX: "vectorize", EXTRACTION_PROVIDER: "workers-ai" },
      AT,
    );
    expect(missing.embedding).toMatchObject({
      provider: "workers-ai",
      status: "partial",
      key_state: "absent",
      model: "@cf/baai/bge-small-en-v1.5",
      dimensions: 384,
      pooling: "cls",
    });
    expect(missing.vector_index).toMatchObject({ provider: "vectorize", status: "partial" });
    expect(missing.extraction).toMatchObject({ provider: "workers-ai", status: "partial" });
    expect(missing.vectors.status).toBe("partial");
    const prod = readModelConfig(
      { EMBEDDING_PROVIDER: "workers-ai", VECTOR_INDEX: "vectorize", AI: {}, VECTORIZE: {} },
      AT,
    );
    expect(prod.vectors.status).toBe("enabled");
    expect(prod.embedding.key_state).toBe("present");
  });

  it("reports disabled, half-configured and unknown settings explicitly", () => {
    expect(readModelConfig({ EMBEDDING_PROVIDER: "none", VECTOR_INDEX: "none" }, AT).vectors.status).toBe("disabled");
    const half = readModelConfig({ EMBEDDING_PROVIDER: "local", VECTOR_INDEX: "none" }, AT);
    expect(half.vectors).toMatchObject({ status: "partial" });
    const odd = readModelConfig({ EMBEDDING_PROVIDER: "openai" }, AT);
    expect(odd.embedding).toMatchObject({ provider: "none", status: "partial" });
    expect(odd.embedding.problems[0]).toContain("openai");
    // The local embedder cannot fill the 384-dimension production index.
    expect(
      readModelConfig({ EMBEDDING_PROVIDER: "local", VECTOR_INDEX: "vectorize", VECTORIZE: {} }, AT).vectors.status,
    ).toBe("partial");
  });

  it("is read once per isolate and immutable", () => {
    const env = { EMBEDDING_PROVIDER: "local" };
    const a = modelConfig(env, () => AT);
    env.EMBEDDING_PROVIDER = "none";
    const b = modelConfig(env, () => "later");
    expect(b).toBe(a);
    expect(b.embedding.provider).toBe("local");
    expect(Object.isFrozen(b) && Object.isFrozen(b.embedding) && Object.isFrozen(b.embedding.problems)).toBe(true);
  });

  it("GET /v1/models/config answers the snapshot and drift, never a secret, behind models:read", async () => {
    const org = await newOrg();
    const r = await call("GET", "/v1/models/config", { key: org.api_key });
    expect(r.status, r.text).toBe(200);
    expect(r.json.data.embedding).toMatchObject({ provider: "local", status: "enabled" });
    expect(r.json.data.extraction.status).toBe("disabled");
    expect(r.json.data.drift).toEqual({ status: "none", indexed: 0, indexed_with_other_model: 0 });
    expect(r.text).not.toMatch(/svc_sk_/);
    const narrow = await mintKey(org.api_key, { scopes: ["models:probe"] });
    expectError(await call("GET", "/v1/models/config", { key: narrow.key }), 403, "FORBIDDEN");
    // Counts span every principal's claims: a member sees only whether vectors drifted.
    const member = await mintKey(org.api_key, { scopes: ["models:read"] });
    expect((await call("GET", "/v1/models/config", { key: member.key })).json.data.drift).toEqual({ status: "none" });
  });

  it("reports drift when records were indexed with another model", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, (o) =>
      o.db.run(
        "INSERT INTO indexed_records (record_id, model, dimensions, indexed_at) VALUES ('claim_x', 'old-model', 384, ?)",
        AT,
      ),
    );
    const r = await call("GET", "/v1/models/config", { key: org.api_key });
    expect(r.json.data.drift).toEqual({ status: "drifted", indexed: 1, indexed_with_other_model: 1 });
  });
});

describe("drift for members", () => {
  it("depends only on claims the member may retrieve: another principal's private claim indexed with an old model changes nothing", async () => {
    const org = await newOrg();
    const alice = await mintKey(org.api_key, { scopes: ["*"] });
    const bob = await mintKey(org.api_key, { scopes: ["*"] });
    const drift = async (key: string) => (await call("GET", "/v1/models/config", { key })).json.data.drift;
    const claimOf = async (key: string, statement: string, visibility: string) => {
      const o = await appendOk(key, obs("d", statement, { visibility }));
      return (await consolidateOk(key, "d", [{ kind: "fact", statement, visibility, sources: supports(o) }]))[0];
    };
    const secret = await claimOf(alice.key, "alice private note", "private");
    expect((await call("POST", "/v1/index/drain", { key: org.api_key, body: {} })).status).toBe(200);
    const reindexWithOldModel = (id: string) =>
      inOrg(org.org_id, (o) => o.db.run("UPDATE indexed_records SET model = 'older-model' WHERE record_id = ?", id));
    await reindexWithOldModel(secret);
    expect(await drift(bob.key)).toEqual({ status: "none" });
    expect(await drift(alice.key)).toEqual({ status: "drifted" });
    const shared = await claimOf(alice.key, "a team note", "team");
    expect((await call("POST", "/v1/index/drain", { key: org.api_key, body: {} })).status).toBe(200);
    await reindexWithOldModel(shared);
    expect(await drift(bob.key)).toEqual({ status: "drifted" });
  });
});

describe("the timer rule (SPEC: interval above zero, and vectors configured or an interval given)", () => {
  it("defaults to 15 s only when a vector capability is configured", () => {
    expect(maintenanceIntervalMs({})).toBe(15_000);
    expect(maintenanceIntervalMs({ EMBEDDING_PROVIDER: "none", VECTOR_INDEX: "none" })).toBe(0);
    expect(
      maintenanceIntervalMs({ EMBEDDING_PROVIDER: "none", VECTOR_INDEX: "none", MAINTENANCE_INTERVAL_SECONDS: "30" }),
    ).toBe(30_000);
    expect(maintenanceIntervalMs({ MAINTENANCE_INTERVAL_SECONDS: "0" })).toBe(0);
  });
});

describe("probe", () => {
  it("runs one embedding, answers metadata only and audits without the text", async () => {
    const org = await newOrg();
    const r = await call("POST", "/v1/models/probe", {
      key: org.api_key,
      body: { kind: "embedding", text: "secret probe words" },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.data).toMatchObject({ kind: "embedding", ok: true, provider: "local", dimensions: 100 });
    expect(typeof r.json.data.latency_ms).toBe("number");
    expect(hasVector(r.json)).toBe(false);
    const audit = await call("GET", "/v1/audit?action=models.probed", { key: org.api_key });
    expect(audit.json.data.entries.length).toBe(1);
    expect(audit.json.data.entries[0].metadata).toMatchObject({
      kind: "embedding",
      ok: true,
      provider: "local",
      text_chars: 18,
    });
    expect(audit.text).not.toContain("secret probe words");
  });

  it("says not_configured for disabled extraction", async () => {
    const org = await newOrg();
    const r = await call("POST", "/v1/models/probe", { key: org.api_key, body: { kind: "extraction", text: "x" } });
    expect(r.status, r.text).toBe(200);
    expect(r.json.data).toMatchObject({
      kind: "extraction",
      ok: false,
      provider: "none",
      error_code: "not_configured",
    });
  });

  it("validates kind and text, and needs models:probe", async () => {
    const org = await newOrg();
    const k = org.api_key;
    const bad = await call("POST", "/v1/models/probe", { key: k, body: { kind: "vision", text: "x" } });
    expectError(bad, 400, "VALIDATION_ERROR");
    expect(bad.json.error.message).toContain('"embedding", "extraction"');
    expectError(
      await call("POST", "/v1/models/probe", { key: k, body: { kind: "embedding", text: "x".repeat(2001) } }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(
      await call("POST", "/v1/models/probe", { key: k, body: { kind: "embedding", text: "" } }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(
      await call("POST", "/v1/models/probe", { key: k, body: { kind: "embedding", text: "x", extra: 1 } }),
      400,
      "VALIDATION_ERROR",
    );
    const narrow = await mintKey(k, { scopes: ["models:read"] });
    expectError(
      await call("POST", "/v1/models/probe", { key: narrow.key, body: { kind: "embedding", text: "x" } }),
      403,
      "FORBIDDEN",
    );
  });

  it("with Workers AI: ok with 384 dimensions, unavailable when the model throws, never the raw response", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, async (o) => {
      const ai = new FakeAi();
      const config = readModelConfig(
        { EMBEDDING_PROVIDER: "workers-ai", VECTOR_INDEX: "local", EXTRACTION_PROVIDER: "workers-ai", AI: ai },
        AT,
      );
      const rt = vectorRuntime(config, { AI: ai }, o.db, org.org_id);
      const good = await probe(rt, "embedding", "hello");
      expect(good).toMatchObject({
        ok: true,
        provider: "workers-ai",
        model: "@cf/baai/bge-small-en-v1.5",
        dimensions: 384,
      });
      const extraction = await probe(rt, "extraction", "hello");
      expect(Object.keys(extraction).sort()).toEqual(["kind", "latency_ms", "model", "ok", "provider"]);
      ai.failing = true;
      expect(await probe(rt, "embedding", "hello")).toMatchObject({ ok: false, error_code: "unavailable" });
      expect(await probe(rt, "extraction", "hello")).toMatchObject({ ok: false, error_code: "unavailable" });
    });
  });
});
