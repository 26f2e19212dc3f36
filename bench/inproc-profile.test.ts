// In-process profile of compile and search as an organization grows, without HTTP, the load
// generator or the dispatch: one organization seeded straight through insertClaim with the scale bench's
// statements (same generator, seed and 50 four-word queries; 50 claims per batch over 20 subjects), then
// at each size: hybrid compile's phases (the vector query over the organization's local index, rankClaims'
// marks, then pack and the whole-row read) in two variants interleaved, every SQL statement's time and
// rows per query and per search, and a hash of the answers (the clock pinned, so
// two versions of the code can be compared for identical packs and pages). Run with
//   npx vitest run --config bench/vitest.profile.config.ts
// (not part of `npm test`; ~3 min for 1k, 50k and 200k claims on this machine, most of it embedding while seeding).
import { inject, it } from "vitest";
import { hashKey } from "../src/auth/credentials";
import { loadCaller } from "../src/domains/identity/store";
import { compilePack, rankClaims, type VectorSimilarities } from "../src/domains/memory/compile";
import { searchMemories, searchSnapshotsJob } from "../src/domains/memory/search";
import { markJobDue } from "../src/org/jobs";
import { candidateRowsAmong, readAhead } from "../src/domains/memory/compile";
import { seedClaims } from "./seed-claims";
import { vectorHits } from "../src/domains/memory/vector-candidates";
import { readModelConfig } from "../src/vector/config";
import { LocalEmbedder } from "../src/vector/local-embedder";
import { localIndexFor } from "../src/vector/local-index";
import type { VectorRuntime } from "../src/vector/runtime";
import { Db, Sql } from "../src/sql/db";
import { clock } from "../src/http/clock";
const pin = () => {
  clock.reset();
  clock.advance(Date.parse("2026-11-20T00:00:00.000Z") - Date.now());
};
import { inOrg, newOrg, prng } from "../test/helpers";
import { zipfText } from "../scripts/synthetic-text.mjs";
import { GLOVE_TABLE } from "../src/generated/glove-table";
import { STOPWORDS } from "../src/text/stopwords";

// PROFILE_SIZES=1000,50000 picks sizes (passed in by the config).
const SIZES: number[] = inject("profileSizes") ?? [1000, 50000, 200000];
const REPS = 3;
/** Searches are cheap: more repetitions for steadier means. */
const SEARCH_REPS = 10;
// The scale bench's data (scripts/bench-lib.mjs): words of the local embedder's own vocabulary, Zipf by
// frequency rank; statements keep stopwords as running text does, queries skip them as an agent's do.
const VOCAB = GLOVE_TABLE.words.split(" ");
const text = zipfText(VOCAB, STOPWORDS);

/** Db whose statements are timed by their first 60 chars. */
function timedDb(db: Db, stats: Map<string, [number, number, number]>): Db {
  return new Proxy(db, {
    get(t, p) {
      const v = Reflect.get(t, p);
      // `run` too: search's snapshot write is a run (rows counted as 1 per call).
      if (p !== "all" && p !== "first" && p !== "run") return typeof v === "function" ? v.bind(t) : v;
      return (q: string | Sql, ...args: unknown[]) => {
        const t0 = performance.now();
        const r = v.call(t, q, ...args);
        const ms = performance.now() - t0;
        const flat = (q instanceof Sql ? q.text : q).replace(/\s+/g, " ");
        const from = flat.indexOf(" FROM ");
        // Statements that read the same columns differ in what they read them from.
        const k = from > 40 ? `${flat.slice(0, 40)} …${flat.slice(from, from + 50)}` : flat.slice(0, 70);
        const s = stats.get(k) ?? [0, 0, 0];
        s[0] += ms;
        s[1]++;
        s[2] += Array.isArray(r) ? r.length : 1;
        stats.set(k, s);
        return r;
      };
    },
  });
}

it("profile", async () => {
  const org = await newOrg();
  const rand = prng(42),
    qrand = prng(7);
  const queries = Array.from({ length: 50 }, () => text.queryWords(qrand));
  const sample: string[] = [];
  let have = 0;
  const out: string[] = [];
  const t0 = Date.parse("2026-11-01T00:00:00.000Z");
  for (const size of SIZES) {
    const seedStart = Date.now();
    await inOrg(org.org_id, async (o) => {
      const db: Db = (o as any).db;
      // Ids with the product's claim prefix: the route's accept takes only those (answers hash their last 6 characters).
      await seedClaims(
        {
          db,
          storage: (o as any).ctx.storage,
          index: localIndexFor(db),
          author: loadCaller(db, hashKey(org.api_key))!.principalId,
          t0,
          statement: () => {
            const s = text.statement(rand);
            if (sample.length < 500 && rand() < 0.05) sample.push(s);
            return s;
          },
        },
        have,
        size,
      );
    });
    have = size;
    const searches = Array.from({ length: 50 }, (_, i) => {
      const w = sample[(i * 7) % sample.length].split(" ").filter((x) => !STOPWORDS.has(x));
      return `${w[i % w.length]} ${w[(i * 3 + 1) % w.length]}`;
    });
    const res = await inOrg(org.org_id, async (o) => {
      const db0: Db = (o as any).db;
      const storage: DurableObjectStorage = (o as any).ctx.storage;
      const caller = loadCaller(db0, hashKey(org.api_key))!;
      const stmts = new Map<string, [number, number, number]>();
      const db = timedDb(db0, stmts);
      // Hybrid compile as the route runs it: the vector query (local embedder, the organization's local
      // index, the route's accept) before the transaction, then rank + pack inside it. Two variants,
      // interleaved query by query (order alternating): "hybrid" is the code as it is; "hybrid, hits
      // read again" is compile's path when a write lands between the two (the hits without their
      // read-ahead: every hit missing from the lexical candidates read again inside the transaction).
      const rt: VectorRuntime = {
        config: readModelConfig({}, new Date().toISOString()),
        embedder: new LocalEmbedder(),
        index: localIndexFor(db0),
        extractor: null,
      };
      const variants: Record<string, () => Promise<VectorSimilarities | null>> = {
        hybrid: () => vectorHits(rt, db, caller, { query: q }),
        "hybrid, hits read again": async () => {
          const [v] = await rt.embedder!.embed([q]);
          const hits = await rt.index!.query(v, 100, {
            ways: [{}],
            accept: (ids) =>
              candidateRowsAmong(
                db,
                caller,
                {},
                ids.filter((id) => id.startsWith("claim_")),
                readAhead(db, caller, {}),
              ),
          });
          return { similarities: new Map(hits.filter((h) => h.score > 0).map((h) => [h.id, h.score])) };
        },
      };
      let q = "";
      // warm
      for (q of queries.slice(0, 10)) {
        rankClaims(db0, caller, { query: q });
        await variants.hybrid();
      }
      stmts.clear();
      const totals: Record<string, Record<string, number>> = {};
      const perQueryOf: Record<string, number[]> = {};
      const itemsOf: Record<string, string[]> = {};
      let rankedCount = 0;
      const names = Object.keys(variants);
      for (let r = 0; r < REPS; r++)
        for (const [qi, query] of queries.entries())
          for (const name of (qi + r) % 2 ? [...names].reverse() : names) {
            q = query;
            const total = (totals[name] ??= {});
            pin();
            let t = performance.now();
            const start = t;
            const mark = (phase: string) => {
              const now = performance.now();
              total[phase] = (total[phase] ?? 0) + now - t;
              t = now;
            };
            const vectors = await variants[name]();
            mark("vector query (embed + kNN)");
            const result = storage.transactionSync(() =>
              compilePack(db, caller, { query: q }, 1000, 50, mark, vectors ?? undefined),
            );
            const packed = result.items;
            if (name === "hybrid") rankedCount += result.ranked.length;
            mark("pack");
            (perQueryOf[name] ??= []).push(performance.now() - start);
            if (r === 0)
              (itemsOf[name] ??= []).push(
                packed.map((p: { claim: { claim_id: string } }) => `${p.claim.claim_id.slice(-6)}`).join(","),
              );
          }
      const n = REPS * queries.length;
      const perQuery = perQueryOf.hybrid;
      const items = itemsOf.hybrid;
      const phases = Object.fromEntries(
        names.flatMap((name) => Object.entries(totals[name]).map(([k, v]) => [`${name}: ${k}`, +(v / n).toFixed(2)])),
      );
      const variantLines = names.map(
        (name) =>
          `${name}: mean ${(perQueryOf[name].reduce((a, b) => a + b, 0) / n).toFixed(2)} p95 ${[...perQueryOf[name]].sort((a, b) => a - b)[Math.floor(n * 0.95)].toFixed(2)} answers-equal-to-hybrid ${itemsOf[name].join("|") === items.join("|")}`,
      );
      // Per query: both variants' statements together (those they share run twice).
      const st = [...stmts].map(
        ([k, [ms, c, rows]]) =>
          `${(ms / n).toFixed(2)} ms/query ${(c / n).toFixed(1)} calls ${(rows / n).toFixed(0)} rows  ${k}`,
      );
      // search, through the timed Db, its phases marked
      const sstm = new Map<string, [number, number, number]>();
      const sdb = timedDb(db0, sstm);
      const sl: number[] = [];
      const sres: string[] = [];
      const stotal: Record<string, number> = {};
      let snapshots = 0;
      // The route's alarm request: the job's due time in org_meta (the storage alarm itself is armed once).
      const scheduleAlarm = (atMs: number) => {
        markJobDue(db0, searchSnapshotsJob.name, atMs);
      };
      for (let r = 0; r < SEARCH_REPS; r++)
        for (const s of searches) {
          pin();
          const a = performance.now();
          let t = a;
          const mark = (phase: string) => {
            const now = performance.now();
            stotal[phase] = (stotal[phase] ?? 0) + now - t;
            t = now;
          };
          const page = searchMemories(sdb, caller, {}, s, 25, undefined, scheduleAlarm, mark);
          sl.push(performance.now() - a);
          if (page.has_more) snapshots++;
          if (r === 0) sres.push(page.page.map((c) => c.claim_id.slice(-6)).join(",") + (page.has_more ? "+" : ""));
        }
      const sn = SEARCH_REPS * searches.length;
      snapshots /= SEARCH_REPS * searches.length;
      const sphases = Object.fromEntries(Object.entries(stotal).map(([k, v]) => [k, +(v / sn).toFixed(3)]));
      const sst = [...sstm].map(
        ([k, [ms, c, rows]]) =>
          `${(ms / sn).toFixed(2)} ms/search ${(c / sn).toFixed(1)} calls ${(rows / sn).toFixed(0)} rows  ${k}`,
      );
      const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / a.length;
      const p95 = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length * 0.95)];
      return {
        phases,
        variantLines,
        st,
        ranked: rankedCount / n,
        compileMean: mean(perQuery),
        compileP95: p95(perQuery),
        searchMean: mean(sl),
        searchP95: p95(sl),
        sst,
        sphases,
        snapshots,
        hash: items.join("|"),
        shash: sres.join("|"),
      };
    });
    out.push(
      `== ${size} (seed ${(Date.now() - seedStart) / 1000}s)\ncompile mean ${res.compileMean.toFixed(2)} p95 ${res.compileP95.toFixed(2)} (${res.ranked.toFixed(0)} candidates ranked); search mean ${res.searchMean.toFixed(2)} p95 ${res.searchP95.toFixed(2)}\n` +
        JSON.stringify(res.phases, null, 1) +
        "\n" +
        res.variantLines.join("\n") +
        "\n" +
        res.st.join("\n") +
        "\n-- search (share writing a snapshot " +
        res.snapshots.toFixed(2) +
        ")\n" +
        Object.entries(res.sphases)
          .map(([k, v]) => `${k}: ${v}`)
          .join("\n") +
        "\n" +
        res.sst.join("\n") +
        `\nanswers ${await sha(res.hash)} search ${await sha(res.shash)}`,
    );
    console.log(out.at(-1));
  }
}, 3_600_000);

async function sha(s: string) {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s));
  return [...new Uint8Array(d)]
    .slice(0, 8)
    .map((b) => b.toString(16).padStart(2, "0"))
    .join("");
}

declare module "vitest" {
  export interface ProvidedContext {
    profileSizes: number[] | undefined;
  }
}
