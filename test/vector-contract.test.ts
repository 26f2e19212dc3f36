// One contract, every backend: the same suites run against the embedded default, against the
// production backends (Workers AI and Vectorize, through typed fakes of their bindings) and against the
// OpenAI-compatible embedder (through a local fake server handed to it as its fetch).
import { describe, expect, it } from "vitest";
import { LocalEmbedder } from "../src/vector/local-embedder";
import { LocalVectorIndex } from "../src/vector/local-index";
import { ACCEPT_ALL, type Embedder, MAX_TOP_K, normalize, VectorBackendError, type VectorIndex } from "../src/vector/types";
import { VectorizeIndexBackend } from "../src/vector/vectorize";
import { WorkersAiEmbedder } from "../src/vector/workers-ai";
import { OPENAI_COMPATIBLE_BATCH, OpenAiCompatibleEmbedder } from "../src/vector/openai-compatible";
import { readModelConfig } from "../src/vector/config";
import { embedderFor } from "../src/vector/runtime";
import { FakeAi, FakeEmbeddingServer, FakeVectorize } from "./fakes/vector";
import { appendOk, call, consolidateOk, expectError, inOrg, newOrg, obs, supports } from "./helpers";

interface IndexCase {
  name: string;
  /** Runs `fn` with a fresh index (inside an organization's Durable Object for the local one). */
  with(fn: (index: VectorIndex, ctl: { settle(): void; fail(on: boolean): void }) => Promise<void>): Promise<void>;
}

const indexCases: IndexCase[] = [
  {
    name: "local",
    with: async (fn) => {
      const org = await newOrg();
      await inOrg(org.org_id, (o) => fn(new LocalVectorIndex(o.db), {
        settle() {},
        fail(on) {
          // The local index fails only when its storage does: drop the table to make it.
          if (on) o.db.run("ALTER TABLE local_vectors RENAME TO local_vectors_gone");
          else o.db.run("ALTER TABLE local_vectors_gone RENAME TO local_vectors");
        },
      }));
    },
  },
  {
    name: "vectorize (fake binding)",
    with: async (fn) => {
      const fake = new FakeVectorize();
      const org = await newOrg();
      await inOrg(org.org_id, (o) => fn(new VectorizeIndexBackend(fake, "org_a", new LocalVectorIndex(o.db)), {
        settle: () => fake.apply(),
        // Down means Vectorize and the mirror it answers queries from (see vectorize.ts).
        fail: (on) => {
          fake.failing = on;
          if (on) o.db.run("ALTER TABLE local_vectors RENAME TO local_vectors_gone");
          else o.db.run("ALTER TABLE local_vectors_gone RENAME TO local_vectors");
        },
      }));
    },
  },
];

const unit = (...xs: number[]) => {
  const v = new Float32Array(8);
  xs.forEach((x, i) => { v[i] = x; });
  return normalize(v);
};

for (const c of indexCases) {
  describe(`VectorIndex contract: ${c.name}`, () => {
    it("finds the nearest vectors first, ids and scores only", async () => {
      await c.with(async (index, ctl) => {
        await index.upsert([{ id: "claim_a", values: unit(1, 0) }, { id: "claim_b", values: unit(0, 1) }, { id: "claim_c", values: unit(1, 1) }]);
        ctl.settle();
        const hits = await index.query(unit(1, 0.1), 2, ACCEPT_ALL);
        expect(hits.map((h) => h.id)).toEqual(["claim_a", "claim_c"]);
        expect(hits[0].score).toBeGreaterThan(0.9);
        expect(hits[0].score).toBeLessThanOrEqual(1.0001);
        for (const h of hits) expect(Object.keys(h).sort()).toEqual(["id", "score"]);
      });
    });

    it("upsert replaces, remove deletes, present reports ids", async () => {
      await c.with(async (index, ctl) => {
        await index.upsert([{ id: "claim_a", values: unit(1, 0) }, { id: "claim_b", values: unit(0, 1) }]);
        ctl.settle();
        await index.upsert([{ id: "claim_a", values: unit(0, 1) }]);
        ctl.settle();
        expect((await index.query(unit(0, 1), 2, ACCEPT_ALL)).map((h) => Math.round(h.score * 100))).toEqual([100, 100]);
        await index.remove(["claim_b"]);
        ctl.settle();
        expect([...(await index.present(["claim_a", "claim_b", "claim_x"]))]).toEqual(["claim_a"]);
        expect((await index.query(unit(0, 1), 10, ACCEPT_ALL)).map((h) => h.id)).toEqual(["claim_a"]);
      });
    });

    it("never asks for more than the query limit", async () => {
      await c.with(async (index, ctl) => {
        await index.upsert(Array.from({ length: 120 }, (_, i) => ({ id: `claim_${i}`, values: unit(1, i / 100) })));
        ctl.settle();
        expect((await index.query(unit(1, 0), 500, ACCEPT_ALL)).length).toBe(MAX_TOP_K);
      });
    });

    it("authorized kNN: the top k of the admitted ids alone, whatever the refused ones score", async () => {
      await c.with(async (index, ctl) => {
        // 150 refused vectors nearer the query than any admitted one (more than one Vectorize page).
        const refused = Array.from({ length: 150 }, (_, i) => ({ id: `claim_r${String(i).padStart(3, "0")}`, values: unit(1, i / 1000) }));
        const admitted = Array.from({ length: 5 }, (_, i) => ({ id: `claim_a${i}`, values: unit(1, 0.5 + i / 10) }));
        await index.upsert([...refused, ...admitted]);
        ctl.settle();
        const accept = (ids: string[]) => new Set(ids.filter((id) => id.startsWith("claim_a")));
        const withRefused = await index.query(unit(1, 0), 3, accept);
        expect(withRefused.map((h) => h.id)).toEqual(["claim_a0", "claim_a1", "claim_a2"]);
        // The same answer, scores included, as when the refused vectors do not exist at all.
        await index.remove(refused.map((r) => r.id));
        ctl.settle();
        expect(await index.query(unit(1, 0), 3, accept)).toEqual(withRefused);
        expect((await index.query(unit(1, 0), 3, ACCEPT_ALL)).map((h) => h.id)).toEqual(["claim_a0", "claim_a1", "claim_a2"]);
      });
    });

    it("a failing backend raises VectorBackendError", async () => {
      await c.with(async (index, ctl) => {
        ctl.fail(true);
        try {
          await expect(index.upsert([{ id: "claim_a", values: unit(1) }])).rejects.toBeInstanceOf(VectorBackendError);
          await expect(index.query(unit(1), 5, ACCEPT_ALL)).rejects.toBeInstanceOf(VectorBackendError);
        } finally {
          ctl.fail(false);
        }
      });
    });
  });
}

describe("Vectorize specifics", () => {
  it("answers from the organization's exact mirror: no other namespace, and no neighbour the caller may not read, moves the answer", async () => {
    const fake = new FakeVectorize();
    const [orgA, orgB] = [await newOrg(), await newOrg()];
    await inOrg(orgA.org_id, async (oa) => {
      const a = new VectorizeIndexBackend(fake, "org_a", new LocalVectorIndex(oa.db));
      await inOrg(orgB.org_id, (ob) => new VectorizeIndexBackend(fake, "org_b", new LocalVectorIndex(ob.db)).upsert([{ id: "claim_b", values: unit(1) }]));
      await a.upsert([{ id: "claim_a", values: unit(1) }]);
      fake.apply();
      expect((await a.query(unit(1), 500, ACCEPT_ALL)).map((h) => h.id)).toEqual(["claim_a"]);
      expect([...(await a.present(["claim_a", "claim_b"]))]).toEqual(["claim_a"]);
      // 101 readable vectors tied near the cut-off at k = 100: a refused one nearer the query than all
      // of them must not change which readable ones come back (an over-fetch of Vectorize's top 100
      // plus a fallback would answer differently with and without it).
      const near = Array.from({ length: 99 }, (_, i) => ({ id: `claim_n${String(i).padStart(3, "0")}`, values: unit(1, i / 1000) }));
      await a.upsert([...near, { id: "claim_x", values: unit(1, 0.3) }, { id: "claim_y", values: unit(1, 0.301) }]);
      fake.apply();
      const accept = (ids: string[]) => new Set(ids.filter((id) => id !== "claim_refused"));
      const without = await a.query(unit(1, 0), 100, accept);
      await a.upsert([{ id: "claim_refused", values: unit(1, 0) }]);
      fake.apply();
      expect(await a.query(unit(1, 0), 100, accept)).toEqual(without);
      expect(fake.queries).toEqual([]);
    });
  });

  it("upserts are asynchronous: not present until applied, and appliedUpTo says how far", async () => {
    const fake = new FakeVectorize();
    let t = 1_000;
    fake.now = () => t;
    const org = await newOrg();
    await inOrg(org.org_id, async (o) => {
      const index = new VectorizeIndexBackend(fake, "org_a", new LocalVectorIndex(o.db));
      await index.upsert([{ id: "claim_a", values: unit(1) }]);
      expect((await index.present(["claim_a"])).size).toBe(0);
      expect(await index.appliedUpTo()).toBeLessThan(1_000);
      fake.apply();
      t = 2_000;
      expect((await index.present(["claim_a"])).size).toBe(1);
      expect(await index.appliedUpTo()).toBe(1_000);
    });
  });
});

interface EmbedderCase {
  name: string;
  make(): { embedder: Embedder; fail(on: boolean): void } | null;
}

const embedderCases: EmbedderCase[] = [
  { name: "local", make: () => ({ embedder: new LocalEmbedder(), fail: () => {} }) },
  {
    name: "workers-ai (fake binding)",
    make: () => {
      const ai = new FakeAi();
      return { embedder: new WorkersAiEmbedder(ai), fail: (on) => { ai.failing = on; } };
    },
  },
  {
    name: "openai-compatible (local fake server)",
    make: () => {
      const server = new FakeEmbeddingServer();
      const embedder = new OpenAiCompatibleEmbedder({ url: "http://127.0.0.1:11434/v1/embeddings", model: "nomic-embed-text", dimensions: null,
        apiKey: null, fetch: server.fetch });
      return { embedder, fail: (on) => { server.failing = on; } };
    },
  },
];

const cos = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i], 0);

for (const c of embedderCases) {
  describe(`Embedder contract: ${c.name}`, () => {
    it("answers one unit vector of the declared dimensions per text, in order, deterministically", async () => {
      const { embedder } = c.make()!;
      const texts = ["the marmalade recipe uses seville oranges", "quarterly tax filing deadline", "the marmalade recipe uses seville oranges"];
      const vs = await embedder.embed(texts);
      expect(vs.length).toBe(3);
      for (const v of vs) {
        expect(v.length).toBe(embedder.dimensions);
        expect(Math.abs(Math.hypot(...v) - 1)).toBeLessThan(1e-4);
      }
      expect(cos(vs[0], vs[2])).toBeCloseTo(1, 4);
      expect(cos(vs[0], vs[1])).toBeLessThan(0.9);
      expect(typeof embedder.model).toBe("string");
    });

    it("a text about the same thing is nearer than one about something else", async () => {
      const { embedder } = c.make()!;
      const [q, near, far] = await embedder.embed(["oranges marmalade", "marmalade made from oranges", "the tax office deadline"]);
      expect(cos(q, near)).toBeGreaterThan(cos(q, far));
    });

    it("an unreachable model raises VectorBackendError", async () => {
      const { embedder, fail } = c.make()!;
      fail(true);
      if (c.name === "local") return expect(await embedder.embed(["x"])).toHaveLength(1); // runs in the Worker: nothing to reach
      await expect(embedder.embed(["x"])).rejects.toBeInstanceOf(VectorBackendError);
    });
  });
}

describe("OpenAI-compatible specifics", () => {
  const make = (server: FakeEmbeddingServer, opts: Partial<ConstructorParameters<typeof OpenAiCompatibleEmbedder>[0]> = {}) =>
    new OpenAiCompatibleEmbedder({ url: "http://127.0.0.1:11434/v1", model: "nomic-embed-text", dimensions: null, apiKey: null, fetch: server.fetch, ...opts });

  it("posts the model and texts in batches, to /embeddings under a base URL, with the key as a bearer token only when set", async () => {
    const server = new FakeEmbeddingServer();
    const texts = Array.from({ length: OPENAI_COMPATIBLE_BATCH + 5 }, (_, i) => `text ${i}`);
    const vs = await make(server, { apiKey: "sk-local-secret" }).embed(texts);
    expect(vs).toHaveLength(texts.length);
    expect(server.requests.map((r) => [r.url, r.body.model, r.body.input.length, r.body.encoding_format, r.body.dimensions]))
      .toEqual([["http://127.0.0.1:11434/v1/embeddings", "nomic-embed-text", OPENAI_COMPATIBLE_BATCH, "float", undefined],
        ["http://127.0.0.1:11434/v1/embeddings", "nomic-embed-text", 5, "float", undefined]]);
    expect(server.requests[0].headers.authorization).toBe("Bearer sk-local-secret");
    server.requests.length = 0;
    await make(server).embed(["x"]);
    expect(server.requests[0].headers.authorization).toBeUndefined();
  });

  it("asks for EMBEDDING_DIMENSIONS when set and reports the answered length otherwise", async () => {
    const server = new FakeEmbeddingServer(48);
    const sized = make(server, { dimensions: 32 });
    expect(sized.dimensions).toBe(32);
    expect((await sized.embed(["x"]))[0]).toHaveLength(32);
    expect(server.requests[0].body.dimensions).toBe(32);
    const learned = make(server);
    expect(learned.dimensions).toBe(0);
    await learned.embed(["x"]);
    expect(learned.dimensions).toBe(48);
  });

  it("orders answers by their index, and refuses every malformed answer as VectorBackendError", async () => {
    const server = new FakeEmbeddingServer();
    server.mode = "reversed";
    const [a, b] = await make(server).embed(["alpha apples", "beta bananas"]);
    server.mode = "ok";
    const [a2, b2] = await make(server).embed(["alpha apples", "beta bananas"]);
    expect([...a]).toEqual([...a2]);
    expect([...b]).toEqual([...b2]);
    for (const mode of ["network", "not-json", "short", "wrong-length"] as const) {
      server.mode = mode;
      await expect(make(server).embed(["one", "two"]), mode).rejects.toBeInstanceOf(VectorBackendError);
    }
    // A server that ignores EMBEDDING_DIMENSIONS and answers vectors of another length.
    server.mode = "ignores-dimensions";
    await expect(make(server, { dimensions: 32 }).embed(["x"])).rejects.toBeInstanceOf(VectorBackendError);
    expect((await make(server).embed(["x"]))[0]).toHaveLength(64);
  });

  it("is chosen by EMBEDDING_PROVIDER with its URL and model; the key shows only as key_state", () => {
    const at = new Date().toISOString();
    const env = { EMBEDDING_PROVIDER: "openai-compatible", EMBEDDING_URL: "http://127.0.0.1:11434/v1", EMBEDDING_MODEL: "nomic-embed-text",
      EMBEDDING_DIMENSIONS: "768", EMBEDDING_API_KEY: "sk-do-not-show" };
    const config = readModelConfig(env, at);
    expect(config.embedding).toMatchObject({ provider: "openai-compatible", model: "nomic-embed-text", dimensions: 768, pooling: null,
      similarity_floor: null, status: "enabled", key_state: "present", problems: [] });
    expect(JSON.stringify(config)).not.toContain("sk-do-not-show");
    expect(JSON.stringify(config)).not.toContain("11434");
    expect(config.vectors.status).toBe("enabled");
    const embedder = embedderFor(config, { EMBEDDING_URL: env.EMBEDDING_URL, EMBEDDING_API_KEY: env.EMBEDDING_API_KEY, fetch: new FakeEmbeddingServer().fetch });
    expect(embedder).toBeInstanceOf(OpenAiCompatibleEmbedder);
    expect(embedder).toMatchObject({ provider: "openai-compatible", model: "nomic-embed-text", dimensions: 768 });
    expect(readModelConfig({ ...env, EMBEDDING_API_KEY: undefined, EMBEDDING_SIMILARITY_FLOOR: "0.75" }, at).embedding)
      .toMatchObject({ key_state: "absent", similarity_floor: 0.75, status: "enabled" });
    const missing = readModelConfig({ EMBEDDING_PROVIDER: "openai-compatible", EMBEDDING_URL: "ftp://x", EMBEDDING_DIMENSIONS: "lots" }, at).embedding;
    expect(missing.status).toBe("partial");
    expect(missing.problems.join("; ")).toMatch(/EMBEDDING_URL is not an http\(s\) URL.*EMBEDDING_MODEL is not set.*EMBEDDING_DIMENSIONS "lots"/);
    // The production Vectorize index holds 384 dimensions: another length cannot fill it.
    expect(readModelConfig({ ...env, VECTOR_INDEX: "vectorize", VECTORIZE: {} }, at).vectors.status).toBe("partial");
  });

  it("over HTTP: drain embeds through the endpoint; an unreachable one is 503 with meta.pending and retryable, queue untouched; compile degrades", async () => {
    const org = await newOrg();
    const o = await appendOk(org.api_key, obs("s", "the walnut cake recipe"));
    await consolidateOk(org.api_key, "s", [{ kind: "fact", statement: "the walnut cake recipe", sources: supports(o) }]);
    const server = new FakeEmbeddingServer(32);
    await inOrg(org.org_id, (org) => {
      const env = { EMBEDDING_PROVIDER: "openai-compatible", EMBEDDING_URL: "http://127.0.0.1:11434/v1/embeddings", EMBEDDING_MODEL: "all-minilm" };
      org.deps = { ...org.deps, models: { config: readModelConfig(env, new Date().toISOString()),
        bindings: { EMBEDDING_URL: env.EMBEDDING_URL, fetch: server.fetch } } };
    });
    server.failing = true;
    const down = await call("POST", "/v1/index/drain", { key: org.api_key, body: {} });
    expectError(down, 503, "UNAVAILABLE");
    expect(down.json.meta).toMatchObject({ pending: 2, retryable: true });
    const degraded = await call("POST", "/v1/context/compile", { key: org.api_key, body: { query: "walnut cake" } });
    expect(degraded.status).toBe(201);
    expect(degraded.json.meta.degraded.vectors).toBe(true);
    server.failing = false;
    const ok = await call("POST", "/v1/index/drain", { key: org.api_key, body: {} });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json.data).toMatchObject({ indexed: 1, remaining: 0, model: "all-minilm", dimensions: 32 });
    const hybrid = await call("POST", "/v1/context/compile", { key: org.api_key, body: { query: "walnut cake" } });
    expect(hybrid.json.meta.degraded.vectors).toBe(false);
    const config = await call("GET", "/v1/models/config", { key: org.api_key });
    expect(config.json.data.embedding).toMatchObject({ provider: "openai-compatible", model: "all-minilm", key_state: "absent" });
  });
});

describe("Workers AI specifics", () => {
  it("calls bge-small with CLS pooling in batches of at most 100 texts", async () => {
    const ai = new FakeAi();
    await new WorkersAiEmbedder(ai).embed(Array.from({ length: 150 }, (_, i) => `text ${i}`));
    expect(ai.calls.map((c) => [c.model, (c.inputs as { text: string[] }).text.length, (c.inputs as { pooling: string }).pooling]))
      .toEqual([["@cf/baai/bge-small-en-v1.5", 100, "cls"], ["@cf/baai/bge-small-en-v1.5", 50, "cls"]]);
  });

  it("an unreachable model raises VectorBackendError", async () => {
    const ai = new FakeAi();
    ai.failing = true;
    await expect(new WorkersAiEmbedder(ai).embed(["x"])).rejects.toBeInstanceOf(VectorBackendError);
  });
});
