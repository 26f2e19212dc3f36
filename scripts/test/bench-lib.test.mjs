// The benches' synthetic text (scripts/bench-lib.mjs): the local embedder's own words, Zipf by
// frequency rank, deterministic for a seed, and queries without stopwords.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import {
  prng,
  queryWords,
  root,
  sleep,
  statement,
  STOPWORDS,
  threadCpuMs,
  threadStates,
  VOCAB,
  zipfWord,
} from "../bench-lib.mjs";

test("the vocabulary is the embedding table's words, in its order", () => {
  const header = /(\d+) words in frequency order/.exec(
    readFileSync(join(root, "src/generated/glove-table.ts"), "utf8"),
  );
  assert.ok(header, "the table's header names its word count");
  assert.equal(VOCAB.length, Number(header[1]));
  assert.equal(new Set(VOCAB).size, VOCAB.length);
  assert.deepEqual(VOCAB.slice(0, 5), ["the", "of", "to", "and", "in"]);
  assert.ok(
    VOCAB.every((w) => /^[a-z0-9]+$/.test(w)),
    "every word is one token as fts.ts makes them",
  );
});

test("the stopwords are fts.ts's", () => {
  for (const w of ["a", "the", "and", "yourselves", "ll", "whom"]) assert.ok(STOPWORDS.has(w), w);
  assert.ok(STOPWORDS.size > 140 && STOPWORDS.size < 200, `${STOPWORDS.size} stopwords`);
  assert.ok(!STOPWORDS.has("said") && !STOPWORDS.has(""));
});

test("statements and queries are deterministic for a seed and made of table words", () => {
  const draw = (seed) => {
    const r = prng(seed);
    return [...Array.from({ length: 50 }, () => statement(r)), ...Array.from({ length: 50 }, () => queryWords(r))];
  };
  assert.deepEqual(draw(42), draw(42));
  assert.notDeepEqual(draw(42), draw(43));
  const known = new Set(VOCAB);
  const r = prng(7);
  for (let i = 0; i < 200; i++) {
    const s = statement(r).split(" ");
    assert.ok(s.length >= 10 && s.length <= 30, `${s.length} words`);
    assert.ok(s.every((w) => known.has(w)));
    const q = queryWords(r).split(" ");
    assert.equal(q.length, 4);
    assert.ok(
      q.every((w) => known.has(w) && !STOPWORDS.has(w)),
      q.join(" "),
    );
  }
});

test("words follow Zipf(1.07) over the frequency rank", () => {
  const r = prng(1);
  const counts = new Map();
  const n = 200_000;
  for (let i = 0; i < n; i++) {
    const w = zipfWord(r);
    counts.set(w, (counts.get(w) ?? 0) + 1);
  }
  const h = VOCAB.reduce((a, _, k) => a + 1 / Math.pow(k + 1, 1.07), 0);
  // The most frequent words come out about as often as Zipf says (within 5%), rank 1 ~ 10^1.07 times rank 10.
  for (const rank of [1, 2, 10]) {
    const expected = n / Math.pow(rank, 1.07) / h;
    const got = counts.get(VOCAB[rank - 1]) ?? 0;
    assert.ok(Math.abs(got - expected) / expected < 0.05, `rank ${rank}: ${got} vs ${expected.toFixed(0)}`);
  }
  // A long tail: most of the vocabulary appears, rare words rarely.
  assert.ok(counts.size > VOCAB.length * 0.8, `${counts.size} distinct words`);
  assert.ok((counts.get(VOCAB[VOCAB.length - 1]) ?? 0) < 10);
});

// Part 1b's view of one thread (threadCpuMs, threadStates): a spinning process is busy (running or
// waiting for a core) and gains CPU; a sleeping one is idle and gains none.
test("a thread's CPU and scheduler state: spinning vs sleeping", async () => {
  const { spawn } = await import("node:child_process");
  // Each child says "ready" once it is in its steady state, so that a loaded machine still starting
  // node (its start-up is CPU) cannot make the sleeping one look busy.
  const start = (code) => {
    const child = spawn(process.execPath, ["-e", code], { stdio: ["ignore", "pipe", "ignore"] });
    const ready = new Promise((resolve, reject) => {
      child.stdout.once("data", resolve);
      child.once("exit", () => reject(new Error("child exited before it was ready")));
    });
    return Object.assign(child, { ready });
  };
  const spinning = start("process.stdout.write('ready\\n'); for (;;) {}");
  const sleeping = start("setTimeout(() => {}, 60000); process.stdout.write('ready\\n');");
  try {
    await Promise.all([spinning.ready, sleeping.ready]);
    await sleep(100);
    const cpu0 = { spinning: threadCpuMs(spinning.pid), sleeping: threadCpuMs(sleeping.pid) };
    const busy = await threadStates(spinning.pid, () => sleep(300));
    const idle = await threadStates(sleeping.pid, () => sleep(300));
    assert.ok(busy.R > 80, `spinning: ${JSON.stringify(busy)}`);
    assert.ok(idle.S > 95 && idle.R < 5, `sleeping: ${JSON.stringify(idle)}`);
    assert.ok(threadCpuMs(spinning.pid) - cpu0.spinning > 20, "the spinning thread ran");
    assert.ok(threadCpuMs(sleeping.pid) - cpu0.sleeping < 20, "the sleeping thread did not");
    await assert.rejects(
      threadStates(sleeping.pid, async () => {
        throw new Error("run failed");
      }),
      /run failed/,
    );
  } finally {
    spinning.kill();
    sleeping.kill();
  }
});
