// The local index's memory is bounded: its in-memory copy never holds more than `cacheBytes`, the
// table's size is known without counting it, and above the bound the index answers no query (compile
// then ranks without vectors) until the organization is back under it.
import { describe, expect, it } from "vitest";
import { sha256Hex } from "../src/auth/credentials";
import { loadCaller } from "../src/domains/identity/store";
import { vectorHits } from "../src/domains/memory/vector-candidates";
import { readModelConfig } from "../src/vector/config";
import { bytesPerVector, LOCAL_INDEX_CACHE_BYTES, LocalVectorIndex } from "../src/vector/local-index";
import { ASK_ALL, IndexAboveBound, normalize, type VectorItem } from "../src/vector/types";
import { migrate } from "../src/org/migrate";
import { ORG_MIGRATIONS } from "../src/org/migrations";
import { stemMemo, stemsOf } from "../src/domains/memory/fts";
import { inOrg, newOrg, prng } from "./helpers";

const DIMS = 100;
const rand = prng(11);
const vec = () => normalize(Float32Array.from({ length: DIMS }, () => rand() * 2 - 1));
const items = (from: number, n: number): VectorItem[] =>
  Array.from({ length: n }, (_, i) => ({
    id: `claim_${String(from + i).padStart(4, "0")}`,
    values: vec(),
    metadata: {},
  }));

describe("local index bound", () => {
  it("the default bound: 32 MiB, about 140,000 vectors of 100 dimensions and 65,536 of 384", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, (o) => {
      const index = new LocalVectorIndex(o.db);
      expect(LOCAL_INDEX_CACHE_BYTES).toBe(32 * 2 ** 20);
      expect(index.bound(100)).toBe(Math.floor(LOCAL_INDEX_CACHE_BYTES / bytesPerVector(100)));
      expect([index.bound(100), index.bound(384)]).toEqual([139810, 65536]);
    });
  });

  it("the table's size is kept by triggers through inserts, replacements, deletes and changes of dimensions", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, async (o) => {
      const index = new LocalVectorIndex(o.db);
      const counts = () =>
        Object.fromEntries(
          o.db
            .all<{ dimensions: number; vectors: number }>(
              "SELECT dimensions, vectors FROM local_vector_counts WHERE vectors > 0",
            )
            .map((r) => [r.dimensions, r.vectors]),
        );
      const actual = () =>
        Object.fromEntries(
          o.db
            .all<{ dimensions: number; n: number }>(
              "SELECT dimensions, count(*) AS n FROM local_vectors GROUP BY dimensions",
            )
            .map((r) => [r.dimensions, r.n]),
        );
      await index.upsert(items(0, 7));
      await index.upsert(items(3, 2)); // replacements
      expect(counts()).toEqual({ 100: 7 });
      await index.remove(["claim_0000", "claim_0001", "claim_9999"]);
      await index.upsert([{ id: "claim_0002", values: normalize(new Float32Array(8).fill(1)), metadata: {} }]); // another model's dimensions
      expect(counts()).toEqual({ 8: 1, 100: 4 });
      expect(counts()).toEqual(actual());
      expect(index.vectors(100)).toBe(4);
    });
  });

  it("above the bound: no copy is held and queries answer IndexAboveBound; back under it, the exact answer again", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, async (o) => {
      const cacheBytes = 5 * bytesPerVector(DIMS);
      const index = new LocalVectorIndex(o.db, { cacheBytes });
      expect(index.bound(DIMS)).toBe(5);
      const q = vec();
      await index.upsert(items(0, 5));
      const within = await index.query(q, 10, ASK_ALL);
      expect(within.length).toBe(5);
      expect(index.heldBytes()).toBeGreaterThan(0);
      expect(index.heldBytes()).toBeLessThanOrEqual(cacheBytes);
      // The sixth vector: the copy goes (its memory with it) and queries are refused.
      await index.upsert(items(5, 1));
      expect(index.heldBytes()).toBe(0);
      expect(index.answers(DIMS)).toBe(false);
      const refused = await index.query(q, 10, ASK_ALL).catch((e) => e);
      expect(refused).toBeInstanceOf(IndexAboveBound);
      expect(refused).toMatchObject({ vectors: 6, bound: 5 });
      // A fresh object (a restart) finds the same without loading anything.
      const fresh = new LocalVectorIndex(o.db, { cacheBytes });
      await expect(fresh.query(q, 10, ASK_ALL)).rejects.toBeInstanceOf(IndexAboveBound);
      expect(fresh.stats).toMatchObject({ queries: 1, loads: 0, aboveBound: 1, rowsScanned: 0 });
      // Back under the bound: the same answer as a plain reading of the table.
      await index.remove(["claim_0005"]);
      expect(await index.query(q, 10, ASK_ALL)).toEqual(within);
      expect(index.stats).toMatchObject({ queries: 3, loads: 2, cacheHits: 0, aboveBound: 1, rowsScanned: 10 });
      await index.query(q, 10, ASK_ALL);
      expect(index.stats).toMatchObject({ queries: 4, cacheHits: 1, rowsScanned: 15 });
    });
  });

  it("the copy never grows past the bound, however it was loaded", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, async (o) => {
      const cacheBytes = 1500 * bytesPerVector(DIMS);
      const index = new LocalVectorIndex(o.db, { cacheBytes });
      await index.upsert(items(0, 1000));
      await index.query(vec(), 10, ASK_ALL); // loaded with room to grow
      for (let from = 1000; from < 1500; from += 100) {
        await index.upsert(items(from, 100));
        expect(index.heldBytes()).toBeLessThanOrEqual(cacheBytes);
      }
      expect((await index.query(vec(), 10, ASK_ALL)).length).toBe(10);
      await index.upsert(items(1500, 1));
      expect(index.heldBytes()).toBe(0);
    });
  });

  it("compile's vector lookup above the bound ranks without vectors (degraded), it does not fail", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, async (o) => {
      const caller = loadCaller(o.db, sha256Hex(org.api_key))!;
      const embedder = { provider: "local" as const, model: "fake", dimensions: DIMS, embed: async () => [vec()] };
      const index = new LocalVectorIndex(o.db, { cacheBytes: 2 * bytesPerVector(DIMS) });
      const rt = { config: readModelConfig({}, new Date().toISOString()), extractor: null, embedder, index };
      await index.upsert(items(0, 2));
      expect(await vectorHits(rt, o.db, caller, { query: "anything" })).toEqual({
        similarities: new Map(),
        ahead: expect.anything(),
      });
      await index.upsert(items(2, 1));
      expect(await vectorHits(rt, o.db, caller, { query: "anything" })).toBeNull();
    });
  });
});

describe("the stem memo (the other cache ranking keeps in memory)", () => {
  it("counts hits and misses, and is dropped whole at its bound of 50,000 tokens", () => {
    const word = (i: number) => `zq${i.toString(36)}x`;
    const { hits, misses } = stemMemo;
    stemsOf("orchardist orchardist");
    expect(stemMemo.hits - hits).toBeGreaterThanOrEqual(1);
    expect(stemMemo.misses - misses).toBeLessThanOrEqual(1);
    expect(stemMemo.bound).toBe(50_000);
    const clears = stemMemo.clears;
    for (let i = 0; i <= stemMemo.bound; i += 500)
      stemsOf(Array.from({ length: 500 }, (_, j) => word(i + j)).join(" "));
    expect(stemMemo.clears).toBeGreaterThan(clears);
  });
});

describe("migration 0036_vector_counts_and_metadata", () => {
  it("counts the vectors already held, and queues every indexed record once more (for its metadata), due now", async () => {
    await inOrg(`migration-test-${crypto.randomUUID()}`, async (o) => {
      const storage = (o as unknown as { ctx: DurableObjectState }).ctx.storage;
      await storage.deleteAll();
      const at = ORG_MIGRATIONS.findIndex((m) => m.name === "0036_vector_counts_and_metadata");
      migrate(o.db, storage, ORG_MIGRATIONS.slice(0, at));
      for (const [id, dims] of [
        ["claim_a", 100],
        ["claim_b", 100],
        ["claim_c", 384],
      ] as const) {
        o.db.run(
          "INSERT INTO local_vectors (record_id, dimensions, inv_norm, data) VALUES (?, ?, 1, ?)",
          id,
          dims,
          new Int8Array(dims).buffer,
        );
        o.db.run(
          "INSERT INTO indexed_records (record_id, model, dimensions, indexed_at) VALUES (?, 'm', ?, ?)",
          id,
          dims,
          `2026-01-0${dims === 384 ? 1 : 2}T00:00:00.000Z`,
        );
      }
      migrate(o.db, storage, ORG_MIGRATIONS.slice(0, at + 1));
      expect(o.db.all("SELECT dimensions, vectors FROM local_vector_counts ORDER BY dimensions")).toEqual([
        { dimensions: 100, vectors: 2 },
        { dimensions: 384, vectors: 1 },
      ]);
      expect(
        o.db
          .all<{ payload: string }>("SELECT payload FROM outbox WHERE topic = 'index' ORDER BY seq")
          .map((r) => r.payload),
      ).toEqual(["claim_c", "claim_a", "claim_b"]);
      // Due now, so the next alarm drains them without waiting for a write.
      expect(o.db.first("SELECT value FROM org_meta WHERE name = 'job_due:index_drain'")).toEqual({ value: "0" });
    });
  });
});
