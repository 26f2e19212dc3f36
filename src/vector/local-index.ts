// The embedded default index: vectors in the organization's own SQLite (table local_vectors, int8
// with a scale), searched by brute force over an int8 copy kept in memory by the Durable Object.
// Fine to about 50,000 vectors per organization (docs/BENCHMARKS.md); beyond that use Vectorize.
// The cache is loaded on the first query and kept in step by this class, the table's only writer.
import type { Db } from "../org/db";
import { type AcceptIds, guardBackend, MAX_TOP_K, type VectorHit, type VectorIndex } from "./types";

/** Ids per accept call when the first batch admitted fewer than k. */
const ACCEPT_BATCH = 1000;

/**
 * dot(int8 vector at `base`, query): four independent sums (measured about twice as fast as one).
 */
function dot(data: Int8Array, base: number, dims: number, values: Float32Array): number {
  let a = 0, b = 0, e = 0, f = 0, i = 0;
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
function bestSlots(n: number, k: number, better: (a: number, b: number) => boolean): number[] {
  const best: number[] = [];
  for (let s = 0; s < n; s++) {
    if (best.length === k && !better(s, best[k - 1])) continue;
    let lo = 0, hi = best.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (better(best[mid], s)) lo = mid + 1; else hi = mid; }
    best.splice(lo, 0, s);
    if (best.length > k) best.pop();
  }
  return best;
}

interface Cache {
  dims: number;
  ids: string[];
  slot: Map<string, number>;
  data: Int8Array;
  /** 1 / |int8 vector|: dot(int8, unit query) * invNorm is the cosine. */
  invNorm: Float32Array;
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

export class LocalVectorIndex implements VectorIndex {
  readonly provider = "local" as const;
  private cache: Cache | null = null;
  constructor(private readonly db: Db) {}

  async upsert(items: { id: string; values: Float32Array }[]): Promise<void> {
    return guardBackend("index", async () => this.upsertNow(items));
  }

  private upsertNow(items: { id: string; values: Float32Array }[]): void {
    for (const it of items) {
      const q = quantize(it.values);
      this.db.run(
        `INSERT INTO local_vectors (record_id, dimensions, inv_norm, data) VALUES (?, ?, ?, ?)
         ON CONFLICT (record_id) DO UPDATE SET dimensions = excluded.dimensions, inv_norm = excluded.inv_norm, data = excluded.data`,
        it.id, it.values.length, q.invNorm, q.data.buffer);
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

  async query(values: Float32Array, topK: number, accept: AcceptIds): Promise<VectorHit[]> {
    return guardBackend("index", async () => this.queryNow(values, topK, accept));
  }

  /**
   * Authorized kNN, exact: every vector is scored, then slots are taken best first (score, then id)
   * and passed through `accept` in batches until k are admitted. The admitted top k is therefore the
   * top k of the admitted vectors alone: a vector the asker may not receive is never counted, never
   * displaces anything and moves no score. The first batch (the best 4k slots) settles almost every
   * query; a caller who may read little of the organization walks a full sort instead.
   */
  private queryNow(values: Float32Array, topK: number, accept: AcceptIds): VectorHit[] {
    const c = this.load(values.length);
    const k = Math.min(MAX_TOP_K, Math.max(1, topK));
    const n = c.ids.length;
    const scores = this.scoreAll(c, values);
    const ids = c.ids;
    const better = (a: number, b: number) => scores[a] > scores[b] || (scores[a] === scores[b] && ids[a] < ids[b]);
    const hits: VectorHit[] = [];
    const admit = (slots: number[]) => {
      const ok = accept(slots.map((s) => ids[s]));
      for (const s of slots) if (ok.has(ids[s]) && hits.length < k) hits.push({ id: ids[s], score: scores[s] });
    };
    const first = bestSlots(n, Math.min(n, 4 * k), better);
    admit(first);
    if (hits.length >= k || first.length >= n) return hits;
    // Fewer than k admitted among the best 4k: walk the rest in order, in batches.
    const taken = new Set(first);
    const rest: number[] = [];
    for (let s = 0; s < n; s++) if (!taken.has(s)) rest.push(s);
    rest.sort((a, b) => (better(a, b) ? -1 : better(b, a) ? 1 : 0));
    for (let i = 0; i < rest.length && hits.length < k; i += ACCEPT_BATCH) admit(rest.slice(i, i + ACCEPT_BATCH));
    return hits;
  }

  /** Cosine of every cached vector with the (unit) query. */
  private scoreAll(c: Cache, values: Float32Array): Float32Array {
    const n = c.ids.length;
    const dims = c.dims;
    const data = c.data;
    const norms = c.invNorm;
    const scores = new Float32Array(n);
    for (let s = 0, base = 0; s < n; s++, base += dims) scores[s] = dot(data, base, dims, values) * norms[s];
    return scores;
  }

  async present(ids: string[]): Promise<Set<string>> {
    return guardBackend("index", async () => this.presentNow(ids));
  }

  private presentNow(ids: string[]): Set<string> {
    const rows = this.db.all<{ record_id: string }>(
      "SELECT record_id FROM local_vectors WHERE record_id IN (SELECT value FROM json_each(?))", JSON.stringify(ids));
    return new Set(rows.map((r) => r.record_id));
  }

  async appliedUpTo(): Promise<number | null> {
    return null; // synchronous: a write is visible at once
  }

  /** Number of vectors held (all dimensions). */
  count(): number {
    return this.db.first<{ n: number }>("SELECT count(*) AS n FROM local_vectors")?.n ?? 0;
  }

  private load(dims: number): Cache {
    if (this.cache && this.cache.dims === dims) return this.cache;
    const rows = this.db.all<{ record_id: string; inv_norm: number; data: ArrayBuffer }>(
      "SELECT record_id, inv_norm, data FROM local_vectors WHERE dimensions = ? ORDER BY record_id", dims);
    const cap = Math.max(1024, rows.length * 2);
    const c: Cache = { dims, ids: [], slot: new Map(), data: new Int8Array(cap * dims), invNorm: new Float32Array(cap) };
    for (const r of rows) {
      c.slot.set(r.record_id, c.ids.length);
      c.data.set(new Int8Array(r.data), c.ids.length * dims);
      c.invNorm[c.ids.length] = r.inv_norm;
      c.ids.push(r.record_id);
    }
    return (this.cache = c);
  }

  private put(id: string, data: Int8Array, invNorm: number): void {
    const c = this.cache;
    if (!c) return;
    if (data.length !== c.dims) { this.drop(id); return; }
    let s = c.slot.get(id);
    if (s === undefined) {
      s = c.ids.length;
      if ((s + 1) * c.dims > c.data.length) {
        const grown = new Int8Array(c.data.length * 2);
        grown.set(c.data);
        c.data = grown;
        const norms = new Float32Array(c.invNorm.length * 2);
        norms.set(c.invNorm);
        c.invNorm = norms;
      }
      c.ids.push(id);
      c.slot.set(id, s);
    }
    c.data.set(data, s * c.dims);
    c.invNorm[s] = invNorm;
  }

  private drop(id: string): void {
    const c = this.cache;
    const s = c?.slot.get(id);
    if (!c || s === undefined) return;
    // Move the last vector into the freed slot.
    const last = c.ids.length - 1;
    if (s !== last) {
      c.data.copyWithin(s * c.dims, last * c.dims, (last + 1) * c.dims);
      c.invNorm[s] = c.invNorm[last];
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
