// One contract, every backend: the same cases run against the embedded local index, against the
// production backend on the typed Vectorize fake (answered by Vectorize: an organization above the
// mirror's bound; and by the mirror: a small one), and the embedders against Workers AI's fake and the
// OpenAI-compatible embedder (through a local fake server handed to it as its fetch). The Vectorize
// backend is also fed a recorded query response in the documented shape. Each case says who may read
// what through `ways` (metadata filters, one per way) and `accept` (the read rule over ids, here
// computed from the same metadata), as compile does.
import { describe, expect, it } from "vitest";
import { LocalEmbedder } from "../src/vector/local-embedder";
import { LocalVectorIndex } from "../src/vector/local-index";
import {
  ACCEPT_ALL,
  type Embedder,
  type FilterCondition,
  MAX_TOP_K,
  normalize,
  VectorBackendError,
  type VectorAsk,
  type VectorFilter,
  type VectorIndex,
  type VectorItem,
  type VectorMetadata,
} from "../src/vector/types";
import { VectorizeIndexBackend, type VectorizeBinding } from "../src/vector/vectorize";
import { WorkersAiEmbedder } from "../src/vector/workers-ai";
import { OPENAI_COMPATIBLE_BATCH, OpenAiCompatibleEmbedder } from "../src/vector/openai-compatible";
import { readModelConfig } from "../src/vector/config";
import { embedderFor } from "../src/vector/runtime";
import { FakeAi, FakeEmbeddingServer, FakeVectorize, MAX_NAMESPACES } from "./fakes/vector";
import {
  appendOk,
  call,
  consolidateOk,
  expectError,
  holdBackgroundDrain,
  inOrg,
  newOrg,
  obs,
  supports,
} from "./helpers";

const DIMS = 8;

interface Ctl {
  /** Vectorize applies its queued mutations (asynchronous in production). */
  settle(): void;
  /** The backend (and what it answers from) fails, or recovers. */
  fail(on: boolean): void;
}

interface IndexCase {
  name: string;
  /** Runs `fn` with a fresh index (inside an organization's Durable Object: every backend writes the local table). */
  with(fn: (index: VectorIndex, ctl: Ctl) => Promise<void>): Promise<void>;
}

const breakTable = (db: { run(q: string): void }, on: boolean) =>
  db.run(
    on
      ? "ALTER TABLE local_vectors RENAME TO local_vectors_gone"
      : "ALTER TABLE local_vectors_gone RENAME TO local_vectors",
  );

const indexCases: IndexCase[] = [
  {
    name: "local",
    with: async (fn) => {
      const org = await newOrg();
      // The local index fails only when its storage does: renaming the table makes it.
      await inOrg(org.org_id, (o) =>
        fn(new LocalVectorIndex(o.db), { settle() {}, fail: (on) => breakTable(o.db, on) }),
      );
    },
  },
  {
    name: "vectorize (fake binding), above the mirror's bound: Vectorize answers",
    with: async (fn) => {
      const fake = new FakeVectorize(DIMS);
      const org = await newOrg();
      // A mirror bounded to no vector at all: every query goes to Vectorize, as for a large organization.
      await inOrg(org.org_id, (o) =>
        fn(new VectorizeIndexBackend(fake, "org_a", new LocalVectorIndex(o.db, { cacheBytes: 1 })), {
          settle: () => fake.apply(),
          fail: (on) => {
            fake.failing = on;
          },
        }),
      );
    },
  },
  {
    name: "vectorize (fake binding), within the mirror's bound: the mirror answers",
    with: async (fn) => {
      const fake = new FakeVectorize(DIMS);
      const org = await newOrg();
      await inOrg(org.org_id, (o) =>
        fn(new VectorizeIndexBackend(fake, "org_a", new LocalVectorIndex(o.db)), {
          settle: () => fake.apply(),
          // Down means Vectorize and the mirror the small organization's queries are answered from.
          fail: (on) => {
            fake.failing = on;
            breakTable(o.db, on);
          },
        }),
      );
    },
  },
];

const unit = (...xs: number[]) => {
  const v = new Float32Array(DIMS);
  xs.forEach((x, i) => {
    v[i] = x;
  });
  return normalize(v);
};

const ME = "prn_me",
  OTHER = "prn_other";
const team = (kind = "fact"): VectorMetadata => ({ visibility: "team", author_id: OTHER, kind });
const mine = (kind = "fact"): VectorMetadata => ({ visibility: "private", author_id: ME, kind });
const othersPrivate = (): VectorMetadata => ({ visibility: "private", author_id: OTHER, kind: "fact" });

/** The reading of a filter the cases rely on (bare values and $eq / $in only), independent of the fake's. */
function holds(m: VectorMetadata | undefined, filter: VectorFilter): boolean {
  return (
    !!m &&
    Object.entries(filter).every(([k, c]: [string, FilterCondition]) => {
      if (c !== null && typeof c === "object") {
        if ("$eq" in c) return m[k] === c.$eq;
        if ("$in" in c) return c.$in.includes(m[k]);
        throw new Error("the cases use $eq and $in only");
      }
      return m[k] === c;
    })
  );
}

/** Writes through the index and remembers each vector's metadata, so that asks can be made from it. */
function harness(index: VectorIndex) {
  const meta = new Map<string, VectorMetadata>();
  return {
    put: async (items: VectorItem[]) => {
      for (const it of items) meta.set(it.id, it.metadata);
      await index.upsert(items);
    },
    drop: async (ids: string[]) => {
      for (const id of ids) meta.delete(id);
      await index.remove(ids);
    },
    /** The caller reading through `ways`, its read rule admitting exactly what a way admits (and `also` holds). */
    ask: (ways: VectorFilter[], also: (id: string) => boolean = () => true): VectorAsk => ({
      ways,
      accept: (ids) => new Set(ids.filter((id) => ways.some((w) => holds(meta.get(id), w)) && also(id))),
    }),
  };
}

const TEAM: VectorFilter = { visibility: { $eq: "team" } };
const OWN: VectorFilter = { author_id: { $eq: ME } };
const EVERYTHING: VectorFilter = {};
const item = (id: string, values: Float32Array, metadata: VectorMetadata = team()): VectorItem => ({
  id,
  values,
  metadata,
});
const pad = (i: number) => String(i).padStart(3, "0");

for (const c of indexCases) {
  describe(`VectorIndex contract: ${c.name}`, () => {
    it("finds the nearest vectors first, ids and scores only", async () => {
      await c.with(async (index, ctl) => {
        const h = harness(index);
        await h.put([item("claim_a", unit(1, 0)), item("claim_b", unit(0, 1)), item("claim_c", unit(1, 1))]);
        ctl.settle();
        const hits = await index.query(unit(1, 0.1), 2, h.ask([EVERYTHING]));
        expect(hits.map((x) => x.id)).toEqual(["claim_a", "claim_c"]);
        expect(hits[0].score).toBeGreaterThan(0.9);
        expect(hits[0].score).toBeLessThanOrEqual(1.0001);
        for (const x of hits) expect(Object.keys(x).sort()).toEqual(["id", "score"]);
      });
    });

    it("upsert replaces the vector and its metadata, remove deletes, present reports ids", async () => {
      await c.with(async (index, ctl) => {
        const h = harness(index);
        await h.put([item("claim_a", unit(1, 0)), item("claim_b", unit(0, 1))]);
        ctl.settle();
        await h.put([item("claim_a", unit(0, 1))]);
        ctl.settle();
        expect((await index.query(unit(0, 1), 2, h.ask([TEAM]))).map((x) => Math.round(x.score * 100))).toEqual([
          100, 100,
        ]);
        // Upserted again as another's private record: a reader of team records no longer finds it.
        await h.put([item("claim_a", unit(0, 1), othersPrivate())]);
        ctl.settle();
        expect((await index.query(unit(0, 1), 10, h.ask([TEAM]))).map((x) => x.id)).toEqual(["claim_b"]);
        await h.drop(["claim_b"]);
        ctl.settle();
        expect([...(await index.present(["claim_a", "claim_b", "claim_x"]))]).toEqual(["claim_a"]);
        expect((await index.query(unit(0, 1), 10, h.ask([EVERYTHING]))).map((x) => x.id)).toEqual(["claim_a"]);
      });
    });

    it("never answers more than the query limit", async () => {
      await c.with(async (index, ctl) => {
        const h = harness(index);
        await h.put(Array.from({ length: 120 }, (_, i) => item(`claim_${pad(i)}`, unit(1, i / 100))));
        ctl.settle();
        expect((await index.query(unit(1, 0), 500, h.ask([TEAM]))).length).toBe(MAX_TOP_K);
      });
    });

    it("the top k of what the caller's ways admit, merged across ways, whatever the other vectors score", async () => {
      await c.with(async (index, ctl) => {
        const h = harness(index);
        // 150 private vectors of another principal nearer the query than anything the caller may read
        // (more than a Vectorize page), then team vectors and the caller's own, interleaved by score.
        const others = Array.from({ length: 150 }, (_, i) =>
          item(`claim_o${pad(i)}`, unit(1, i / 1000), othersPrivate()),
        );
        const readable = Array.from({ length: 6 }, (_, i) =>
          item(`claim_r${i}`, unit(1, 0.5 + i / 10), i % 2 ? mine() : team()),
        );
        await h.put([...others, ...readable]);
        ctl.settle();
        const ask = h.ask([TEAM, OWN]);
        const withOthers = await index.query(unit(1, 0), 4, ask);
        expect(withOthers.map((x) => x.id)).toEqual(["claim_r0", "claim_r1", "claim_r2", "claim_r3"]);
        // The same answer, scores included, as when the others' vectors do not exist at all.
        await h.drop(others.map((o) => o.id));
        ctl.settle();
        expect(await index.query(unit(1, 0), 4, ask)).toEqual(withOthers);
      });
    });

    it("a caller's hits are identical with and without another principal's private vectors nearest the query", async () => {
      await c.with(async (index, ctl) => {
        const h = harness(index);
        // 101 readable vectors tied near the cut at k = 100: another principal's vectors nearer the
        // query than all of them must not change which readable ones come back (an over-fetch of the
        // organization-wide top 100 filtered afterwards would answer differently).
        const near = Array.from({ length: 99 }, (_, i) => item(`claim_n${pad(i)}`, unit(1, i / 1000)));
        await h.put([...near, item("claim_x", unit(1, 0.3)), item("claim_y", unit(1, 0.301), mine())]);
        ctl.settle();
        const ask = h.ask([TEAM, OWN]);
        const without = await index.query(unit(1, 0), 100, ask);
        expect(without.length).toBe(100);
        await h.put(Array.from({ length: 30 }, (_, i) => item(`claim_p${pad(i)}`, unit(1, 0), othersPrivate())));
        ctl.settle();
        expect(await index.query(unit(1, 0), 100, ask)).toEqual(without);
      });
    });

    it("hits the read rule refuses (stale, of another kind) leave the answer; the rest keep their order", async () => {
      await c.with(async (index, ctl) => {
        const h = harness(index);
        await h.put(
          Array.from({ length: 6 }, (_, i) => item(`claim_${i}`, unit(1, i / 10), team(i === 2 ? "decision" : "fact"))),
        );
        ctl.settle();
        const stale = new Set(["claim_1"]);
        const facts: VectorFilter = { ...TEAM, kind: { $in: ["fact"] } };
        const hits = await index.query(
          unit(1, 0),
          3,
          h.ask([facts], (id) => !stale.has(id)),
        );
        expect(hits.map((x) => x.id)).toEqual(["claim_0", "claim_3", "claim_4"]);
      });
    });

    it("a failing backend raises VectorBackendError", async () => {
      await c.with(async (index, ctl) => {
        const h = harness(index);
        ctl.fail(true);
        try {
          await expect(h.put([item("claim_a", unit(1))])).rejects.toBeInstanceOf(VectorBackendError);
          await expect(index.query(unit(1), 5, h.ask([EVERYTHING]))).rejects.toBeInstanceOf(VectorBackendError);
        } finally {
          ctl.fail(false);
        }
      });
    });
  });
}

describe("Vectorize specifics", () => {
  it("one query per way, in the organization's namespace, ids and scores only (topK 100, no values, no metadata)", async () => {
    const fake = new FakeVectorize(DIMS);
    const [orgA, orgB] = [await newOrg(), await newOrg()];
    await inOrg(orgA.org_id, async (oa) => {
      const a = new VectorizeIndexBackend(fake, "org_a", new LocalVectorIndex(oa.db, { cacheBytes: 1 }));
      await inOrg(orgB.org_id, (ob) =>
        new VectorizeIndexBackend(fake, "org_b", new LocalVectorIndex(ob.db, { cacheBytes: 1 })).upsert([
          item("claim_b", unit(1)),
        ]),
      );
      await a.upsert([item("claim_a", unit(1)), item("claim_m", unit(1, 0.1), mine())]);
      fake.apply();
      const ask = harness(a).ask([TEAM, OWN, EVERYTHING]);
      const hits = await a.query(unit(1), 500, { ways: ask.ways, accept: ACCEPT_ALL });
      expect(hits.map((x) => x.id)).toEqual(["claim_a", "claim_m"]);
      expect(fake.queries).toEqual([
        { topK: 100, namespace: "org_a", returnValues: false, returnMetadata: "none", filter: TEAM },
        { topK: 100, namespace: "org_a", returnValues: false, returnMetadata: "none", filter: OWN },
        // A way with no condition asks without a filter (Vectorize refuses an empty one).
        { topK: 100, namespace: "org_a", returnValues: false, returnMetadata: "none" },
      ]);
      expect([...(await a.present(["claim_a", "claim_b"]))]).toEqual(["claim_a"]);
    });
  });

  it("a small organization is answered by the mirror without a Vectorize query; past the bound, by Vectorize", async () => {
    const fake = new FakeVectorize(DIMS);
    const org = await newOrg();
    await inOrg(org.org_id, async (o) => {
      // A bound of 3 vectors of 8 dimensions.
      const mirror = new LocalVectorIndex(o.db, { cacheBytes: 3 * (16 + 16 + 112) });
      expect(mirror.bound(DIMS)).toBe(3);
      const index = new VectorizeIndexBackend(fake, "org_a", mirror);
      const h = harness(index);
      await h.put([item("claim_1", unit(1)), item("claim_2", unit(1, 1)), item("claim_3", unit(0, 1))]);
      fake.apply();
      expect((await index.query(unit(1), 2, h.ask([TEAM]))).map((x) => x.id)).toEqual(["claim_1", "claim_2"]);
      expect(fake.queries).toEqual([]);
      await h.put([item("claim_4", unit(1, 0.5))]);
      fake.apply();
      expect((await index.query(unit(1), 2, h.ask([TEAM]))).map((x) => x.id)).toEqual(["claim_1", "claim_4"]);
      expect(fake.queries.length).toBe(1);
      expect(index.stats).toMatchObject({ queries: 2, answeredByMirror: 1, waysAsked: 1 });
    });
  });

  it("upserts carry the namespace and the metadata; they are asynchronous: not present until applied", async () => {
    const fake = new FakeVectorize(DIMS);
    let t = 1_000;
    fake.now = () => t;
    const org = await newOrg();
    await inOrg(org.org_id, async (o) => {
      const index = new VectorizeIndexBackend(fake, "org_a", new LocalVectorIndex(o.db));
      await index.upsert([item("claim_a", unit(1), mine("decision"))]);
      expect((await index.present(["claim_a"])).size).toBe(0);
      expect(await index.appliedUpTo()).toBeLessThan(1_000);
      fake.apply();
      t = 2_000;
      expect((await index.present(["claim_a"])).size).toBe(1);
      expect(await index.appliedUpTo()).toBe(1_000);
      expect(fake.metadataOf("claim_a")).toEqual(mine("decision"));
    });
  });
});

describe("the Vectorize fake refuses what Vectorize refuses", () => {
  const v = [...unit(1)];
  it("topK: at most 100 without values or metadata, 20 with either; at least 1", async () => {
    const fake = new FakeVectorize(DIMS);
    await expect(fake.query(v, { topK: 100 })).resolves.toBeTruthy();
    await expect(fake.query(v, { topK: 101 })).rejects.toThrow(/topK/);
    await expect(fake.query(v, { topK: 20, returnMetadata: "all" })).resolves.toBeTruthy();
    await expect(fake.query(v, { topK: 21, returnMetadata: "all" })).rejects.toThrow(/topK/);
    await expect(fake.query(v, { topK: 21, returnMetadata: "indexed" })).rejects.toThrow(/topK/);
    await expect(fake.query(v, { topK: 21, returnValues: true })).rejects.toThrow(/topK/);
    await expect(fake.query(v, { topK: 0 })).rejects.toThrow(/topK/);
    expect((await fake.query(v)).count).toBe(0); // topK defaults to 5
  });

  it("filters: non-empty, under 2,048 bytes, valid keys, known operators", async () => {
    const fake = new FakeVectorize(DIMS);
    await expect(fake.query(v, { filter: {} })).rejects.toThrow(/non-empty/);
    await expect(
      fake.query(v, { filter: { kind: { $in: Array.from({ length: 300 }, (_, i) => `kind-${i}`) } } }),
    ).rejects.toThrow(/2048/);
    for (const key of ["", "$x", 'a"b', "k".repeat(513)])
      await expect(fake.query(v, { filter: { [key]: "x" } })).rejects.toThrow(/key/);
    await expect(fake.query(v, { filter: { kind: { $regex: "x" } as never } })).rejects.toThrow(/operator/);
  });

  it("operators: the argument types each takes, and only an upper bound combined with a lower one", async () => {
    const fake = new FakeVectorize(DIMS);
    const asks = (condition: unknown) => fake.query(v, { filter: { kind: condition as never } });
    // The documented examples are accepted.
    for (const ok of [
      "x",
      1,
      true,
      null,
      { $eq: null },
      { $ne: "hbo" },
      { $in: ["hbo", "netflix", null] },
      { $nin: [1, true] },
      { $gte: 1734242400, $lt: 1734328800 },
      { $gte: "net", $lt: "neu" },
      { $lte: 3 },
    ])
      await expect(asks(ok)).resolves.toBeTruthy();
    for (const combined of [
      { $eq: "a", $ne: "b" },
      { $in: ["a"], $nin: ["b"] },
      { $lt: 1, $lte: 2 },
      { $gt: 1, $gte: 0 },
      { $eq: 1, $lt: 2 },
      { $gt: 0, $lt: 9, $ne: 3 },
    ])
      await expect(asks(combined), JSON.stringify(combined)).rejects.toThrow(/cannot be combined/);
    for (const [bad, why] of [
      [{ $eq: ["a"] }, /\$eq takes/],
      [{ $ne: { a: 1 } }, /\$ne takes/],
      [{ $in: "a" }, /\$in takes/],
      [{ $nin: [["a"]] }, /\$nin takes/],
      [{ $lt: true }, /\$lt takes a string or number/],
      [{ $gte: null }, /\$gte takes a string or number/],
      [["a"], /a value or an operator object/],
    ] as const)
      await expect(asks(bad), JSON.stringify(bad)).rejects.toThrow(why);
  });

  it("ranges order numbers and strings; null matches a vector without the property; a dotted key names a nested property", async () => {
    const fake = new FakeVectorize(DIMS, { metadataIndexes: false });
    fake.autoApply = true;
    fake.createMetadataIndex("at", "number");
    fake.createMetadataIndex("name", "string");
    fake.createMetadataIndex("pandas.nice", "number");
    await fake.upsert([
      { id: "a", values: v, metadata: { at: 1, name: "netflix", pandas: { nice: 42 } } },
      { id: "b", values: v, metadata: { at: 5, name: "hbo" } },
      { id: "c", values: v, metadata: { at: 9, name: "neu" } },
    ]);
    const ids = async (filter: VectorizeVectorMetadataFilter) =>
      (await fake.query(v, { filter })).matches.map((m) => m.id).sort();
    expect(await ids({ at: { $gte: 1, $lt: 9 } })).toEqual(["a", "b"]);
    expect(await ids({ name: { $gte: "net", $lt: "neu" } })).toEqual(["a"]);
    expect(await ids({ "pandas.nice": 42 })).toEqual(["a"]);
    expect(await ids({ "pandas.nice": { $eq: null } })).toEqual(["b", "c"]);
    expect(await ids({ name: { $in: ["hbo", "neu"] }, at: { $ne: 9 } })).toEqual(["b"]);
  });

  it("upserts: ids and namespaces up to 64 bytes, the index's dimensions, 1,000 per call, 10 KiB of metadata, valid metadata keys", async () => {
    const fake = new FakeVectorize(DIMS);
    await expect(fake.upsert([{ id: "x".repeat(65), values: v }])).rejects.toThrow(/64 bytes/);
    await expect(fake.upsert([{ id: "a", values: v, namespace: "n".repeat(65) }])).rejects.toThrow(/namespace/);
    await expect(fake.upsert([{ id: "a", values: [1, 2] }])).rejects.toThrow(/dimensions/);
    await expect(fake.upsert(Array.from({ length: 1001 }, (_, i) => ({ id: `v${i}`, values: v })))).rejects.toThrow(
      /1000/,
    );
    await expect(fake.upsert([{ id: "a", values: v, metadata: { note: "x".repeat(10_241) } }])).rejects.toThrow(
      /10 KiB/,
    );
    for (const key of ["", "a.b", "$x", 'a"b'])
      await expect(fake.upsert([{ id: "a", values: v, metadata: { [key]: 1 } }])).rejects.toThrow(/metadata key/);
    await expect(fake.upsert([{ id: "a", values: v, metadata: { nested: { "a.b": 1 } } }])).rejects.toThrow(
      /metadata key/,
    );
  });

  it(`at most ${MAX_NAMESPACES.toLocaleString("en")} namespaces per index`, async () => {
    const fake = new FakeVectorize(DIMS);
    fake.autoApply = true;
    for (let i = 0; i < MAX_NAMESPACES; i += 1000)
      await fake.upsert(
        Array.from({ length: 1000 }, (_, j) => ({ id: `v${i + j}`, values: v, namespace: `org_${i + j}` })),
      );
    await expect(fake.upsert([{ id: "another", values: v, namespace: "org_0" }])).resolves.toBeTruthy();
    await expect(fake.upsert([{ id: "one_more", values: v, namespace: "org_new" }])).rejects.toThrow(
      /namespaces per index/,
    );
  });

  it("at most 10 metadata indexes; a filter sees only vectors written after its property's index; strings on 64 bytes", async () => {
    const fake = new FakeVectorize(DIMS, { metadataIndexes: false });
    fake.autoApply = true;
    await fake.upsert([{ id: "early", values: v, metadata: { tag: "a" } }]);
    fake.createMetadataIndex("tag", "string");
    await fake.upsert([{ id: "late", values: v, metadata: { tag: "a" } }]);
    expect((await fake.query(v, { filter: { tag: "a" } })).matches.map((m) => m.id)).toEqual(["late"]);
    // No index on "other": no vector matches a filter on it, whatever the operator.
    expect((await fake.query(v, { filter: { other: { $ne: "z" } } })).matches).toEqual([]);
    const long = "é".repeat(40); // 80 bytes: the index holds the first 32 characters
    await fake.upsert([{ id: "long", values: v, metadata: { tag: long } }]);
    expect(
      (await fake.query(v, { filter: { tag: { $eq: `${"é".repeat(32)}and more` } } })).matches.map((m) => m.id),
    ).toEqual(["long"]);
    expect((await fake.query(v, { filter: { tag: { $nin: ["a"] } } })).matches.map((m) => m.id)).toEqual(["long"]);
    for (let i = 0; i < 9; i++) fake.createMetadataIndex(`p${i}`, "number");
    expect(() => fake.createMetadataIndex("p9", "boolean")).toThrow(/10 metadata indexes/);
    expect(() => fake.createMetadataIndex("tag", "string")).toThrow(/already exists/);
  });
});

describe("Vectorize backend on a recorded query response", () => {
  // The example response of developers.cloudflare.com/vectorize "Query vectors" (cosine), verbatim,
  // and the same with fields a query that asked for them would carry.
  const RECORDED = {
    count: 5,
    matches: [
      { score: 0.999909486, id: "5" },
      { score: 0.789848214, id: "4" },
      { score: 0.720476967, id: "4444" },
      { score: 0.463884663, id: "6" },
      { score: 0.378282232, id: "1" },
    ],
  };
  const replaying = (answers: VectorizeMatches[]): VectorizeBinding & { asked: VectorizeQueryOptions[] } => {
    const asked: VectorizeQueryOptions[] = [];
    const fail = async () => {
      throw new Error("not recorded");
    };
    return {
      asked,
      query: async (_v: unknown, o?: VectorizeQueryOptions) => {
        asked.push(o ?? {});
        return structuredClone(answers[asked.length - 1]);
      },
      upsert: fail,
      deleteByIds: fail,
      getByIds: fail,
      describe: fail,
    } as unknown as VectorizeBinding & { asked: VectorizeQueryOptions[] };
  };

  it("answers the recorded matches' ids and scores, best first, through the read rule", async () => {
    const binding = replaying([RECORDED]);
    const index = new VectorizeIndexBackend(binding, "org_a", null);
    const hits = await index.query(unit(1), 100, {
      ways: [TEAM],
      accept: (ids) => new Set(ids.filter((id) => id !== "4")),
    });
    expect(hits).toEqual([
      { id: "5", score: 0.999909486 },
      { id: "4444", score: 0.720476967 },
      { id: "6", score: 0.463884663 },
      { id: "1", score: 0.378282232 },
    ]);
    expect(binding.asked).toEqual([
      { topK: 100, namespace: "org_a", returnValues: false, returnMetadata: "none", filter: TEAM },
    ]);
  });

  it("merges the ways' recorded answers: each id once, extra fields dropped, ties by id, at most k", async () => {
    const second = {
      count: 3,
      matches: [
        { id: "4", score: 0.789848214, namespace: "org_a", metadata: { visibility: "team" } },
        { id: "7", score: 0.9, values: [0.1, 0.2] },
        { id: "0", score: 0.463884663 },
      ],
    } as VectorizeMatches;
    const index = new VectorizeIndexBackend(replaying([RECORDED, second]), "org_a", null);
    const hits = await index.query(unit(1), 5, { ways: [TEAM, OWN], accept: ACCEPT_ALL });
    expect(hits).toEqual([
      { id: "5", score: 0.999909486 },
      { id: "7", score: 0.9 },
      { id: "4", score: 0.789848214 },
      { id: "4444", score: 0.720476967 },
      { id: "0", score: 0.463884663 },
    ]);
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
      return {
        embedder: new WorkersAiEmbedder(ai),
        fail: (on) => {
          ai.failing = on;
        },
      };
    },
  },
  {
    name: "openai-compatible (local fake server)",
    make: () => {
      const server = new FakeEmbeddingServer();
      const embedder = new OpenAiCompatibleEmbedder({
        url: "http://127.0.0.1:11434/v1/embeddings",
        model: "nomic-embed-text",
        dimensions: null,
        apiKey: null,
        fetch: server.fetch,
      });
      return {
        embedder,
        fail: (on) => {
          server.failing = on;
        },
      };
    },
  },
];

const cos = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i], 0);

for (const c of embedderCases) {
  describe(`Embedder contract: ${c.name}`, () => {
    it("answers one unit vector of the declared dimensions per text, in order, deterministically", async () => {
      const { embedder } = c.make()!;
      const texts = [
        "the marmalade recipe uses seville oranges",
        "quarterly tax filing deadline",
        "the marmalade recipe uses seville oranges",
      ];
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
      const [q, near, far] = await embedder.embed([
        "oranges marmalade",
        "marmalade made from oranges",
        "the tax office deadline",
      ]);
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
  const make = (
    server: FakeEmbeddingServer,
    opts: Partial<ConstructorParameters<typeof OpenAiCompatibleEmbedder>[0]> = {},
  ) =>
    new OpenAiCompatibleEmbedder({
      url: "http://127.0.0.1:11434/v1",
      model: "nomic-embed-text",
      dimensions: null,
      apiKey: null,
      fetch: server.fetch,
      ...opts,
    });

  it("posts the model and texts in batches, to /embeddings under a base URL, with the key as a bearer token only when set", async () => {
    const server = new FakeEmbeddingServer();
    const texts = Array.from({ length: OPENAI_COMPATIBLE_BATCH + 5 }, (_, i) => `text ${i}`);
    const vs = await make(server, { apiKey: "sk-local-secret" }).embed(texts);
    expect(vs).toHaveLength(texts.length);
    expect(
      server.requests.map((r) => [r.url, r.body.model, r.body.input.length, r.body.encoding_format, r.body.dimensions]),
    ).toEqual([
      ["http://127.0.0.1:11434/v1/embeddings", "nomic-embed-text", OPENAI_COMPATIBLE_BATCH, "float", undefined],
      ["http://127.0.0.1:11434/v1/embeddings", "nomic-embed-text", 5, "float", undefined],
    ]);
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
    const env = {
      EMBEDDING_PROVIDER: "openai-compatible",
      EMBEDDING_URL: "http://127.0.0.1:11434/v1",
      EMBEDDING_MODEL: "nomic-embed-text",
      EMBEDDING_DIMENSIONS: "768",
      EMBEDDING_API_KEY: "sk-do-not-show",
    };
    const config = readModelConfig(env, at);
    expect(config.embedding).toMatchObject({
      provider: "openai-compatible",
      model: "nomic-embed-text",
      dimensions: 768,
      pooling: null,
      similarity_floor: null,
      status: "enabled",
      key_state: "present",
      problems: [],
    });
    expect(JSON.stringify(config)).not.toContain("sk-do-not-show");
    expect(JSON.stringify(config)).not.toContain("11434");
    expect(config.vectors.status).toBe("enabled");
    const embedder = embedderFor(config, {
      EMBEDDING_URL: env.EMBEDDING_URL,
      EMBEDDING_API_KEY: env.EMBEDDING_API_KEY,
      fetch: new FakeEmbeddingServer().fetch,
    });
    expect(embedder).toBeInstanceOf(OpenAiCompatibleEmbedder);
    expect(embedder).toMatchObject({ provider: "openai-compatible", model: "nomic-embed-text", dimensions: 768 });
    expect(
      readModelConfig({ ...env, EMBEDDING_API_KEY: undefined, EMBEDDING_SIMILARITY_FLOOR: "0.75" }, at).embedding,
    ).toMatchObject({ key_state: "absent", similarity_floor: 0.75, status: "enabled" });
    const missing = readModelConfig(
      { EMBEDDING_PROVIDER: "openai-compatible", EMBEDDING_URL: "ftp://x", EMBEDDING_DIMENSIONS: "lots" },
      at,
    ).embedding;
    expect(missing.status).toBe("partial");
    expect(missing.problems.join("; ")).toMatch(
      /EMBEDDING_URL is not an http\(s\) URL.*EMBEDDING_MODEL is not set.*EMBEDDING_DIMENSIONS "lots"/,
    );
    // The production Vectorize index holds 384 dimensions: another length cannot fill it.
    expect(readModelConfig({ ...env, VECTOR_INDEX: "vectorize", VECTORIZE: {} }, at).vectors.status).toBe("partial");
  });

  it("over HTTP: drain embeds through the endpoint; an unreachable one is 503 with meta.pending and retryable, queue untouched; compile degrades", async () => {
    holdBackgroundDrain(); // the queue waits for the routes below, not for the background
    const org = await newOrg();
    const o = await appendOk(org.api_key, obs("s", "the walnut cake recipe"));
    await consolidateOk(org.api_key, "s", [
      { kind: "fact", statement: "the walnut cake recipe", sources: supports(o) },
    ]);
    const server = new FakeEmbeddingServer(32);
    await inOrg(org.org_id, (org) => {
      const env = {
        EMBEDDING_PROVIDER: "openai-compatible",
        EMBEDDING_URL: "http://127.0.0.1:11434/v1/embeddings",
        EMBEDDING_MODEL: "all-minilm",
      };
      org.deps = {
        ...org.deps,
        models: {
          config: readModelConfig(env, new Date().toISOString()),
          bindings: { EMBEDDING_URL: env.EMBEDDING_URL, fetch: server.fetch },
        },
      };
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
    expect(config.json.data.embedding).toMatchObject({
      provider: "openai-compatible",
      model: "all-minilm",
      key_state: "absent",
    });
  });
});

describe("Workers AI specifics", () => {
  it("calls bge-small with CLS pooling in batches of at most 100 texts", async () => {
    const ai = new FakeAi();
    await new WorkersAiEmbedder(ai).embed(Array.from({ length: 150 }, (_, i) => `text ${i}`));
    expect(
      ai.calls.map((c) => [
        c.model,
        (c.inputs as { text: string[] }).text.length,
        (c.inputs as { pooling: string }).pooling,
      ]),
    ).toEqual([
      ["@cf/baai/bge-small-en-v1.5", 100, "cls"],
      ["@cf/baai/bge-small-en-v1.5", 50, "cls"],
    ]);
  });

  it("an unreachable model raises VectorBackendError", async () => {
    const ai = new FakeAi();
    ai.failing = true;
    await expect(new WorkersAiEmbedder(ai).embed(["x"])).rejects.toBeInstanceOf(VectorBackendError);
  });
});
