#!/usr/bin/env node
// node bench/partition-recall.mjs [--size 50000] [--cells 256,1024]
//
// Could the local index skip rows with a partition fixed in advance (nothing trained on the
// organization's vectors), and still find the exact top 100? Offline, in node, with the local
// embedder's real vectors: `size` claims drawn like npm run bench's part 2 (scripts/synthetic-text.mjs,
// Zipf over the embedder's own vocabulary, seed 42) and its 50 four-word queries (seed 7; those that
// embed to zero are left out, as compile leaves them). Partitions, each fixed before any claim exists:
//   k-means   spherical k-means (6 rounds, seed 5) over 30,000 statements drawn from the same word table
//             with another seed (1001), after subtracting their mean: a partition derived from the
//             embedder's fixed word table, the same for every organization
//   words     the embeddings of the table's most frequent non-stopwords, minus that mean
// A vector belongs to its nearest cell; a query reads the P cells nearest to it. recall@100 = share of
// the exact top 100 (cosine over float vectors) that lie in the cells read; "rows read" = the rows of
// those cells. Prints one table per partition. docs/BENCHMARKS.md "Vector index: bounded memory" holds a run.
import { build } from "esbuild";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { prng, zipfText } from "../scripts/synthetic-text.mjs";

const root = join(fileURLToPath(import.meta.url), "..", "..");
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const N = Number(arg("size", 50_000));
const CELLS = String(arg("cells", "256,1024")).split(",").map(Number);
const PROBES = [1, 2, 4, 8, 16, 32, 64, 128];
const K = 100;

// The embedder as the Worker runs it, bundled for node (its module imports the tokenizer).
const dir = mkdtempSync(join(tmpdir(), "partition-recall-"));
const entry = join(dir, "entry.ts");
const out = join(dir, "embedder.mjs");
await import("node:fs").then((fs) =>
  fs.writeFileSync(
    entry,
    [
      `export { embedLocally } from ${JSON.stringify(join(root, "src/vector/local-embedder.ts"))};`,
      `export { STOPWORDS } from ${JSON.stringify(join(root, "src/text/stopwords.ts"))};`,
      `export { GLOVE_TABLE } from ${JSON.stringify(join(root, "src/generated/glove-table.ts"))};`,
    ].join("\n"),
  ),
);
await build({ entryPoints: [entry], bundle: true, format: "esm", platform: "node", outfile: out, logLevel: "error" });
const { embedLocally, STOPWORDS, GLOVE_TABLE } = await import(out);
rmSync(dir, { recursive: true, force: true });

const VOCAB = GLOVE_TABLE.words.split(" ");
const text = zipfText(VOCAB, STOPWORDS);
const D = GLOVE_TABLE.dimensions;
const dot = (a, ai, b, bi) => {
  let s = 0;
  for (let i = 0; i < D; i++) s += a[ai + i] * b[bi + i];
  return s;
};
const embedMany = (n, rand) => {
  const v = new Float32Array(n * D);
  for (let i = 0; i < n; i++) v.set(embedLocally(text.statement(rand)), i * D);
  return v;
};

const data = embedMany(N, prng(42));
const qrand = prng(7);
const queries = Array.from({ length: 50 }, () => embedLocally(text.queryWords(qrand))).filter((q) =>
  q.some((x) => x !== 0),
);
const exact = queries.map((q) => {
  const score = new Float32Array(N);
  for (let s = 0; s < N; s++) score[s] = dot(data, s * D, q, 0);
  return new Set(
    Array.from({ length: N }, (_, i) => i)
      .sort((a, b) => score[b] - score[a])
      .slice(0, K),
  );
});

const TRAIN = 30_000;
const train = embedMany(TRAIN, prng(1001));
const mean = new Float32Array(D);
for (let s = 0; s < TRAIN; s++) for (let i = 0; i < D; i++) mean[i] += train[s * D + i] / TRAIN;
const centred = (v, at) => {
  const o = new Float32Array(D);
  let n = 0;
  for (let i = 0; i < D; i++) {
    o[i] = v[at + i] - mean[i];
    n += o[i] * o[i];
  }
  n = Math.sqrt(n) || 1;
  for (let i = 0; i < D; i++) o[i] /= n;
  return o;
};

function kmeans(C) {
  const rand = prng(5);
  const t = new Float32Array(TRAIN * D);
  for (let s = 0; s < TRAIN; s++) t.set(centred(train, s * D), s * D);
  const cent = new Float32Array(C * D);
  for (let c = 0; c < C; c++) {
    const r = Math.floor(rand() * TRAIN);
    cent.set(t.subarray(r * D, r * D + D), c * D);
  }
  for (let round = 0; round < 6; round++) {
    const sum = new Float32Array(C * D);
    for (let s = 0; s < TRAIN; s++) {
      let best = -Infinity,
        bc = 0;
      for (let c = 0; c < C; c++) {
        const d = dot(t, s * D, cent, c * D);
        if (d > best) {
          best = d;
          bc = c;
        }
      }
      for (let i = 0; i < D; i++) sum[bc * D + i] += t[s * D + i];
    }
    for (let c = 0; c < C; c++) {
      let n = 0;
      for (let i = 0; i < D; i++) n += sum[c * D + i] ** 2;
      if ((n = Math.sqrt(n)) > 0) for (let i = 0; i < D; i++) cent[c * D + i] = sum[c * D + i] / n;
    }
  }
  return cent;
}

function wordAnchors(C) {
  const cent = new Float32Array(C * D);
  let c = 0;
  for (const w of VOCAB) {
    if (c >= C) break;
    if (STOPWORDS.has(w)) continue;
    cent.set(centred(embedLocally(w), 0), c++ * D);
  }
  return cent;
}

function study(name, C, cent) {
  const cell = new Int32Array(N);
  const size = new Int32Array(C);
  for (let s = 0; s < N; s++) {
    const v = centred(data, s * D);
    let best = -Infinity,
      bc = 0;
    for (let c = 0; c < C; c++) {
      const d = dot(v, 0, cent, c * D);
      if (d > best) {
        best = d;
        bc = c;
      }
    }
    cell[s] = bc;
    size[bc]++;
  }
  console.log(
    `\n${name}, ${C} cells, ${N.toLocaleString("en")} vectors (largest cell ${Math.max(...size)}), ${queries.length} queries`,
  );
  console.log("| cells read | recall@100 | rows read (share) |\n| --- | --- | --- |");
  for (const P of PROBES.filter((p) => p < C)) {
    let recall = 0,
      rows = 0;
    queries.forEach((q, qi) => {
      const qc = centred(q, 0);
      const order = Array.from({ length: C }, (_, c) => c).sort(
        (a, b) => dot(qc, 0, cent, b * D) - dot(qc, 0, cent, a * D),
      );
      const read = new Set(order.slice(0, P));
      for (const c of read) rows += size[c];
      let found = 0;
      for (const s of exact[qi]) if (read.has(cell[s])) found++;
      recall += found / K;
    });
    console.log(
      `| ${P} | ${(recall / queries.length).toFixed(3)} | ${Math.round(rows / queries.length).toLocaleString("en")} (${((100 * rows) / queries.length / N).toFixed(1)} %) |`,
    );
  }
}

for (const C of CELLS) study("k-means over the word table's statements", C, kmeans(C));
study("the word table's most frequent words", Math.max(...CELLS), wordAnchors(Math.max(...CELLS)));
