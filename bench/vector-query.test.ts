// In-process microbench of the local vector index's query inside an organization's Durable Object
// (workerd): where a hybrid compile's vector query spends its time as the organization grows, and the
// fast path (SIMD scan + exact re-score of the band) against the plain JS reference path, same run.
// Seeds SIZES claims (insertClaim, like bench/inproc-profile.test.ts) whose statements are drawn from
// the local embedder's own vocabulary (Zipf by frequency rank) so the vectors are the embedder's real
// ones, then per size and per query (50 four-word queries, REPS rounds, means in ms):
//   embed       the query's embedding (LocalEmbedder)
//   js scan     every slot's exact score in JS (the reference arithmetic, exported `dot`)
//   select 400  bestSlots-equivalent selection of the best 4k = 400 slots over those scores
//   accept 400  candidateIdsAmong (the compile's accept: the authorization SQL) of the best 400 ids
//   accept 100  the same of the best 100 (what the index asks first since this change)
//   before      js scan + select 400 + accept 400: the query's path before the fast path
//   reference   LocalVectorIndex.queryReference, k = 100, with the real accept (the JS path, kept)
//   fast        LocalVectorIndex.query, k = 100, with the real accept
//   reference 1/10, fast 1/10   the same with an accept that admits one claim in ten of the real
//               accept's (a caller who may read little: fewer than k among the best 400)
// and checks that fast and reference answer identically for every query. Run with
//   npx vitest run --config bench/vitest.vector.config.ts        (sizes: __VEC_SIZES, default 1k/50k/200k)
import { expect, it } from "vitest";
import { hashKey } from "../src/auth/credentials";
import { loadCaller } from "../src/domains/identity/store";
import { candidateIdsAmong, insertClaim } from "../src/domains/memory/records";
import type { Db } from "../src/org/db";
import { GLOVE_TABLE } from "../src/vector/glove-table";
import { embedLocally, LocalEmbedder } from "../src/vector/local-embedder";
import { bestSlots, dot, LocalVectorIndex } from "../src/vector/local-index";
import { inOrg, newOrg, prng } from "../test/helpers";

const SIZES: number[] = (globalThis as any).__VEC_SIZES ?? [1000, 50000, 200000];
const REPS = 3;
const VOCAB = GLOVE_TABLE.words.split(" ");
const CDF = (() => { const w = VOCAB.map((_, r) => 1 / Math.pow(r + 1, 1.07)); const t = w.reduce((a, b) => a + b, 0); let acc = 0; return w.map((x) => (acc += x / t)); })();
function zipfWord(rand: () => number) { const u = rand(); let lo = 0, hi = CDF.length - 1; while (lo < hi) { const mid = (lo + hi) >> 1; if (CDF[mid] < u) lo = mid + 1; else hi = mid; } return VOCAB[lo]; }
const statement = (rand: () => number) => Array.from({ length: 10 + Math.floor(rand() * 21) }, () => zipfWord(rand)).join(" ");


it("vector query microbench", async () => {
  const org = await newOrg();
  const rand = prng(42), qrand = prng(7);
  const queries = Array.from({ length: 50 }, () => Array.from({ length: 4 }, () => zipfWord(qrand)).join(" "));
  const t0 = Date.parse("2026-11-01T00:00:00.000Z");
  let have = 0;
  const lines: string[] = [];
  for (const size of SIZES) {
    const seedStart = Date.now();
    await inOrg(org.org_id, async (o) => {
      const db: Db = (o as any).db;
      const storage: DurableObjectStorage = (o as any).ctx.storage;
      const author = loadCaller(db, hashKey(org.api_key))!.principalId;
      const index = new LocalVectorIndex(db);
      for (let from = have; from < size; from += 1000) {
        const vecs: { id: string; values: Float32Array }[] = [];
        storage.transactionSync(() => {
          for (let i = from; i < Math.min(size, from + 1000); i++) {
            const b = Math.floor(i / 50);
            const at = new Date(t0 + b * 4).toISOString();
            const s = statement(rand);
            const claim_id = `clm_${i.toString(16).padStart(32, "0")}`;
            insertClaim(db, { claim_id, subject_id: `subject-${b % 20}`, project_id: null, kind: "fact",
              statement: s, status: "active", visibility: "team", trust: "medium", version: 1, valid_from: at, valid_to: null, superseded_by: null,
              disputes: "[]", author_id: author, created_at: at, updated_at: at }, []);
            vecs.push({ id: claim_id, values: embedLocally(s) });
          }
        });
        await index.upsert(vecs);
      }
    });
    have = size;
    const seeded = (Date.now() - seedStart) / 1000;
    const r = await inOrg(org.org_id, async (o) => {
      const db: Db = (o as any).db;
      const caller = loadCaller(db, hashKey(org.api_key))!;
      const accept = (ids: string[]) => candidateIdsAmong(db, caller, undefined, ids);
      const embedder = new LocalEmbedder();
      const index = new LocalVectorIndex(db); // loads the cache from SQLite once (not timed)
      const qs = await embedder.embed(queries);
      await index.query(qs[0], 100, accept);
      const time: Record<string, number> = {};
      const add = (k: string, ms: number) => { time[k] = (time[k] ?? 0) + ms; };
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
      for (let rep = 0; rep < REPS; rep++) for (let i = 0; i < queries.length; i++) {
        const [q] = await timed("embed", () => embedder.embed([queries[i]]));
        const scores = timed("js scan", () => {
          const out = new Float32Array(n);
          for (let s = 0; s < n; s++) out[s] = Math.fround(dot(rows.data, s * rows.stride, q.length, q) * norms[s]);
          return out;
        });
        const first = timed("select 400", () => bestSlots(n, Math.min(n, 400), (a, b) => scores[a] > scores[b] || (scores[a] === scores[b] && ids[a] < ids[b])));
        timed("accept 400", () => accept(first.map((s) => ids[s])));
        timed("accept 100", () => accept(first.slice(0, 100).map((s) => ids[s])));
        const ref = timed("reference", () => index.queryReference(q, 100, accept));
        const fast = await timed("fast", () => index.query(q, 100, accept));
        const few = (ids: string[]) => new Set([...accept(ids)].filter((id) => parseInt(id.slice(-4), 16) % 10 === 0));
        const refFew = timed("reference 1/10", () => index.queryReference(q, 100, few));
        const fastFew = await timed("fast 1/10", () => index.query(q, 100, few));
        if (JSON.stringify(ref) === JSON.stringify(fast) && JSON.stringify(refFew) === JSON.stringify(fastFew)) same++;
      }
      const runs = REPS * queries.length;
      time["before"] = time["js scan"] + time["select 400"] + time["accept 400"];
      return { n, same, runs, mean: Object.fromEntries(Object.entries(time).map(([k, v]) => [k, +(v / runs).toFixed(2)])) };
    });
    const line = `${size} vectors (seeded in ${seeded}s): ${JSON.stringify(r.mean)}; fast = reference for ${r.same}/${r.runs} queries`;
    lines.push(line);
    console.log(line);
    expect(r.same, line).toBe(r.runs); // a timing of a different answer would not be a comparison
  }
}, 3_600_000);
