#!/usr/bin/env node
// npm run bench:recall [-- <LoCoMo file or folder>] [--budgets 500,1000,2000] [--limit-questions N]
//                      [--half tune|check] [--org-per-conversation] [--no-vectors] [--no-event-time] [--misses FILE]
//                      [--vars NAME=value,...] (plain Worker variables for the server, e.g. EMBEDDING_SIMILARITY_FLOOR=0.5)
//
// Retrieval quality without a model. Every LoCoMo conversation goes into ONE organization, as one
// subject (`locomo:<name>`), as a deployment serving many users holds them: one observation per turn
// (occurred_at = the session's date and time) and one claim per turn. Then for every question of
// categories 1-4 a compile (POST /v1/context/compile, the product's real path over HTTP) with the
// question as query and the conversation's subject_id at each budget, counting the evidence turns the
// pack holds. Beside it, in the same run, a plain BM25 ranking over the same conversation's turn texts
// (same tokenizer family: unicode61 + Porter, k1 1.2, b 0.75, as SQLite FTS5's bm25) packed greedily
// to the same budget with the same token estimate.
// The conversations are split into two fixed halves by their sorted names (TUNE_HALF below, alternate
// files: 26, 41, 43 tune; 30, 42, 44 check): ranking is tuned on the tune half only, and both halves are
// reported. `--half tune` (or check) still stores every conversation (the organization is the same)
// but asks only that half's questions. `--org-per-conversation` puts each conversation in its own
// organization instead (the layout of earlier runs).
// The data is read from the path given; nothing is copied into the repository.
// Vectors: after seeding, the organization's vector index is filled the way an operator would (verify
// queues whatever the index lacks, then drain until the queue is empty), so compile is hybrid when
// the server has a vector capability. `--no-vectors` skips that: compile is then lexical only.
// `--misses FILE` (diagnostics) also compiles each question once more with the largest budget (top
// MAX_ITEMS by score) and writes every evidence turn compile misses at 1000 tokens, with its rank
// and score there, to FILE (JSON), printing where the misses rank.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, resolve, basename } from "node:path";
import { stemmer } from "stemmer";
import {
  apiOk,
  fillIndex,
  fmt,
  log,
  machineLine,
  newOrg,
  parseArgs,
  pool,
  progress,
  root,
  startServer,
  table,
  writeSection,
} from "./bench-lib.mjs";

const args = parseArgs();
const BUDGETS = String(args.budgets ?? "500,1000,2000")
  .split(",")
  .map(Number);
const CATEGORIES = { 1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop" };
const MAX_ITEMS = 200; // the API maximum, so that the budget (not the item cap) bounds the pack
const DEADLINE = Date.now() + Number(args["max-minutes"] ?? 45) * 60_000;
/** The tune half, by conversation name (the file name of ../shared/data/locomo: alternate files when sorted). */
const TUNE_HALF = new Set(["26", "41", "43"]);
const halfOf = (name) => (TUNE_HALF.has(String(name)) ? "tune" : "check");
const HALVES = args.half ? [String(args.half)] : ["tune", "check"];
if (HALVES.some((h) => h !== "tune" && h !== "check")) throw new Error("--half is tune or check");

// ---- the data ---------------------------------------------------------------------------------

function defaultPath() {
  const p = resolve(root, "..", "shared", "data", "locomo");
  return existsSync(p) ? p : null;
}

function loadConversations(path) {
  const files = statSync(path).isDirectory()
    ? readdirSync(path)
        .filter((f) => f.endsWith(".json"))
        .sort()
        .map((f) => join(path, f))
    : [path];
  const out = [];
  for (const file of files) {
    const raw = JSON.parse(readFileSync(file, "utf8"));
    // Accept one sample ({ conversation?, qa }), or a list of them (locomo10.json).
    const samples = Array.isArray(raw) ? raw : [raw];
    samples.forEach((s, i) => {
      const conv = s.conversation ?? s;
      if (!Array.isArray(s.qa)) return;
      const name = s.sample_id ?? (samples.length > 1 ? `${basename(file, ".json")}#${i}` : basename(file, ".json"));
      out.push({ name, conv, qa: s.qa });
    });
  }
  return out;
}

/** "1:56 pm on 8 May, 2023" -> "8 May 2023" (kept as written when it has another shape). */
const sessionDate = (s) =>
  (s ?? "")
    .replace(/^.*\bon\s+/, "")
    .replace(",", "")
    .trim();

const MONTHS = [
  "january",
  "february",
  "march",
  "april",
  "may",
  "june",
  "july",
  "august",
  "september",
  "october",
  "november",
  "december",
];
/** "1:56 pm on 8 May, 2023" -> "2023-05-08T13:56:00.000Z" (the dataset names no zone: read as UTC); null if it has another shape. */
function sessionTime(s) {
  const m = /^(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})$/i.exec((s ?? "").trim());
  if (!m) return null;
  const month = MONTHS.indexOf(m[5].toLowerCase());
  if (month < 0) return null;
  const hour = (Number(m[1]) % 12) + (m[3].toLowerCase() === "pm" ? 12 : 0);
  return new Date(Date.UTC(Number(m[6]), month, Number(m[4]), hour, Number(m[2]))).toISOString();
}

/** Sessions in order, each turn rendered as the claim statement both rankers see. */
function turnsOf(conv) {
  const sessions = Object.keys(conv)
    .filter((k) => /^session_\d+$/.test(k) && Array.isArray(conv[k]))
    .sort((a, b) => Number(a.split("_")[1]) - Number(b.split("_")[1]));
  const turns = [];
  for (const key of sessions) {
    const date = sessionDate(conv[`${key}_date_time`]);
    const at = sessionTime(conv[`${key}_date_time`]);
    for (const t of conv[key]) {
      if (!t?.dia_id || typeof t.text !== "string") continue;
      const photo = t.blip_caption ? ` [photo: ${t.blip_caption}]` : "";
      turns.push({
        dia: t.dia_id,
        session: key,
        at,
        text: t.text,
        statement: `[${date}] ${t.speaker}: ${t.text}${photo}`,
      });
    }
  }
  return turns;
}

/** Evidence ids as written, with the dataset's few typos ("D8:6; D9:17", "D:11:26") read kindly. */
function evidenceIds(ev, known) {
  const ids = [];
  let dropped = 0;
  for (const e of ev ?? [])
    for (const part of String(e)
      .split(/[;,\s]+/)
      .filter(Boolean)) {
      const m = /^D:?(\d+):(\d+)$/.exec(part);
      const id = m ? `D${m[1]}:${m[2]}` : part;
      if (known.has(id)) ids.push(id);
      else dropped++;
    }
  return { ids: [...new Set(ids)], dropped };
}

// ---- the plain BM25 baseline -------------------------------------------------------------------

const estimateTokens = (text) => Math.max(1, Math.ceil(Buffer.byteLength(text, "utf8") / 4));
const tokenize = (text) =>
  (
    text
      .toLowerCase()
      .normalize("NFKD")
      .replace(/\p{M}/gu, "")
      .match(/[\p{L}\p{N}]+/gu) ?? []
  ).map((w) => stemmer(w));

function bm25Index(turns) {
  const docs = turns.map((t) => {
    const toks = tokenize(t.statement);
    const tf = new Map();
    for (const w of toks) tf.set(w, (tf.get(w) ?? 0) + 1);
    return { len: toks.length, tf };
  });
  const df = new Map();
  for (const d of docs) for (const w of d.tf.keys()) df.set(w, (df.get(w) ?? 0) + 1);
  const avg = docs.reduce((n, d) => n + d.len, 0) / docs.length;
  return { docs, df, avg, n: docs.length };
}

/** BM25 (k1 1.2, b 0.75, FTS5's idf floor), greedy pack with skip; ties go to the later turn. */
function bm25Pack(index, turns, query, budget) {
  const terms = [...new Set(tokenize(query))];
  const k1 = 1.2,
    b = 0.75;
  const scored = [];
  index.docs.forEach((d, i) => {
    let s = 0;
    let hit = false;
    for (const w of terms) {
      const f = d.tf.get(w);
      if (!f) continue;
      hit = true;
      const n = index.df.get(w);
      let idf = Math.log((index.n - n + 0.5) / (n + 0.5));
      if (idf <= 0) idf = 1e-6;
      s += (idf * (f * (k1 + 1))) / (f + k1 * (1 - b + (b * d.len) / index.avg));
    }
    if (hit) scored.push({ i, s });
  });
  scored.sort((x, y) => y.s - x.s || y.i - x.i);
  const out = [];
  let used = 0;
  for (const { i } of scored) {
    if (out.length >= MAX_ITEMS) break;
    const tk = estimateTokens(turns[i].statement);
    if (used + tk > budget) continue;
    out.push(turns[i].dia);
    used += tk;
  }
  return { ids: out, used };
}

// ---- the run ----------------------------------------------------------------------------------

async function seed(server, key, c) {
  const subject = `locomo:${c.name}`;
  const obsIds = new Array(c.turns.length);
  await pool(c.turns.length, 8, async (i) => {
    const t = c.turns[i];
    const r = await apiOk(server.url, key, "POST", "/v1/observations", {
      subject_id: subject,
      kind: "message",
      content: t.text,
      source: { type: "locomo", ref: t.dia },
      ...(t.at && !args["no-event-time"] ? { occurred_at: t.at } : {}),
    });
    obsIds[i] = r.json.data.observation_id;
  });
  // Claims go in conversation order (one consolidation per run of up to 50 turns of one session).
  const claimByDia = new Map();
  const diaByClaim = new Map();
  for (let i = 0; i < c.turns.length;) {
    let j = i;
    while (j < c.turns.length && j - i < 50 && c.turns[j].session === c.turns[i].session) j++;
    const batch = c.turns.slice(i, j);
    const r = await apiOk(server.url, key, "POST", "/v1/consolidations", {
      subject_id: subject,
      claims: batch.map((t, k) => ({
        kind: "fact",
        statement: t.statement,
        sources: [{ observation_id: obsIds[i + k], relation: "supports" }],
      })),
    });
    r.json.data.claims.forEach((cl, k) => {
      claimByDia.set(batch[k].dia, cl.claim_id);
      diaByClaim.set(cl.claim_id, batch[k].dia);
    });
    i = j;
  }
  return { subject, claimByDia, diaByClaim };
}

async function main() {
  const path = args._[0] ? resolve(process.cwd(), args._[0]) : defaultPath();
  if (!path || !existsSync(path)) {
    log("usage: npm run bench:recall -- <LoCoMo .json file or folder> (default ../shared/data/locomo)");
    process.exit(2);
  }
  const convs = loadConversations(path).map((c) => ({ ...c, turns: turnsOf(c.conv), half: halfOf(c.name) }));
  if (!convs.length) throw new Error(`no LoCoMo conversations in ${path}`);
  const limitQ = args["limit-questions"] ? Number(args["limit-questions"]) : Infinity;
  const perOrg = !!args["org-per-conversation"];
  log(
    `recall bench: ${convs.length} conversations from ${path}; budgets ${BUDGETS.join(", ")}; ${perOrg ? "one organization per conversation" : "one organization"}; questions of ${HALVES.join(" and ")}`,
  );

  const server = await startServer({
    label: "recall",
    vars: args.vars
      ? Object.fromEntries(
          String(args.vars)
            .split(",")
            .map((kv) => kv.split("=")),
        )
      : {},
  });
  log(`server ${server.url} (state ${server.stateDir})`);
  // tallies[half][system][cat][budget] = { held, total, questions, full, tokens, qrecall }
  const tallies = { tune: { compile: {}, bm25: {} }, check: { compile: {}, bm25: {} } };
  const bump = (half, sys, cat, budget, held, total, tokens) => {
    const t = ((tallies[half][sys][cat] ??= {})[budget] ??= {
      held: 0,
      total: 0,
      questions: 0,
      full: 0,
      tokens: 0,
      qrecall: 0,
    });
    t.held += held;
    t.total += total;
    t.questions++;
    t.full += held === total ? 1 : 0;
    t.tokens += tokens;
    t.qrecall += held / total;
  };
  const misses = [];
  let droppedEvidence = 0,
    skippedQuestions = 0,
    turnsTotal = 0,
    questionsTotal = 0,
    vectorsIndexed = 0,
    hybridPacks = 0,
    packs = 0;
  const started = Date.now();
  try {
    // Store every conversation first (one organization, or one each), then fill the index(es).
    const shared = perOrg ? null : (await newOrg(server)).api_key;
    for (const c of convs) {
      const t0 = Date.now();
      c.key = shared ?? (await newOrg(server)).api_key;
      Object.assign(c, await seed(server, c.key, c));
      turnsTotal += c.turns.length;
      log(`  ${c.name} (${c.half}): ${c.turns.length} turns stored in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
    }
    if (!args["no-vectors"])
      for (const key of new Set(convs.map((c) => c.key))) {
        const t1 = Date.now();
        const n = await fillIndex(server, key);
        if (n != null) {
          vectorsIndexed += n;
          log(`  ${n} vectors indexed in ${((Date.now() - t1) / 1000).toFixed(1)}s`);
        }
      }
    for (const c of convs) {
      if (!HALVES.includes(c.half)) continue;
      if (Date.now() > DEADLINE) {
        log("time bound reached; stopping early");
        break;
      }
      const known = new Set(c.turns.map((t) => t.dia));
      const index = bm25Index(c.turns);
      const questions = [];
      for (const q of c.qa) {
        if (!CATEGORIES[q.category] || typeof q.question !== "string") continue;
        const ev = evidenceIds(q.evidence, known);
        droppedEvidence += ev.dropped;
        if (!ev.ids.length) {
          skippedQuestions++;
          continue;
        }
        questions.push({ q: q.question, cat: q.category, ev: ev.ids });
      }
      const qs = questions.slice(0, limitQ);
      questionsTotal += qs.length;
      const jobs = qs.flatMap((q) => BUDGETS.map((budget) => ({ q, budget })));
      await pool(
        jobs.length,
        4,
        async (i) => {
          const { q, budget } = jobs[i];
          const body = { query: q.q, subject_id: c.subject, token_budget: budget, max_items: MAX_ITEMS };
          const r = await apiOk(server.url, c.key, "POST", "/v1/context/compile", body);
          const got = new Set(r.json.data.items.map((it) => c.diaByClaim.get(it.claim_id)));
          if (args.misses && budget === 1000)
            await recordMisses(server.url, c.key, c, q, got, r.json.data.items, c.diaByClaim, misses);
          packs++;
          if (r.json.meta?.degraded?.vectors === false) hybridPacks++;
          bump(
            c.half,
            "compile",
            q.cat,
            budget,
            q.ev.filter((e) => got.has(e)).length,
            q.ev.length,
            r.json.data.tokens_used,
          );
          const base = bm25Pack(index, c.turns, q.q, budget);
          const bset = new Set(base.ids);
          bump(c.half, "bm25", q.cat, budget, q.ev.filter((e) => bset.has(e)).length, q.ev.length, base.used);
        },
        { deadline: DEADLINE, onProgress: progress(`${c.name} compiles`, 5_000) },
      );
    }
  } finally {
    await server.stop();
  }

  // ---- report ----
  const sum = (half, sys, cat, budget) => {
    if (cat !== "all") return tallies[half][sys][cat]?.[budget];
    const acc = { held: 0, total: 0, questions: 0, full: 0, tokens: 0, qrecall: 0 };
    for (const c of Object.keys(tallies[half][sys]))
      for (const k of Object.keys(acc)) acc[k] += tallies[half][sys][c][budget]?.[k] ?? 0;
    return acc.questions ? acc : undefined;
  };
  const ratioAt = (half, budget) => {
    const a = sum(half, "compile", "all", budget),
      b = sum(half, "bm25", "all", budget);
    return a && b ? a.held / a.total / (b.held / b.total) : NaN;
  };
  const header = [
    "budget",
    "category",
    "questions",
    "evidence turns",
    "compile recall %",
    "BM25 recall %",
    "ratio",
    "compile per-question %",
    "BM25 per-question %",
    "compile tokens/pack",
    "BM25 tokens/pack",
  ];
  const tableOf = (half) => {
    const cats = [
      ...Object.keys(CATEGORIES)
        .map(Number)
        .filter((c) => tallies[half].compile[c]),
      "all",
    ];
    const rows = [];
    for (const budget of BUDGETS)
      for (const cat of cats) {
        const a = sum(half, "compile", cat, budget),
          b = sum(half, "bm25", cat, budget);
        if (!a || !b) continue;
        const ra = a.held / a.total,
          rb = b.held / b.total;
        rows.push([
          String(budget),
          cat === "all" ? "**all (1-4)**" : `${cat} ${CATEGORIES[cat]}`,
          String(a.questions),
          String(a.total),
          fmt(100 * ra),
          fmt(100 * rb),
          fmt(ra / rb, 2) + "×",
          fmt((100 * a.qrecall) / a.questions),
          fmt((100 * b.qrecall) / b.questions),
          fmt(a.tokens / a.questions, 0),
          fmt(b.tokens / b.questions, 0),
        ]);
      }
    return table(header, rows);
  };
  const names = (half) =>
    convs
      .filter((c) => c.half === half)
      .map((c) => c.name)
      .join(", ");
  const summary = (half) => {
    const parts = BUDGETS.map((b) => {
      const a = sum(half, "compile", "all", b),
        x = sum(half, "bm25", "all", b);
      return a && x
        ? `${b}: ${fmt((100 * a.held) / a.total)} vs ${fmt((100 * x.held) / x.total)}% (${fmt(ratioAt(half, b), 2)}×)`
        : null;
    }).filter(Boolean);
    return `**${half} half (${names(half)}):** ${parts.join("; ")}`;
  };
  const minutes = ((Date.now() - started) / 60_000).toFixed(1);
  const sections = HALVES.map(
    (h) => `### ${h === "tune" ? "Tune" : "Check"} half: conversations ${names(h)}\n\n${tableOf(h)}`,
  ).join("\n\n");
  const md = `## Retrieval quality (\`npm run bench:recall\`)

${machineLine()}

Data: ${convs.length} LoCoMo conversation(s) from \`${path.startsWith(resolve(root, "..")) ? "../" + path.slice(resolve(root, "..").length + 1) : basename(path)}\`, ${turnsTotal} turns stored, ${questionsTotal} questions of categories 1-4 asked
(${skippedQuestions} without a usable evidence id skipped; ${droppedEvidence} evidence ids that name no turn dropped). Each turn is one
observation (\`occurred_at\` = its session's date and time) and one claim whose statement is \`[session date] speaker: text\` plus
\`[photo: caption]\` when the turn shares one. ${perOrg ? "Each conversation is its own organization." : "All conversations are in **one organization**, each conversation one subject (`locomo:<name>`)."}
**compile** = \`POST /v1/context/compile\` with \`{ query: question, subject_id: the conversation's subject, token_budget, max_items: ${MAX_ITEMS} }\`
over HTTP; **BM25** = plain BM25 (unicode61-style words, Porter stems, k1 1.2, b 0.75) ranked over the **same conversation's turns**
only (its statistics too), packed greedily by score into the same budget with the same token estimate (\`ceil(UTF-8 bytes / 4)\`).
Recall = evidence turns held / evidence turns (micro-average); per-question = mean of each question's recall. The conversations
are split into two fixed halves by name (tune: ${names("tune")}; check: ${names("check")}); ranking constants are chosen on the tune
half only. Run time ${minutes} min.
Vectors: ${vectorsIndexed ? `${vectorsIndexed} claims indexed before the questions; ${hybridPacks} of ${packs} packs hybrid (\`meta.degraded.vectors: false\`)` : "none (lexical compile only)"}.

${HALVES.map(summary).join("  \n")}

${sections}

**Recall at 1000 tokens, all categories: ${HALVES.map((h) => `${h} half ${fmt(ratioAt(h, 1000), 2)}×`).join(", ")} the BM25 baseline** (target: 1.35× on the check half).`;
  if (args.write !== false && !args["no-write"] && HALVES.length === 2 && limitQ === Infinity)
    writeSection("recall", md);
  console.log(md);
  if (args.misses) reportMisses(String(args.misses), misses);
}

/** `--misses`: where each evidence turn the 1000-token pack missed ranks among the MAX_ITEMS best. */
async function recordMisses(url, key, c, q, got, packed, diaByClaim, misses) {
  const missed = q.ev.filter((e) => !got.has(e));
  if (!missed.length) return;
  const r = await apiOk(url, key, "POST", "/v1/context/compile", {
    query: q.q,
    subject_id: c.subject,
    token_budget: 32_000,
    max_items: MAX_ITEMS,
  });
  const order = r.json.data.items.map((it) => diaByClaim.get(it.claim_id));
  const last = packed.length ? packed[packed.length - 1].score : null;
  for (const e of missed) {
    const k = order.indexOf(e);
    misses.push({
      conversation: c.name,
      question: q.q,
      category: q.cat,
      evidence: e,
      statement: c.turns.find((t) => t.dia === e).statement,
      rank: k < 0 ? null : k + 1,
      score: k < 0 ? null : r.json.data.items[k].score,
      last_packed_score: last,
      packed: packed.length,
    });
  }
}

function reportMisses(file, misses) {
  writeFileSync(file, JSON.stringify(misses, null, 1));
  const buckets = [
    ["rank 1-40", (m) => m.rank !== null && m.rank <= 40],
    ["rank 41-80", (m) => m.rank > 40 && m.rank <= 80],
    ["rank 81-200", (m) => m.rank > 80],
    [`not among the ${MAX_ITEMS} best`, (m) => m.rank === null],
  ];
  log(`misses at 1000 tokens: ${misses.length} evidence turns (written to ${file})`);
  for (const [label, test] of buckets) {
    const ms = misses.filter(test);
    const byCat = Object.keys(CATEGORIES)
      .map((k) => `${CATEGORIES[k]} ${ms.filter((m) => m.category === Number(k)).length}`)
      .join(", ");
    log(`  ${label}: ${ms.length} (${byCat})`);
  }
  const ranked = misses.filter((m) => m.rank !== null);
  log(
    `  ranked, within 0.05 of the last packed item's score: ${ranked.filter((m) => m.last_packed_score - m.score < 0.05).length} of ${ranked.length}`,
  );
}

main().catch((err) => {
  log(String(err?.stack ?? err));
  process.exit(1);
});
