#!/usr/bin/env node
// Writes src/generated/scan-kernel.wasm, the local vector index's scoring kernel (src/vector/scan-kernel.ts),
// assembled here byte by byte so no toolchain is needed: `node scripts/build-scan-kernel.mjs`.
// scripts/test/scan-kernel.test.mjs checks the committed file is exactly what this script writes.
//
// One exported function and the module's memory:
//   scan(query, data, stride, n, norms, unit, out)
// For each of n int8 vectors of `stride` bytes (a multiple of 16, zero-padded) starting at `data`, the
// integer dot product H with the int16 query (stride values: the query rounded), then
// out[s] = H * unit * norms[s] as f64 (norms: f32 per vector). Each row is read once. (A second
// product with the rounding's remainder, rounded again, would narrow the re-scored band by a few
// millionths at about 1.5x the kernel's time: not worth it.)
// WebAssembly SIMD128: 16 int8 lanes widened to two i16x8 halves, i32x4.dot_i16x8_s, lane sums.
// The caller keeps |query| small enough that no sum can overflow (local-index.ts, queryScale).
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const uleb = (n) => {
  const out = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return out;
};
const sleb = (n) => {
  const out = [];
  for (;;) {
    const b = n & 0x7f;
    n >>= 7;
    if ((n === 0 && !(b & 0x40)) || (n === -1 && b & 0x40)) {
      out.push(b);
      return out;
    }
    out.push(b | 0x80);
  }
};
const str = (s) => [...uleb(s.length), ...new TextEncoder().encode(s)];
const vec = (items) => [...uleb(items.length), ...items.flat()];
const section = (id, body) => [id, ...uleb(body.length), ...body];

const I32 = 0x7f,
  F64 = 0x7c,
  V128 = 0x7b;
const get = (i) => [0x20, i],
  set = (i) => [0x21, i],
  tee = (i) => [0x22, i];
const i32 = (n) => [0x41, ...sleb(n)];
const add = [0x6a],
  sub = [0x6b],
  shl = [0x74],
  ltU = [0x49],
  eqz = [0x45];
const simd = (op, ...imm) => [0xfd, ...uleb(op), ...imm];
const v128Load = (offset) => simd(0x00, 0, ...uleb(offset)); // align 2^0: any address
const v128Zero = simd(0x0c, ...new Array(16).fill(0));
const extendLowS = simd(0x87),
  extendHighS = simd(0x88),
  dotI16 = simd(0xba),
  addI32x4 = simd(0xae);
const lane = (l) => simd(0x1b, l);
const f32Load = [0x2a, 2, 0],
  f64Store = [0x39, 3, 0];
const f64FromI32 = [0xb7],
  f64FromF32 = [0xbb],
  f64Mul = [0xa2];
const block = [0x02, 0x40],
  loop = [0x03, 0x40],
  end = [0x0b],
  brIf = (d) => [0x0d, d];

// params: 0 query, 1 data, 2 stride, 3 n, 4 norms, 5 unit (f64), 6 out;
// locals: 7 j, 8 p (vector start), 9 acc, 10 v (16 int8), 11 w (low half as i16), 12 x (high half)
const [Q, DATA, STRIDE, N, NORMS, UNIT, OUT, J, P, ACC, V, W, X] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];
const at = (q) => [...get(q), ...get(J), ...i32(1), ...shl, ...add]; // query + 2j
const accumulate = (acc, q, half, offset) => [
  ...get(half),
  ...at(q),
  ...v128Load(offset),
  ...dotI16,
  ...get(acc),
  ...addI32x4,
  ...set(acc),
];
const laneSum = (acc) => [
  ...get(acc),
  ...lane(0),
  ...get(acc),
  ...lane(1),
  ...add,
  ...get(acc),
  ...lane(2),
  ...add,
  ...get(acc),
  ...lane(3),
  ...add,
];
const body = [
  ...get(DATA),
  ...set(P),
  ...block,
  ...get(N),
  ...eqz,
  ...brIf(0),
  ...loop, // one vector
  ...v128Zero,
  ...set(ACC),
  ...i32(0),
  ...set(J),
  ...loop, // 16 dimensions
  ...get(P),
  ...get(J),
  ...add,
  ...v128Load(0),
  ...tee(V),
  ...extendLowS,
  ...set(W),
  ...get(V),
  ...extendHighS,
  ...set(X),
  ...accumulate(ACC, Q, W, 0),
  ...accumulate(ACC, Q, X, 16),
  ...get(J),
  ...i32(16),
  ...add,
  ...tee(J),
  ...get(STRIDE),
  ...ltU,
  ...brIf(0),
  ...end,
  ...get(OUT),
  ...laneSum(ACC),
  ...f64FromI32,
  ...get(UNIT),
  ...f64Mul,
  ...get(NORMS),
  ...f32Load,
  ...f64FromF32,
  ...f64Mul,
  ...f64Store,
  ...get(OUT),
  ...i32(8),
  ...add,
  ...set(OUT),
  ...get(NORMS),
  ...i32(4),
  ...add,
  ...set(NORMS),
  ...get(P),
  ...get(STRIDE),
  ...add,
  ...set(P),
  ...get(N),
  ...i32(1),
  ...sub,
  ...tee(N),
  ...brIf(0),
  ...end,
  ...end,
  ...end, // function
];
const locals = vec([
  [2, I32],
  [4, V128],
]);
const func = [...locals, ...body];

export function scanKernelBytes() {
  return new Uint8Array([
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00,
    ...section(1, vec([[0x60, ...vec([[I32], [I32], [I32], [I32], [I32], [F64], [I32]]), 0x00]])), // -> ()
    ...section(3, vec([[0x00]])),
    ...section(5, vec([[0x00, 0x01]])), // memory: min 1 page, no maximum (grown by the caller)
    ...section(
      7,
      vec([
        [...str("memory"), 0x02, 0x00],
        [...str("scan"), 0x00, 0x00],
      ]),
    ),
    ...section(10, vec([[...uleb(func.length), ...func]])),
  ]);
}

export const KERNEL_PATH = fileURLToPath(new URL("../src/generated/scan-kernel.wasm", import.meta.url));

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(KERNEL_PATH, scanKernelBytes());
  console.log(`wrote ${KERNEL_PATH}`);
}
