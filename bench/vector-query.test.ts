// In-process microbench of the local vector index's query inside an organization's Durable Object
// (workerd): where a hybrid compile's vector query spends its time as the organization grows, and the
// fast path (SIMD scan + exact re-score of the band) against the plain JS reference path, same run.
// Seeds SIZES claims (insertClaim, like bench/inproc-profile.test.ts) whose statements are drawn from
// the local embedder's own vocabulary (Zipf by frequency rank) so the vectors are the embedder's real
// ones, then per size and per query (50 four-word queries, REPS rounds, means in ms):
//   embed       the query's embedding (LocalEmbedder)
//   js scan     every slot's exact score in JS (the reference arithmetic, exported `dot`)
//   select 400  bestSlots-equivalent selection of the best 4k = 400 slots over those scores
//   accept 400  candidateRowsAmong (the compile's accept: the authorization SQL) of the best 400 ids
//   accept 100  the same of the best 100 (what the index asks first since this change)
//   before      js scan + select 400 + accept 400: the query's path before the fast path
//   reference   LocalVectorIndex.queryReference, k = 100, with the real accept (the JS path, kept)
//   fast        LocalVectorIndex.query, k = 100, with the real accept
//   reference 1/10, fast 1/10   the same with an accept that admits one claim in ten of the real
//               accept's (a caller who may read little: fewer than k among the best 400)
// and checks that fast and reference answer identically for every query; then, per size, the recall
// of two data-independent pre-filters against the exact answer (prefilterStudy below; docs/BENCHMARKS.md,
// "Tried and rejected"; prototype arithmetic only, the index has no pre-filter). Run with
//   npx vitest run --config bench/vitest.vector.config.ts        (sizes: __VEC_SIZES, default 1k/50k/200k)
import { expect, it } from "vitest";
import { hashKey } from "../src/auth/credentials";
import { loadCaller } from "../src/domains/identity/store";
import { candidateRowsAmong, readAhead } from "../src/domains/memory/compile";
import { seedClaims } from "./seed-claims";
import type { Db } from "../src/sql/db";
import { GLOVE_TABLE } from "../src/generated/glove-table";
import { LocalEmbedder } from "../src/vector/local-embedder";
import { bestSlots, dot, LocalVectorIndex } from "../src/vector/local-index";
import type { AcceptIds, VectorHit } from "../src/vector/types";
import { inOrg, newOrg, prng } from "../test/helpers";
import { zipfText } from "../scripts/synthetic-text.mjs";
import { STOPWORDS } from "../src/text/stopwords";

const SIZES: number[] = (globalThis as any).__VEC_SIZES ?? [1000, 50000, 200000];
const REPS = 3;
const VOCAB = GLOVE_TABLE.words.split(" ");
const text = zipfText(VOCAB, STOPWORDS);

it("vector query microbench", async () => {
  const org = await newOrg();
  const rand = prng(42),
    qrand = prng(7);
  const queries = Array.from({ length: 50 }, () => Array.from({ length: 4 }, () => text.word(qrand)).join(" "));
  const t0 = Date.parse("2026-11-01T00:00:00.000Z");
  let have = 0;
  const lines: string[] = [];
  for (const size of SIZES) {
    const seedStart = Date.now();
    await inOrg(org.org_id, async (o) => {
      const db: Db = (o as any).db;
      await seedClaims(
        {
          db,
          storage: (o as any).ctx.storage,
          index: new LocalVectorIndex(db, { cacheBytes: 2 ** 30 }),
          author: loadCaller(db, hashKey(org.api_key))!.principalId,
          t0,
          statement: () => text.statement(rand),
        },
        have,
        size,
      );
    });
    have = size;
    const seeded = (Date.now() - seedStart) / 1000;
    const r = await inOrg(org.org_id, async (o) => {
      const db: Db = (o as any).db;
      const caller = loadCaller(db, hashKey(org.api_key))!;
      const accept = (ids: string[]) => candidateRowsAmong(db, caller, {}, ids, readAhead(db, caller, {}));
      const embedder = new LocalEmbedder();
      const index = new LocalVectorIndex(db, { cacheBytes: 2 ** 30 }); // loads the cache from SQLite once (not timed); the bound lifted to time the scan at every size
      const qs = await embedder.embed(queries);
      await index.query(qs[0], 100, { ways: [{}], accept: accept });
      const time: Record<string, number> = {};
      const add = (k: string, ms: number) => {
        time[k] = (time[k] ?? 0) + ms;
      };
      /** `work`'s result, its time (until it settles, when it returns a promise) added under `k`. */
      function timed<T>(k: string, work: () => T): T {
        const t = performance.now();
        const out = work();
        if (out instanceof Promise) return out.finally(() => add(k, performance.now() - t)) as T;
        add(k, performance.now() - t);
        return out;
      }
      const ids = (index as any).cache.ids as string[];
      const rows = (index as any).cache.rows;
      const norms = rows.norms as Float32Array;
      const n = ids.length;
      let same = 0;
      for (let rep = 0; rep < REPS; rep++)
        for (let i = 0; i < queries.length; i++) {
          const [q] = await timed("embed", () => embedder.embed([queries[i]]));
          const scores = timed("js scan", () => {
            const out = new Float32Array(n);
            for (let s = 0; s < n; s++) out[s] = Math.fround(dot(rows.data, s * rows.stride, q.length, q) * norms[s]);
            return out;
          });
          const first = timed("select 400", () =>
            bestSlots(
              n,
              Math.min(n, 400),
              (a, b) => scores[a] > scores[b] || (scores[a] === scores[b] && ids[a] < ids[b]),
            ),
          );
          timed("accept 400", () => accept(first.map((s) => ids[s])));
          timed("accept 100", () => accept(first.slice(0, 100).map((s) => ids[s])));
          const ref = timed("reference", () => index.queryReference(q, 100, accept));
          const fast = await timed("fast", () => index.query(q, 100, { ways: [{}], accept: accept }));
          const few = (ids: string[]) =>
            new Set([...accept(ids)].filter((id) => parseInt(id.slice(-4), 16) % 10 === 0));
          const refFew = timed("reference 1/10", () => index.queryReference(q, 100, few));
          const fastFew = await timed("fast 1/10", () => index.query(q, 100, { ways: [{}], accept: few }));
          if (JSON.stringify(ref) === JSON.stringify(fast) && JSON.stringify(refFew) === JSON.stringify(fastFew))
            same++;
        }
      const runs = REPS * queries.length;
      time["before"] = time["js scan"] + time["select 400"] + time["accept 400"];
      const study = prefilterStudy(index, qs, accept);
      return {
        n,
        same,
        runs,
        study,
        mean: Object.fromEntries(Object.entries(time).map(([k, v]) => [k, +(v / runs).toFixed(2)])),
      };
    });
    const line = `${size} vectors (seeded in ${seeded}s): ${JSON.stringify(r.mean)}; fast = reference for ${r.same}/${r.runs} queries`;
    lines.push(line);
    console.log(line);
    for (const l of r.study) console.log(`  ${size} ${l}`);
    expect(r.same, line).toBe(r.runs); // a timing of a different answer would not be a comparison
  }
}, 3_600_000);

/**
 * Would a data-independent pre-filter make the query's cost flat? For each
 * query that embeds to a non-zero vector (compile asks no other), the exact answer (queryReference,
 * k = 100, the real accept and the 1/10 accept) against the answer of a pre-filter that keeps M
 * candidates, re-scores them exactly and walks them best first through the same accept:
 *   sign     one sign bit per dimension of the int8 row (a pure function of the row, 16 bytes), the
 *            M nearest by Hamming distance to the query's signs, cut by a histogram over 0..100
 *            (every slot at the cut's distance included, so a few more than M);
 *   int4     the row rounded to 4 bits with its own scale (50 bytes), the M best approximate cosines;
 *   int4 bound  how many rows a proven bound keeps: |approximate - exact| <= |int8 row - int4 row| *
 *            invNorm (Cauchy-Schwarz, unit query), rows whose upper bound reaches the 400th lower bound.
 * and the JS cost of the step a pre-filter cannot skip: the exact re-score and sort of M slots.
 * Prototype arithmetic in this file only: nothing here is the index's code.
 */
function prefilterStudy(index: LocalVectorIndex, qs: Float32Array[], accept: AcceptIds): string[] {
  const c = (index as any).cache;
  const ids = c.ids as string[],
    data = c.rows.data as Int8Array,
    norms = c.rows.norms as Float32Array,
    stride = c.rows.stride as number;
  const n = ids.length,
    dims = c.dims as number;
  const Ms = [1000, 2000, 4000, 8000, 16000, 32000].filter((m) => m < n);
  const sign = new Uint32Array(n * 4),
    int4 = new Int8Array(n * dims),
    unit4 = new Float32Array(n),
    resid = new Float32Array(n);
  for (let s = 0; s < n; s++) {
    let max = 0;
    for (let i = 0; i < dims; i++) {
      const x = data[s * stride + i];
      if (x > 0) sign[s * 4 + (i >> 5)] |= 1 << (i & 31);
      max = Math.max(max, Math.abs(x));
    }
    const u = max / 7 || 1;
    let r2 = 0;
    for (let i = 0; i < dims; i++) {
      const x = data[s * stride + i],
        v = Math.max(-8, Math.min(7, Math.round(x / u)));
      int4[s * dims + i] = v;
      r2 += (x - v * u) ** 2;
    }
    unit4[s] = u;
    resid[s] = Math.sqrt(r2);
  }
  const pop = (x: number) => {
    x -= (x >>> 1) & 0x55555555;
    x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
    return (((x + (x >>> 4)) & 0xf0f0f0f) * 0x1010101) >>> 24;
  };
  const few: AcceptIds = (list) => new Set([...accept(list)].filter((id) => parseInt(id.slice(-4), 16) % 10 === 0));
  const score = new Float32Array(n);
  /** The index's walk over `cand` only: exact scores, best first (score, then id), admitted in batches. */
  const walk = (q: Float32Array, cand: number[], acc: AcceptIds): VectorHit[] => {
    for (const s of cand) score[s] = Math.fround(dot(data, s * stride, dims, q) * norms[s]);
    cand.sort((a, b) => score[b] - score[a] || (ids[a] < ids[b] ? -1 : ids[a] > ids[b] ? 1 : 0));
    const hits: VectorHit[] = [];
    for (let i = 0; i < cand.length && hits.length < 100; i += i === 0 ? 100 : 1000) {
      const batch = cand.slice(i, i === 0 ? 100 : i + 1000),
        ok = acc(batch.map((s) => ids[s]));
      for (const s of batch) if (ok.has(ids[s]) && hits.length < 100) hits.push({ id: ids[s], score: score[s] });
    }
    return hits;
  };
  const recall = (got: VectorHit[], ref: VectorHit[], k: number) => {
    const want = new Set(ref.slice(0, k).map((h) => h.id));
    return want.size ? got.slice(0, k).filter((h) => want.has(h.id)).length / want.size : 1;
  };
  type Acc = { r10: number; r100: number; few100: number; cand: number };
  const sums: Record<string, Acc> = {};
  const add = (key: string, a: Acc) => {
    const t = (sums[key] ??= { r10: 0, r100: 0, few100: 0, cand: 0 });
    t.r10 += a.r10;
    t.r100 += a.r100;
    t.few100 += a.few100;
    t.cand += a.cand;
  };
  const rescoreMs: Record<number, number> = {};
  let used = 0,
    bandRows = 0,
    hammingMs = 0;
  for (const q of qs) {
    if (!q.some((x) => x !== 0)) continue;
    used++;
    const ref = index.queryReference(q, 100, accept),
      refFew = index.queryReference(q, 100, few);
    const qsign = new Uint32Array(4);
    for (let i = 0; i < dims; i++) if (q[i] > 0) qsign[i >> 5] |= 1 << (i & 31);
    const t = performance.now();
    const dist = new Uint8Array(n),
      hist = new Uint32Array(dims + 1);
    for (let s = 0; s < n; s++) {
      const d =
        pop(sign[s * 4] ^ qsign[0]) +
        pop(sign[s * 4 + 1] ^ qsign[1]) +
        pop(sign[s * 4 + 2] ^ qsign[2]) +
        pop(sign[s * 4 + 3] ^ qsign[3]);
      dist[s] = d;
      hist[d]++;
    }
    hammingMs += performance.now() - t;
    const approx = new Float64Array(n),
      lower = new Float64Array(n);
    for (let s = 0; s < n; s++) {
      approx[s] = dot(int4, s * dims, dims, q) * unit4[s] * norms[s];
      lower[s] = approx[s] - resid[s] * norms[s];
    }
    const cut400 = Float64Array.from(lower).sort()[n - Math.min(n, 400)];
    for (let s = 0; s < n; s++) if (approx[s] + resid[s] * norms[s] >= cut400) bandRows++;
    const order = Array.from({ length: n }, (_, s) => s).sort((a, b) => approx[b] - approx[a]);
    for (const M of Ms) {
      let cut = 0,
        below = 0;
      while (below + hist[cut] < M) below += hist[cut++];
      const bySign: number[] = [];
      for (let s = 0; s < n; s++) if (dist[s] <= cut) bySign.push(s);
      const t0 = performance.now();
      const got = walk(q, bySign.slice(), accept);
      rescoreMs[M] = (rescoreMs[M] ?? 0) + performance.now() - t0;
      add(`sign M=${M}`, {
        r10: recall(got, ref, 10),
        r100: recall(got, ref, 100),
        few100: recall(walk(q, bySign.slice(), few), refFew, 100),
        cand: bySign.length,
      });
      const byInt4 = order.slice(0, M);
      const got4 = walk(q, byInt4.slice(), accept);
      add(`int4 M=${M}`, {
        r10: recall(got4, ref, 10),
        r100: recall(got4, ref, 100),
        few100: recall(walk(q, byInt4.slice(), few), refFew, 100),
        cand: M,
      });
    }
  }
  const f = (x: number) => (x / used).toFixed(4);
  return [
    `pre-filter study over ${used} non-zero queries; int4 proven bound keeps ${(bandRows / used).toFixed(0)} of ${n} rows for the best 400; JS Hamming pass ${(hammingMs / used).toFixed(2)} ms`,
    ...Object.entries(sums).map(
      ([k, a]) =>
        `${k}: recall@10 ${f(a.r10)} recall@100 ${f(a.r100)} recall@100 (1/10 accept) ${f(a.few100)} candidates ${(a.cand / used).toFixed(0)}` +
        (k.startsWith("sign")
          ? `, exact re-score + sort + accept walk ${(rescoreMs[+k.slice(7)] / used).toFixed(2)} ms`
          : ""),
    ),
  ];
}
