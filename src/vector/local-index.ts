// The embedded default index: vectors in the organization's own SQLite (table local_vectors, int8
// with a scale), searched exactly over an int8 copy kept in memory by the Durable Object. Every vector
// is scored on every query: a WebAssembly SIMD kernel (scan-kernel.ts) takes integer dot products with
// the query rounded to int16, which settles all but a thin band of slots around the cut; those are
// re-scored with the exact JS arithmetic, so scores and order are bit for bit those of the plain JS
// scan (`queryReference`).
//
// Authorized kNN: slots are taken best first and passed through the asker's `accept` (the read rule)
// until k are admitted, so the answer is the top k of the admitted vectors alone: a vector the asker
// may not receive is never counted, never displaces anything and moves no score.
//
// The memory is bounded: the copy holds at most `cacheBytes` (LOCAL_INDEX_CACHE_BYTES, 32 MiB: about
// 140,000 vectors of 100 dimensions, 65,536 of 384). Above it the index keeps no copy and answers no
// query (IndexAboveBound: compile ranks without vectors, meta.degraded.vectors) until the organization
// is back under it; the table itself keeps every vector. Rows are not skipped instead: a structure that
// skips rows needs a partition fixed in advance (nothing trained on the organization's vectors may
// decide what a caller finds), and the fixed partitions measured on the embedder's vectors find too
// little of the exact top 100 (docs/BENCHMARKS.md "Vector index: bounded memory"); a scan of the
// table itself reads each row through SQLite at microseconds a row. Production organizations above
// the bound are answered by Vectorize (vectorize.ts).
// The copy is loaded on the first query and kept in step by this class, the table's only writer; the
// table's size is kept by triggers (local_vector_counts), so the bound is checked without a count.
import { type Db, sql } from "../sql/db";
import { VectorRows } from "./scan-kernel";
import {
  type AcceptIds,
  guardBackend,
  IndexAboveBound,
  MAX_TOP_K,
  type VectorAsk,
  type VectorHit,
  type VectorIndex,
  type VectorItem,
} from "./types";

/** Ids per accept call when the first batch admitted fewer than k. */
const ACCEPT_BATCH = 1000;

/**
 * dot(int8 vector at `base`, query): four independent sums (measured about twice as fast as one).
 */
export function dot(data: Int8Array, base: number, dims: number, values: Float32Array): number {
  let a = 0,
    b = 0,
    e = 0,
    f = 0,
    i = 0;
  for (; i + 3 < dims; i += 4) {
    a += data[base + i] * values[i];
    b += data[base + i + 1] * values[i + 1];
    e += data[base + i + 2] * values[i + 2];
    f += data[base + i + 3] * values[i + 3];
  }
  for (; i < dims; i++) a += data[base + i] * values[i];
  return a + b + e + f;
}

/** The best `k` of slots 0..n-1 by `better`, best first (insertion into a short sorted list). */
export function bestSlots(n: number, k: number, better: (a: number, b: number) => boolean): number[] {
  const best: number[] = [];
  for (let s = 0; s < n; s++) {
    if (best.length === k && !better(s, best[k - 1])) continue;
    let lo = 0,
      hi = best.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (better(best[mid], s)) lo = mid + 1;
      else hi = mid;
    }
    best.splice(lo, 0, s);
    if (best.length > k) best.pop();
  }
  return best;
}

interface Cache {
  dims: number;
  ids: string[];
  slot: Map<string, number>;
  /**
   * Row s holds slot s's int8 vector at s * rows.stride (zero-padded past dims), and rows.norms[s]
   * its 1 / |int8 vector|: dot(int8, unit query) * norm is the cosine.
   */
  rows: VectorRows;
  /** Scratch for one query's exact scores (only the slots it compares are written). */
  scores: Float32Array;
}

/** Rows padded to the kernel's 16 int8 lanes. */
const strideOf = (dims: number) => Math.ceil(dims / 16) * 16;

/**
 * The int16 scale of the query: its largest component becomes this, small enough that no sum of
 * stride products 127 * q can overflow int32 (32767 up to 516 dimensions).
 */
export const queryScale = (stride: number) => Math.min(32767, Math.floor(0x7fffffff / (127 * stride)));

/** The exact score of slot s: the reference arithmetic, rounded to float32 as the reference stores it. */
function exactScore(c: Cache, s: number, values: Float32Array): number {
  return Math.fround(dot(c.rows.data, s * c.rows.stride, c.dims, values) * c.rows.norms[s]);
}

export function quantize(values: Float32Array): { data: Int8Array; invNorm: number } {
  let max = 0;
  for (const x of values) max = Math.max(max, Math.abs(x));
  const data = new Int8Array(values.length);
  let n = 0;
  for (let i = 0; i < values.length; i++) {
    data[i] = max > 0 ? Math.round((values[i] / max) * 127) : 0;
    n += data[i] * data[i];
  }
  return { data, invNorm: n > 0 ? 1 / Math.sqrt(n) : 0 };
}

/** The in-memory copy's bound per organization (rows, norms, scratch and ids, as `bytesPerVector` counts them). */
export const LOCAL_INDEX_CACHE_BYTES = 32 * 2 ** 20;

/**
 * Bytes the copy holds per vector: its row (stride), 1/|row| (4), the kernel's float64 output (8), the
 * exact-score scratch (4), and an estimate of its id in the JS heap (a 38-character string, its array
 * slot and its slot-map entry: 112).
 */
export const bytesPerVector = (dims: number) => strideOf(dims) + 16 + 112;

/** What a LocalVectorIndex has done since its object started (npm run bench reports them). */
export interface LocalIndexStats {
  queries: number;
  /** Queries answered from the copy already in memory. */
  cacheHits: number;
  /** Loads of the copy from the table (the first query, or one after the copy was dropped). */
  loads: number;
  /** Queries refused above the bound. */
  aboveBound: number;
  /** Rows scored in memory, over all queries. */
  rowsScanned: number;
  /** Ids passed to `accept` (each one an authorization read of SQLite), over all queries. */
  idsAccepted: number;
}

export interface LocalIndexOptions {
  /** The copy's bound in bytes (default LOCAL_INDEX_CACHE_BYTES). */
  cacheBytes?: number;
  /** false: rows in a plain array, every query on the JS reference path. */
  kernel?: boolean;
  /**
   * Caps the query's int16 scale (tests: a coarse query widens the re-scored band, and the answer
   * must not change). Default queryScale(stride).
   */
  maxQueryScale?: number;
}

export class LocalVectorIndex implements VectorIndex {
  readonly provider = "local" as const;
  private cache: Cache | null = null;
  readonly stats: LocalIndexStats = {
    queries: 0,
    cacheHits: 0,
    loads: 0,
    aboveBound: 0,
    rowsScanned: 0,
    idsAccepted: 0,
  };
  constructor(
    private readonly db: Db,
    private readonly options: LocalIndexOptions = {},
  ) {}

  /** The most vectors of `dims` dimensions the in-memory copy holds. */
  bound(dims: number): number {
    return Math.floor((this.options.cacheBytes ?? LOCAL_INDEX_CACHE_BYTES) / bytesPerVector(dims));
  }

  /** Vectors of `dims` dimensions in the table (kept by triggers: one row read, whatever the size). */
  vectors(dims: number): number {
    return (
      this.db.first<{ vectors: number }>(sql`SELECT vectors FROM local_vector_counts WHERE dimensions = ${dims}`)
        ?.vectors ?? 0
    );
  }

  /** Whether a query of `dims` dimensions is answered (the table is within the bound; a bound of no vector answers none). */
  answers(dims: number): boolean {
    const bound = this.bound(dims);
    return bound > 0 && this.vectors(dims) <= bound;
  }

  /** Bytes the in-memory copy holds now (0 when none), as `bytesPerVector` counts them. */
  heldBytes(): number {
    const c = this.cache;
    return c ? c.rows.capacity * (c.rows.stride + 12) + c.scores.length * 4 + c.ids.length * 112 : 0;
  }

  async upsert(items: VectorItem[]): Promise<void> {
    return guardBackend("index", async () => this.upsertNow(items));
  }

  private upsertNow(items: { id: string; values: Float32Array }[]): void {
    for (const it of items) {
      const q = quantize(it.values);
      this.db.run(
        `INSERT INTO local_vectors (record_id, dimensions, inv_norm, data) VALUES (?, ?, ?, ?)
         ON CONFLICT (record_id) DO UPDATE SET dimensions = excluded.dimensions, inv_norm = excluded.inv_norm, data = excluded.data`,
        it.id,
        it.values.length,
        q.invNorm,
        q.data.buffer,
      );
      this.put(it.id, q.data, q.invNorm);
    }
  }

  async remove(ids: string[]): Promise<void> {
    return guardBackend("index", async () => this.removeNow(ids));
  }

  private removeNow(ids: string[]): void {
    if (!ids.length) return;
    this.db.run("DELETE FROM local_vectors WHERE record_id IN (SELECT value FROM json_each(?))", JSON.stringify(ids));
    for (const id of ids) this.drop(id);
  }

  async query(values: Float32Array, topK: number, ask: VectorAsk): Promise<VectorHit[]> {
    return guardBackend("index", async () => this.queryNow(values, topK, ask.accept, true));
  }

  /** The same answer computed the plain way: every slot scored in JS, then sorted (the tests' reference). */
  queryReference(values: Float32Array, topK: number, accept: AcceptIds): VectorHit[] {
    return this.queryNow(values, topK, accept, false);
  }

  /**
   * Authorized kNN, exact: every vector is scored, then slots are taken best first (score, then id)
   * and passed through `accept` in batches until k are admitted (the best k, the rest of the best 4k,
   * then the others in batches of ACCEPT_BATCH). The admitted top k is therefore the top k of the
   * admitted vectors alone: a vector the asker may not receive is never counted, never displaces
   * anything and moves no score. The best 4k slots settle almost every query; a caller who may read
   * little of the organization walks further.
   */
  private queryNow(values: Float32Array, topK: number, accept: AcceptIds, fast: boolean): VectorHit[] {
    this.stats.queries++;
    const c = this.load(values.length);
    this.stats.rowsScanned += c.ids.length;
    const k = Math.min(MAX_TOP_K, Math.max(1, topK));
    const n = c.ids.length;
    const ids = c.ids;
    // Exact scores, written for every slot that is compared (all of them on the plain path).
    if (c.scores.length < n) c.scores = new Float32Array(c.rows.capacity);
    const scores = c.scores;
    const better = (a: number, b: number) => scores[a] > scores[b] || (scores[a] === scores[b] && ids[a] < ids[b]);
    const hits: VectorHit[] = [];
    const admit = (slots: number[]) => {
      this.stats.idsAccepted += slots.length;
      const ok = accept(slots.map((s) => ids[s]));
      for (const s of slots) if (ok.has(ids[s]) && hits.length < k) hits.push({ id: ids[s], score: scores[s] });
    };
    const m = Math.min(n, 4 * k);
    let first = fast ? this.bestSlotsFast(c, values, m, scores) : null;
    let scoredAll = false;
    if (!first) {
      this.scoreAll(c, values, scores);
      scoredAll = true;
      first = bestSlots(n, m, better);
    }
    // The best k first: when the asker may receive them all (the usual compile) the authorization
    // read is k ids instead of 4k. Same slots in the same order either way, so the same answer.
    admit(first.slice(0, k));
    if (hits.length < k && first.length > k) admit(first.slice(k));
    if (hits.length >= k || first.length >= n) return hits;
    // Fewer than k admitted among the best 4k: walk the rest in order, in batches. With the kernel,
    // the exact best 16k, 64k, ... in turn (the same order, so the same answer) instead of a sort of all.
    if (!scoredAll) {
      // Each step rescans every row, so once a step would take a quarter of them, one exact pass over
      // all and a sort (the JS path's way) is cheaper: a caller who may read almost nothing walks there.
      for (let more = 16 * k; hits.length < k && first.length < n && 4 * more < n; more *= 4) {
        const next = this.bestSlotsFast(c, values, more, scores)!;
        for (let i = first.length; i < next.length && hits.length < k; i += ACCEPT_BATCH)
          admit(next.slice(i, i + ACCEPT_BATCH));
        first = next;
      }
      if (hits.length >= k || first.length >= n) return hits;
      this.scoreAll(c, values, scores);
    }
    const taken = new Set(first);
    const rest: number[] = [];
    for (let s = 0; s < n; s++) if (!taken.has(s)) rest.push(s);
    rest.sort((a, b) => (better(a, b) ? -1 : better(b, a) ? 1 : 0));
    for (let i = 0; i < rest.length && hits.length < k; i += ACCEPT_BATCH) admit(rest.slice(i, i + ACCEPT_BATCH));
    return hits;
  }

  /**
   * The best m slots by exact score (then id), best first, the same list bestSlots gives over exact
   * scores, with only a band of slots scored exactly; their scores are written into `scores`. null
   * when the kernel cannot run or the query gives no usable scale (then the caller scores in JS).
   *
   * Why it is exact: the query is split as query * unit + rest (rounded to int16), and the kernel
   * gives a(s) = (int8 . query) * unit * invNorm(s), the dot product exact in integers, which differs
   * from the exact score e(s) by at most eps = |rest| (Cauchy-Schwarz: |int8 . rest| * invNorm <= |rest|)
   * plus a margin for float rounding. If A is the m-th largest
   * approximation, m slots have e >= A - eps, so the m-th largest exact score E is >= A - eps, and
   * every slot of the exact top m has a >= E - eps >= A - 2 eps. Scoring exactly every slot with
   * a >= A - 2 eps and sorting them by (score, id) therefore yields the exact top m, in order. |rest|
   * is about 3e-5 for a unit query of 100 dimensions, so the band is the top m and the few slots
   * within about 1e-4 of the cut. (A second int16 rounding of the remainder would narrow the band to a few
   * millionths but cost about half as much again in the kernel.)
   * Which slots fall in the band depends only on the scores, never on `accept`.
   */
  private bestSlotsFast(c: Cache, values: Float32Array, m: number, scores: Float32Array): number[] | null {
    const rows = c.rows;
    const n = c.ids.length;
    if (!rows.scans || m === 0) return null;
    const dims = c.dims;
    let max = 0,
      norm2 = 0;
    for (let i = 0; i < dims; i++) {
      max = Math.max(max, Math.abs(values[i]));
      norm2 += values[i] * values[i];
    }
    if (!(max > 0) || !Number.isFinite(max) || !Number.isFinite(norm2)) return null;
    const scale = Math.min(queryScale(rows.stride), this.options.maxQueryScale ?? Infinity);
    // values = query * unit + rest: the query rounded to int16, and what the rounding left.
    const query = new Int16Array(rows.stride);
    const unit = max / scale;
    let rest2 = 0;
    for (let i = 0; i < dims; i++) {
      query[i] = Math.round((values[i] / max) * scale);
      const rest = values[i] - query[i] * unit;
      rest2 += rest * rest;
    }
    // |approximation - exact| <= |rest| (Cauchy-Schwarz: |sum int8 * rest| * invNorm <= |rest|), plus a
    // margin for the float rounding of both (the exact score is a float32).
    const eps = Math.sqrt(rest2) * 1.001 + 1e-6 * (1 + Math.sqrt(norm2));
    const approx = rows.scan(query, unit, n);
    // A: the m-th largest approximation, by a min-heap of the best m seen. The same pass keeps every
    // slot that may fall in the band (a >= A - 2 eps): the heap's minimum only rises, up to A, so such a
    // slot came while the heap was filling or had a >= (the minimum at its turn) - 2 eps.
    const twoEps = 2 * eps;
    const heap = new Float64Array(m);
    const near: number[] = [];
    let size = 0;
    for (let s = 0; s < n; s++) {
      const a = approx[s];
      if (size < m) {
        near.push(s);
        let i = size++;
        while (i > 0) {
          const p = (i - 1) >> 1;
          if (heap[p] <= a) break;
          heap[i] = heap[p];
          i = p;
        }
        heap[i] = a;
      } else if (a >= heap[0] - twoEps) {
        near.push(s);
        if (!(a > heap[0])) continue;
        let i = 0;
        for (;;) {
          const l = 2 * i + 1;
          if (l >= m) break;
          const r = l + 1;
          const j = r < m && heap[r] < heap[l] ? r : l;
          if (heap[j] >= a) break;
          heap[i] = heap[j];
          i = j;
        }
        heap[i] = a;
      }
    }
    const cut = heap[0] - twoEps;
    const band: number[] = [];
    for (const s of near) {
      if (approx[s] >= cut) {
        band.push(s);
        scores[s] = exactScore(c, s, values);
      }
    }
    const ids = c.ids;
    band.sort((a, b) => scores[b] - scores[a] || (ids[a] < ids[b] ? -1 : ids[a] > ids[b] ? 1 : 0));
    band.length = Math.min(band.length, m);
    return band;
  }

  /** Cosine of every cached vector with the (unit) query: the reference arithmetic. */
  private scoreAll(c: Cache, values: Float32Array, scores: Float32Array): void {
    const n = c.ids.length;
    for (let s = 0; s < n; s++) scores[s] = exactScore(c, s, values);
  }

  async present(ids: string[]): Promise<Set<string>> {
    return guardBackend("index", async () => this.presentNow(ids));
  }

  private presentNow(ids: string[]): Set<string> {
    const rows = this.db.all<{ record_id: string }>(
      "SELECT record_id FROM local_vectors WHERE record_id IN (SELECT value FROM json_each(?))",
      JSON.stringify(ids),
    );
    return new Set(rows.map((r) => r.record_id));
  }

  async appliedUpTo(): Promise<number | null> {
    return null; // synchronous: a write is visible at once
  }

  /**
   * The in-memory copy of the vectors of `dims` dimensions, loaded if need be; throws IndexAboveBound
   * (and drops any copy) when the table holds more than the bound.
   */
  private load(dims: number): Cache {
    const bound = this.bound(dims);
    if (this.cache && this.cache.dims === dims) {
      this.stats.cacheHits++;
      return this.cache;
    }
    this.cache = null;
    const held = this.vectors(dims);
    if (held > bound || bound === 0) {
      this.stats.aboveBound++;
      throw new IndexAboveBound(held, bound);
    }
    this.stats.loads++;
    const rows = this.db.all<{ record_id: string; inv_norm: number; data: ArrayBuffer }>(
      "SELECT record_id, inv_norm, data FROM local_vectors WHERE dimensions = ? ORDER BY record_id",
      dims,
    );
    // Room to grow by half again (at least 1,024), never past the bound.
    const cap = Math.max(1, Math.min(bound, Math.max(1024, Math.ceil(rows.length * 1.5))));
    const c: Cache = {
      dims,
      ids: [],
      slot: new Map(),
      rows: new VectorRows(strideOf(dims), cap, this.options.kernel ?? true),
      scores: new Float32Array(0),
    };
    for (const r of rows) {
      c.slot.set(r.record_id, c.ids.length);
      c.rows.data.set(new Int8Array(r.data), c.ids.length * c.rows.stride);
      c.rows.norms[c.ids.length] = r.inv_norm;
      c.ids.push(r.record_id);
    }
    return (this.cache = c);
  }

  private put(id: string, data: Int8Array, invNorm: number): void {
    const c = this.cache;
    if (!c) return;
    if (data.length !== c.dims) {
      this.drop(id);
      return;
    }
    let s = c.slot.get(id);
    if (s === undefined) {
      s = c.ids.length;
      if (s + 1 > c.rows.capacity) {
        const bound = this.bound(c.dims);
        // Past the bound: the copy goes (queries answer IndexAboveBound until the table is back under it).
        if (s + 1 > bound) {
          this.cache = null;
          return;
        }
        c.rows.grow(Math.min(bound, c.rows.capacity * 2));
      }
      c.ids.push(id);
      c.slot.set(id, s);
    }
    c.rows.data.set(data, s * c.rows.stride); // the padding past dims stays zero
    c.rows.norms[s] = invNorm;
  }

  private drop(id: string): void {
    const c = this.cache;
    const s = c?.slot.get(id);
    if (!c || s === undefined) return;
    // Move the last vector into the freed slot (padding included, so it stays zero).
    const last = c.ids.length - 1;
    const stride = c.rows.stride;
    if (s !== last) {
      c.rows.data.copyWithin(s * stride, last * stride, (last + 1) * stride);
      c.rows.norms[s] = c.rows.norms[last];
      c.ids[s] = c.ids[last];
      c.slot.set(c.ids[s], s);
    }
    c.ids.pop();
    c.slot.delete(id);
  }
}

/** One index object per organization Durable Object (its Db), so the in-memory copy is reused. */
const INDEXES = new WeakMap<Db, LocalVectorIndex>();
export function localIndexFor(db: Db): LocalVectorIndex {
  let idx = INDEXES.get(db);
  if (!idx) INDEXES.set(db, (idx = new LocalVectorIndex(db)));
  return idx;
}
