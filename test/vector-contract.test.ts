// One contract, every backend: the same suites run against the embedded default and against the
// production backends (Workers AI and Vectorize, through typed fakes of their bindings).
import { describe, expect, it } from "vitest";
import { LocalEmbedder } from "../src/vector/local-embedder";
import { LocalVectorIndex } from "../src/vector/local-index";
import { ACCEPT_ALL, type Embedder, MAX_TOP_K, normalize, VectorBackendError, type VectorIndex } from "../src/vector/types";
import { VectorizeIndexBackend } from "../src/vector/vectorize";
import { WorkersAiEmbedder } from "../src/vector/workers-ai";
import { FakeAi, FakeVectorize } from "./fakes/vector";
import { inOrg, newOrg } from "./helpers";

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
  });
}

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
