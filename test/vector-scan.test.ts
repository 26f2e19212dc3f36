// The local index's fast path (WebAssembly SIMD scan of the query rounded to int16, then an exact
// re-score of the band around the cut) answers exactly what the plain JS scan answers: the same ids, the same float
// scores bit for bit, ties by id, under any accept. Compared on random data with near-duplicates and
// exact duplicates (ties), at dimensions that are not a multiple of the kernel's 16 lanes.
import { describe, expect, it } from "vitest";
import { dot, LocalVectorIndex, quantize, queryScale } from "../src/vector/local-index";
import { VectorRows } from "../src/vector/scan-kernel";
import {
  ACCEPT_ALL,
  type AcceptIds,
  normalize,
  type VectorAsk,
  type VectorHit,
  type VectorItem,
} from "../src/vector/types";
import { inOrg, newOrg, prng } from "./helpers";

/** An ask by `accept` alone (the local index narrows by the read rule; ways are Vectorize's). */
const asking = (accept: AcceptIds): VectorAsk => ({ ways: [{}], accept });

/** Unit vectors around a few centres (close scores), some exact duplicates (ties), some zero. */
function vectors(rand: () => number, n: number, dims: number): VectorItem[] {
  const centres = Array.from({ length: 5 }, () => Float32Array.from({ length: dims }, () => rand() * 2 - 1));
  const out: VectorItem[] = [];
  for (let i = 0; i < n; i++) {
    const id = `clm_${Math.floor(rand() * 1e9).toString(36)}_${i}`;
    if (i > 0 && rand() < 0.05) {
      out.push({ id, values: Float32Array.from(out[Math.floor(rand() * out.length)].values), metadata: {} });
      continue;
    }
    if (rand() < 0.01) {
      out.push({ id, values: new Float32Array(dims), metadata: {} });
      continue;
    }
    const c = centres[Math.floor(rand() * centres.length)];
    const spread = rand() < 0.5 ? 0.05 : 1;
    out.push({ id, values: normalize(Float32Array.from(c, (x) => x + spread * (rand() * 2 - 1))), metadata: {} });
  }
  return out;
}

/** The definition, computed plainly: every stored vector's score, all sorted, the admitted top k. */
function plainScan(stored: Map<string, Float32Array>, q: Float32Array, k: number, accept: AcceptIds): VectorHit[] {
  const all = [...stored].map(([id, values]) => {
    const v = quantize(values);
    return { id, score: Math.fround(dot(v.data, 0, values.length, q) * Math.fround(v.invNorm)) };
  });
  all.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : 1));
  const ok = accept(all.map((h) => h.id));
  return all.filter((h) => ok.has(h.id)).slice(0, Math.min(100, k));
}

const refusing =
  (keepOneIn: number): AcceptIds =>
  (ids) =>
    new Set(
      ids.filter((id) => {
        let h = 0;
        for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 16777619);
        return (h >>> 0) % keepOneIn === 0;
      }),
    );

describe("local index scan kernel", () => {
  it("runs in workerd and gives the plain integer dot products", async () => {
    const rand = prng(3);
    for (const dims of [100, 384, 37]) {
      const stride = Math.ceil(dims / 16) * 16;
      const rows = new VectorRows(stride, 64);
      expect(rows.scans).toBe(true);
      const n = 50;
      for (let i = 0; i < n * stride; i++) rows.data[i] = i % stride < dims ? Math.round(rand() * 254 - 127) : 0;
      const scale = queryScale(stride);
      const extreme = new Int16Array(stride),
        random = new Int16Array(stride);
      for (let i = 0; i < dims; i++) {
        extreme[i] = i % 7 === 0 ? scale : -scale; // the extreme sums
        random[i] = Math.round(rand() * 2 * scale - scale);
      }
      for (let s = 0; s < n; s++) rows.norms[s] = rand();
      const plain = (q: Int16Array) =>
        Array.from({ length: n }, (_, s) => {
          let a = 0;
          for (let i = 0; i < dims; i++) a += rows.data[s * stride + i] * q[i];
          return a;
        });
      const H = plain(extreme),
        R = plain(random);
      const norms = rows.norms.slice(0, n);
      rows.grow(500); // rows and norms survive the memory's growth
      expect(rows.norms.slice(0, n)).toEqual(norms);
      const unit = rand() * 1e-4;
      expect([...rows.scan(random, unit, n)]).toEqual(R.map((r, s) => r * unit * norms[s]));
      rows.norms.fill(1, 0, n);
      expect([...rows.scan(extreme, 1, n)]).toEqual(H);
      expect([...rows.scan(random, 1, n)]).toEqual(R);
    }
  });

  for (const dims of [100, 384, 37]) {
    it(`fast path = JS reference = plain scan, ${dims} dimensions, several sizes and accepts`, async () => {
      const org = await newOrg();
      await inOrg(org.org_id, async (o) => {
        const rand = prng(dims);
        const index = new LocalVectorIndex(o.db);
        const stored = new Map<string, Float32Array>();
        expect(await index.query(normalize(new Float32Array(dims).fill(1)), 10, asking(ACCEPT_ALL))).toEqual([]); // loads the (empty) cache
        for (const size of [1, 40, 700, 3000]) {
          const add = vectors(rand, size - stored.size, dims);
          await index.upsert(add); // grows the kernel's rows past their first capacity
          for (const v of add) stored.set(v.id, v.values);
          // Replace and remove a few, so slots move.
          const some = [...stored.keys()].filter(() => rand() < 0.02);
          await index.remove(some.slice(0, some.length >> 1));
          for (const id of some.slice(0, some.length >> 1)) stored.delete(id);
          const again = some
            .slice(some.length >> 1)
            .map((id) => ({ id, values: vectors(rand, 1, dims)[0].values, metadata: {} }));
          await index.upsert(again);
          for (const v of again) stored.set(v.id, v.values);

          // The same rows (loaded fresh: `index` is their writer) with the query rounded to 1 or 7
          // levels a side: a wide band to re-score, still the same answer.
          const coarse = [
            new LocalVectorIndex(o.db, { maxQueryScale: 1 }),
            new LocalVectorIndex(o.db, { maxQueryScale: 7 }),
          ];
          const stores = [...stored.values()];
          const queries = [
            stores[Math.floor(rand() * stores.length)], // an exact match, and its duplicates tie
            normalize(Float32Array.from(stores[0], (x) => x + 0.01 * rand())),
            normalize(Float32Array.from({ length: dims }, () => rand() * 2 - 1)),
            normalize(Float32Array.from({ length: dims }, (_, i) => (i === 3 ? 1 : 1e-9 * rand()))), // one large component
          ];
          for (const q of queries) {
            for (const [k, accept] of [
              [100, ACCEPT_ALL],
              [10, ACCEPT_ALL],
              [1, ACCEPT_ALL],
              [100, refusing(10)],
              [100, refusing(500)],
              [5, () => new Set<string>()],
            ] as const) {
              const fast = await index.query(q, k, asking(accept));
              expect(fast).toEqual(index.queryReference(q, k, accept));
              expect(fast).toEqual(plainScan(stored, q, k, accept));
              for (const other of coarse) expect(await other.query(q, k, asking(accept))).toEqual(fast);
            }
          }
        }
        // A fresh index loads the same rows from SQLite and answers the same.
        const q = normalize(Float32Array.from({ length: dims }, () => rand() * 2 - 1));
        expect(await new LocalVectorIndex(o.db).query(q, 100, asking(refusing(3)))).toEqual(
          await index.query(q, 100, asking(refusing(3))),
        );
        expect(await new LocalVectorIndex(o.db, { kernel: false }).query(q, 100, asking(refusing(3)))).toEqual(
          plainScan(stored, q, 100, refusing(3)),
        );
      });
    });
  }

  it("keeps float32 ties at the cut in id order (real scores a few 1e-9 apart round to one float32 score)", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, async (o) => {
      const dims = 64;
      const index = new LocalVectorIndex(o.db);
      const items: VectorItem[] = [];
      const e = (i: number, x = 127) => {
        const v = new Float32Array(dims);
        v[0] = 127;
        if (i) v[i] = x;
        return v;
      };
      for (let i = 0; i < 390; i++) items.push({ id: `a_${String(i).padStart(4, "0")}`, values: e(0), metadata: {} });
      // Equal norms; score = (127 q0 + q_i) / |v|: distinct real scores, several per float32 value, the
      // smaller id holding the lower real score, right at the 400th place.
      for (let i = 1; i <= 40; i++)
        items.push({ id: `g_${String(i).padStart(4, "0")}`, values: e(i, 1), metadata: {} });
      for (let i = 0; i < 80; i++) {
        const v = new Float32Array(dims);
        v[63] = 127;
        items.push({ id: `z_${i}`, values: v, metadata: {} });
      }
      await index.upsert(items);
      const q = new Float32Array(dims);
      q[0] = 1;
      for (let i = 1; i <= 40; i++) q[i] = i * 6.35e-7;
      const notA: AcceptIds = (ids) => new Set(ids.filter((id) => !id.startsWith("a_")));
      for (const [k, accept] of [
        [100, notA],
        [100, ACCEPT_ALL],
        [10, notA],
      ] as const) {
        const ref = index.queryReference(q, k, accept);
        expect(new Set(ref.map((h) => h.score)).size).toBeLessThan(ref.length); // ties exist
        expect(await index.query(q, k, asking(accept))).toEqual(ref);
      }
    });
  });

  it("a caller who may read almost nothing walks to the end and gets the same answer", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, async (o) => {
      const rand = prng(5);
      const index = new LocalVectorIndex(o.db);
      const stored = new Map<string, Float32Array>();
      const add = Array.from({ length: 7000 }, (_, i) => ({
        id: `c_${i}`,
        values: normalize(Float32Array.from({ length: 100 }, () => rand() * 2 - 1)),
        metadata: {},
      }));
      for (const v of add) stored.set(v.id, v.values);
      await index.upsert(add);
      const q = normalize(Float32Array.from({ length: 100 }, () => rand() * 2 - 1));
      for (const accept of [
        () => new Set<string>(),
        refusing(2000),
        (ids: string[]) => new Set(ids.filter((id) => id === "c_17")),
      ] as AcceptIds[]) {
        const seen: number[] = [];
        const counting: AcceptIds = (ids) => {
          seen.push(...ids.map((id) => Number(id.slice(2))));
          return accept(ids);
        };
        const fast = await index.query(q, 100, asking(counting));
        expect(fast).toEqual(plainScan(stored, q, 100, accept));
        // Every slot offered at most once, so the walk never goes back over what it offered.
        expect(new Set(seen).size).toBe(seen.length);
      }
    });
  });

  it("a failed growth leaves the rows as they were", () => {
    const rows = new VectorRows(112, 1024);
    rows.data[5] = 7;
    rows.norms[3] = 0.5;
    expect(() => rows.grow(40_000_000)).toThrow();
    expect(rows.capacity).toBe(1024);
    expect(rows.data[5]).toBe(7);
    expect(rows.norms[3]).toBe(0.5);
    const query = new Int16Array(112);
    query[5] = 1;
    expect(rows.scan(query, 1, 4)[0]).toBe(7 * 0); // row 0's norm is 0
    rows.norms[0] = 1;
    expect(rows.scan(query, 1, 4)[0]).toBe(7);
  });
});
