// In-process profile of compile and search as an organization grows (issue 23), without HTTP, the load
// generator or the dispatch: one organization seeded straight through insertClaim with the scale bench's
// statements (same generator, seed and 50 four-word queries; 50 claims per batch over 20 subjects), then
// at each size: compile's phases (rankClaims' marks, then pack and the whole-row read), every SQL
// statement's time and rows per compile and per search, and a hash of the answers (the clock pinned, so
// two versions of the code can be compared for identical packs and pages). Run with
//   npx vitest run --config bench/vitest.profile.config.ts
// (not part of `npm test`; ~70 s for 1k, 50k and 200k claims on this machine).
import { inject, it } from "vitest";
import { hashKey } from "../src/auth/credentials";
import { loadCaller } from "../src/domains/identity/store";
import * as ranking from "../src/domains/memory/ranking";
const { rankClaims } = ranking;
import { searchMemories, searchSnapshotsJob } from "../src/domains/memory/search";
import { markJobDue } from "../src/org/jobs";
import { beforeTable, searchBefore } from "./search-before";
import { insertClaim } from "../src/domains/memory/records";
import { Db } from "../src/org/db";
import { clock } from "../src/http/clock";
const pin = () => { clock.reset(); clock.advance(Date.parse("2026-11-20T00:00:00.000Z") - Date.now()); };
import { inOrg, newOrg, prng } from "../test/helpers";
import { zipfText } from "../scripts/synthetic-text.mjs";
import { GLOVE_TABLE } from "../src/vector/glove-table";
import { STOPWORDS } from "../src/domains/memory/fts";

// PROFILE_SIZES=1000,50000 picks sizes (passed in by the config).
const SIZES: number[] = inject("profileSizes") ?? [1000, 50000, 200000];
const REPS = 3;
/** Searches are cheap and the old code runs beside them: more repetitions for steadier means. */
const SEARCH_REPS = 10;
// The scale bench's data (scripts/bench-lib.mjs): words of the local embedder's own vocabulary, Zipf by
// frequency rank; statements keep stopwords as running text does, queries skip them as an agent's do.
const VOCAB = GLOVE_TABLE.words.split(" ");
const text = zipfText(VOCAB, STOPWORDS);

/** Db whose statements are timed by their first 60 chars. */
function timedDb(db: Db, stats: Map<string, [number, number, number]>): Db {
  return new Proxy(db, { get(t, p) {
    const v = Reflect.get(t, p);
    // `run` too: search's snapshot write is a run (rows counted as 1 per call).
    if (p !== "all" && p !== "first" && p !== "run") return typeof v === "function" ? v.bind(t) : v;
    return (q: string, ...args: unknown[]) => {
      const t0 = performance.now(); const r = v.call(t, q, ...args); const ms = performance.now() - t0;
      const k = q.replace(/\s+/g, " ").slice(0, 70); const s = stats.get(k) ?? [0, 0, 0];
      s[0] += ms; s[1]++; s[2] += Array.isArray(r) ? r.length : 1; stats.set(k, s); return r;
    };
  } });
}

it("profile", async () => {
  const org = await newOrg();
  const rand = prng(42), qrand = prng(7);
  const queries = Array.from({ length: 50 }, () => text.queryWords(qrand));
  const sample: string[] = [];
  let have = 0;
  const out: string[] = [];
  const t0 = Date.parse("2026-11-01T00:00:00.000Z");
  for (const size of SIZES) {
    const seedStart = Date.now();
    await inOrg(org.org_id, (o) => {
      const db: Db = (o as any).db;
      const storage: DurableObjectStorage = (o as any).ctx.storage;
      const author = loadCaller(db, hashKey(org.api_key))!.principalId;
      for (let from = have; from < size; from += 1000) {
        storage.transactionSync(() => {
          for (let i = from; i < Math.min(size, from + 1000); i++) {
            const b = Math.floor(i / 50);
            const at = new Date(t0 + b * 4).toISOString();
            const s = text.statement(rand);
            if (sample.length < 500 && rand() < 0.05) sample.push(s);
            insertClaim(db, { claim_id: `clm_${i.toString(16).padStart(32, "0")}`, subject_id: `subject-${b % 20}`, project_id: null, kind: "fact",
              statement: s, status: "active", visibility: "team", trust: "medium", version: 1, valid_from: at, valid_to: null, superseded_by: null,
              disputes: "[]", author_id: author, created_at: at, updated_at: at }, []);
          }
        });
      }
    });
    have = size;
    const searches = Array.from({ length: 50 }, (_, i) => { const w = sample[(i * 7) % sample.length].split(" ").filter((x) => !STOPWORDS.has(x)); return `${w[i % w.length]} ${w[(i * 3 + 1) % w.length]}`; });
    const res = await inOrg(org.org_id, (o) => {
      const db0: Db = (o as any).db;
      const caller = loadCaller(db0, hashKey(org.api_key))!;
      const stmts = new Map<string, [number, number, number]>();
      const db = timedDb(db0, stmts);
      // warm
      for (const q of queries.slice(0, 10)) rankClaims(db0, caller, { query: q });
      stmts.clear();
      const total: Record<string, number> = {};
      const perQuery: number[] = [];
      const items: string[] = [];
      let rankedCount = 0;
      for (let r = 0; r < REPS; r++) for (const q of queries) {
        pin(); let t = performance.now(); const start = t;
        const mark = (phase: string) => { const now = performance.now(); total[phase] = (total[phase] ?? 0) + now - t; t = now; };
        const result = (ranking as any).compilePack ? (ranking as any).compilePack(db, caller, { query: q }, 1000, 50, mark) : null;
        const packed = result ? result.items : ranking.pack(rankClaims(db, caller, { query: q }, mark), 1000, 50);
        if (result) rankedCount += result.ranked.length;
        mark("pack");
        perQuery.push(performance.now() - start);
        if (r === 0) items.push(packed.map((p: { claim: { claim_id: string } }) => `${p.claim.claim_id.slice(-6)}`).join(","));
      }
      const n = REPS * queries.length;
      const phases = Object.fromEntries(Object.entries(total).map(([k, v]) => [k, +(v / n).toFixed(2)]));
      const st = [...stmts].map(([k, [ms, c, rows]]) => `${(ms / n).toFixed(2)} ms/compile ${(c / n).toFixed(1)} calls ${(rows / n).toFixed(0)} rows  ${k}`);
      // search: this code and main's (bench/search-before.ts) alternately, on the same searches
      db0.sql.exec(beforeTable);
      // Both through a timed Db (its own statement table each), so both pay the same wrapper.
      const sstm = new Map<string, [number, number, number]>(), bstm = new Map<string, [number, number, number]>();
      const sdb = timedDb(db0, sstm), bdb = timedDb(db0, bstm);
      const sl: number[] = [], blat: number[] = [];
      const sres: string[] = [];
      const stotal: Record<string, number> = {}, btotal: Record<string, number> = {};
      let snapshots = 0;
      // The route's alarm request: the job's due time in org_meta (the storage alarm itself is armed once).
      const scheduleAlarm = (atMs: number) => { markJobDue(db0, searchSnapshotsJob.name, atMs); };
      const marker = (into: Record<string, number>, start: number) => {
        let t = start;
        return (phase: string) => { const now = performance.now(); into[phase] = (into[phase] ?? 0) + now - t; t = now; };
      };
      for (let r = 0; r < SEARCH_REPS; r++) for (const [i, s] of searches.entries()) {
        const runNew = () => {
          pin(); const a = performance.now();
          const page = searchMemories(sdb, caller, {}, s, 25, undefined, scheduleAlarm, marker(stotal, a));
          sl.push(performance.now() - a);
          return page;
        };
        const runOld = () => {
          pin(); const a = performance.now();
          const old = searchBefore(bdb, caller, s, 25, scheduleAlarm, marker(btotal, a));
          blat.push(performance.now() - a);
          return old;
        };
        const [page, old] = (r + i) % 2 ? [runNew(), runOld()] : (() => { const o = runOld(); return [runNew(), o] as const; })();
        if (page.has_more) snapshots++;
        if (r === 0) {
          sres.push(page.page.map((c) => c.claim_id.slice(-6)).join(","));
          // Same answer as main's: the page, has_more, and the stored order of the rest.
          const rest = page.next_cursor ? JSON.parse(db0.first<{ claim_seqs: string }>("SELECT claim_seqs FROM search_snapshots WHERE snapshot_id = ?",
            JSON.parse(atob(page.next_cursor.replace(/-/g, "+").replace(/_/g, "/"))).s)!.claim_seqs) as number[] : [];
          const idOf = new Map(db0.all<{ seq: number; claim_id: string }>("SELECT seq, claim_id FROM claims WHERE seq IN (SELECT value FROM json_each(?))",
            JSON.stringify(rest)).map((c) => [c.seq, c.claim_id]));
          const order = [...page.page.map((c) => c.claim_id), ...rest.map((q) => idOf.get(q))];
          if (JSON.stringify(order) !== JSON.stringify(old.order) || page.has_more !== old.order.length > 25 ||
            JSON.stringify(page.page) !== JSON.stringify(old.page)) throw new Error(`search "${s}" differs from main's`);
        }
      }
      const sn = SEARCH_REPS * searches.length;
      snapshots /= SEARCH_REPS * searches.length;
      const sphases = Object.fromEntries(Object.entries(stotal).map(([k, v]) => [k, +(v / sn).toFixed(3)]));
      const bphases = Object.fromEntries(Object.entries(btotal).map(([k, v]) => [k, +(v / sn).toFixed(3)]));
      const sst = [...sstm].map(([k, [ms, c, rows]]) => `${(ms / sn).toFixed(2)} ms/search ${(c / sn).toFixed(1)} calls ${(rows / sn).toFixed(0)} rows  ${k}`);
      const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / a.length;
      const p95 = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length * 0.95)];
      return { phases, st, ranked: rankedCount / n, compileMean: mean(perQuery), compileP95: p95(perQuery), searchMean: mean(sl), searchP95: p95(sl), sst, sphases, snapshots,
        beforeMean: mean(blat), beforeP95: p95(blat), bphases,
        hash: items.join("|"), shash: sres.join("|") };
    });
    out.push(`== ${size} (seed ${(Date.now() - seedStart) / 1000}s)\ncompile mean ${res.compileMean.toFixed(2)} p95 ${res.compileP95.toFixed(2)} (${res.ranked.toFixed(0)} candidates ranked); search mean ${res.searchMean.toFixed(2)} p95 ${res.searchP95.toFixed(2)}\n` +
      JSON.stringify(res.phases, null, 1) + "\n" + res.st.join("\n") + "\n-- search (share writing a snapshot " + res.snapshots.toFixed(2) + `; main's code, interleaved: mean ${res.beforeMean.toFixed(2)} p95 ${res.beforeP95.toFixed(2)})\n` +
      Object.keys(res.sphases).map((k) => `${k}: main ${res.bphases[k] ?? "-"} -> now ${res.sphases[k]}`).join("\n") + "\n" + res.sst.join("\n") +
      `\nanswers ${await sha(res.hash)} search ${await sha(res.shash)}`);
    console.log(out.at(-1));
  }
}, 3_600_000);

async function sha(s: string) { const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s)); return [...new Uint8Array(d)].slice(0, 8).map((b) => b.toString(16).padStart(2, "0")).join(""); }

declare module "vitest" {
  export interface ProvidedContext { profileSizes: number[] | undefined }
}
