// The local index's rows in WebAssembly memory, and the SIMD kernel that scores them all against the
// query rounded to int16 (scan-kernel.wasm,
// written by scripts/build-scan-kernel.mjs). Workers refuse to compile wasm bytes at run time, so the
// module arrives compiled through a static import (wrangler bundles `*.wasm` as a compiled module);
// instantiating it per organization's index is synchronous and cheap. When it cannot be instantiated, or
// its memory cannot be reserved, the rows live in plain arrays and `scans` is false: the index then
// scores in JS, which is also its reference path. (A runtime without wasm SIMD at all would refuse
// the module when the Worker loads; workerd has it.)
import scanKernel from "../generated/scan-kernel.wasm";

interface KernelExports {
  memory: WebAssembly.Memory;
  scan(query: number, data: number, stride: number, n: number, norms: number, unit: number, out: number): void;
}

function instantiate(): KernelExports | null {
  try {
    return new WebAssembly.Instance(scanKernel, {}).exports as unknown as KernelExports;
  } catch {
    return null;
  }
}

const PAGE = 65536;

/**
 * `cap` rows of `stride` int8 values (stride: dimensions rounded up to 16, zero-padded) and one float32
 * per row (1 / |row|). Layout in the kernel's memory: the int16 query, the rows, the norms, then
 * the scan's float64 output (scratch). Growing moves the norms and the output, never the rows.
 */
export class VectorRows {
  data: Int8Array;
  norms: Float32Array;
  private kernel: KernelExports | null;
  private readonly queryBytes: number;
  private readonly dataAt: number;
  private cap: number;

  constructor(
    readonly stride: number,
    cap: number,
    useKernel = true,
  ) {
    this.kernel = useKernel ? instantiate() : null;
    this.queryBytes = Math.ceil((stride * 2) / 16) * 16;
    this.dataAt = this.queryBytes;
    this.cap = cap;
    if (this.kernel) {
      try {
        this.reserve();
      } catch {
        this.kernel = null; // no memory for the kernel's copy: plain arrays, scored in JS
      }
    }
    if (this.kernel) {
      this.data = new Int8Array(this.kernel.memory.buffer, this.dataAt, cap * stride);
      this.norms = new Float32Array(this.kernel.memory.buffer, this.normsAt, cap);
    } else {
      this.data = new Int8Array(cap * stride);
      this.norms = new Float32Array(cap);
    }
  }

  get capacity(): number {
    return this.cap;
  }

  /** Whether `scan` runs (the kernel instantiated). */
  get scans(): boolean {
    return this.kernel !== null;
  }

  /** Room for `cap` rows; rows and norms keep their values. */
  grow(cap: number): void {
    if (cap <= this.cap) return;
    const oldRows = this.cap * this.stride;
    if (!this.kernel) {
      const data = new Int8Array(cap * this.stride);
      data.set(this.data);
      const norms = new Float32Array(cap);
      norms.set(this.norms);
      this.data = data;
      this.norms = norms;
      this.cap = cap;
      return;
    }
    const oldNorms = this.norms.slice();
    const previous = this.cap;
    this.cap = cap;
    try {
      this.reserve();
    } catch (err) {
      this.cap = previous; // nothing moved: the views still match the old capacity
      throw err;
    }
    const buffer = this.kernel.memory.buffer;
    this.data = new Int8Array(buffer, this.dataAt, cap * this.stride);
    this.data.fill(0, oldRows); // held the old norms and output
    this.norms = new Float32Array(buffer, this.normsAt, cap);
    this.norms.fill(0);
    this.norms.set(oldNorms);
  }

  /**
   * For rows 0..n-1: (row . query) * unit * norm, the integer dot product exact (query: stride int16
   * values, zero past the dimensions). The view is valid until the next scan or growth. Only when `scans`.
   */
  scan(query: Int16Array, unit: number, n: number): Float64Array {
    const k = this.kernel!;
    const outAt = this.outAt;
    new Int16Array(k.memory.buffer, 0, this.stride).set(query);
    k.scan(0, this.dataAt, this.stride, n, this.normsAt, unit, outAt);
    return new Float64Array(k.memory.buffer, outAt, n);
  }

  private get normsAt(): number {
    return this.dataAt + this.cap * this.stride;
  }

  private get outAt(): number {
    return this.normsAt + Math.ceil(this.cap / 2) * 8; // float64-aligned
  }

  /** Grows the memory to hold queries, rows, norms and output (views on it detach). */
  private reserve(): void {
    const k = this.kernel!;
    const need = this.outAt + this.cap * 8;
    const have = k.memory.buffer.byteLength;
    if (need > have) k.memory.grow(Math.ceil((need - have) / PAGE));
  }
}
