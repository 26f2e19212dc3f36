// Shared by the benchmark and load scripts (npm run bench, bench:recall, load): start a private
// server on loopback with its own temporary state folder, create organizations, call the API,
// summarize timings, and rewrite one marked section of docs/BENCHMARKS.md.
//
// Each server runs a snapshot of the code taken when it starts (`wrangler deploy --dry-run` into the
// temporary folder, then scripts/serve.mjs --no-bundle on that bundle), so edits made to the working
// tree while a run is going on neither reload nor break it. Like `npm start`, it opens no inspector
// and puts no secret on a command line (the token and pepper are files in its state folder).
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync, mkdirSync } from "node:fs";
import { cpus, totalmem, tmpdir, platform, release } from "node:os";
import { join, resolve } from "node:path";
import { bootstrapVia, freePort, root, waitHealthy } from "./local.mjs";
import { prng, zipfText } from "./synthetic-text.mjs";

export { prng, root };
const wrangler = join(root, "node_modules", ".bin", "wrangler");
const quietEnv = { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true", NO_UPDATE_NOTIFIER: "1" };

export const log = (...a) => process.stderr.write(a.join(" ") + "\n");
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Parse `--name value` / `--flag` arguments; positional ones land in `_`. */
export function parseArgs(argv = process.argv.slice(2)) {
  const out = { _: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith("--")) {
      const [k, v] = a.slice(2).split("=", 2);
      if (v !== undefined) out[k] = v;
      else if (i + 1 < argv.length && !argv[i + 1].startsWith("--")) out[k] = argv[++i];
      else out[k] = true;
    } else out._.push(a);
  }
  return out;
}

/**
 * Start a server for `config` (a wrangler config path relative to the repository) on a free
 * loopback port with a fresh temporary state folder. Returns { url, port, stateDir, token, stop }.
 */
export async function startServer({ config = "wrangler.toml", label = "server", vars = {}, pepper } = {}) {
  const stateDir = mkdtempSync(join(tmpdir(), `svc-${label}-`));
  const token = (await import("node:crypto")).randomBytes(32).toString("hex");
  const build = join(stateDir, "build");
  const configPath = resolve(root, config);
  // Snapshot: bundle the Worker as it is now.
  const b = spawnSync(wrangler, ["deploy", "--dry-run", "--outdir", build, "-c", configPath], {
    cwd: root,
    env: quietEnv,
    encoding: "utf8",
  });
  if (b.status !== 0) throw new Error(`bundling ${config} failed:\n${b.stdout}\n${b.stderr}`);
  // A copy of the config that serves the bundle; relative paths in it are made absolute.
  const cfgDir = resolve(configPath, "..");
  const text = readFileSync(configPath, "utf8")
    .replace(/^main\s*=.*$/m, `main = ${JSON.stringify(join(build, "worker.js"))}`)
    .replace(
      /^(\s*(?:migrations_dir|directory)\s*=\s*)"([^"]+)"/gm,
      (_, k, p) => `${k}${JSON.stringify(resolve(cfgDir, p))}`,
    );
  const snapConfig = join(stateDir, "wrangler.toml");
  writeFileSync(snapConfig, text);
  const persist = join(stateDir, "state");
  mkdirSync(persist, { recursive: true });
  // scripts/serve.mjs reads these from its state folder (SVC_STATE_DIR) into secret bindings.
  writeFileSync(join(persist, "operator.json"), JSON.stringify({ token }), { mode: 0o600 });
  if (pepper) writeFileSync(join(persist, "pepper.json"), JSON.stringify({ pepper }), { mode: 0o600 });
  const m = spawnSync(
    wrangler,
    ["d1", "migrations", "apply", "INDEX_DB", "--local", "--persist-to", persist, "-c", snapConfig],
    { cwd: root, env: quietEnv, encoding: "utf8" },
  );
  if (m.status !== 0) throw new Error(`applying local D1 migrations failed:\n${m.stdout}\n${m.stderr}`);
  const port = await freePort();
  const logFile = join(stateDir, "wrangler.log");
  const fd = openSync(logFile, "a");
  const args = [
    join(root, "scripts", "serve.mjs"),
    "--port",
    String(port),
    "--config",
    snapConfig,
    "--no-bundle",
    "--quiet",
  ];
  // Plain, non-secret values only: they are on the command line.
  for (const [k, v] of Object.entries(vars)) args.push("--var", `${k}=${v}`);
  const env = { ...quietEnv, SVC_STATE_DIR: persist };
  delete env.OPERATOR_TOKEN;
  delete env.SVC_OPERATOR_TOKEN;
  const child = spawn(process.execPath, args, { cwd: root, env, stdio: ["ignore", fd, fd], detached: true });
  const url = `http://127.0.0.1:${port}`;
  let stopped = false;
  const stop = async ({ keep = false } = {}) => {
    if (stopped) return;
    stopped = true;
    if (child.exitCode == null) {
      const exited = new Promise((r) => child.once("exit", r));
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        /* already gone */
      }
      await Promise.race([exited, sleep(5_000)]);
      if (child.exitCode == null)
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          /* gone */
        }
    }
    if (!keep && !process.env.BENCH_KEEP_STATE) rmSync(stateDir, { recursive: true, force: true });
  };
  stopOnExit.add(stop);
  try {
    await waitHealthy(url, child, 120_000);
  } catch (err) {
    await stop({ keep: true });
    throw new Error(`${err.message}; see ${logFile}`);
  }
  return { url, port, stateDir, token, logFile, pid: child.pid, stop };
}

const stopOnExit = new Set();
let exiting = false;
for (const sig of ["SIGINT", "SIGTERM"])
  process.on(sig, async () => {
    if (exiting) return;
    exiting = true;
    await Promise.all([...stopOnExit].map((s) => s().catch(() => {})));
    process.exit(130);
  });

export const newOrg = (server) => bootstrapVia(server.url, server.token);

/** One JSON API call. Returns { status, json, ms }. */
export async function api(url, key, method, path, body, headers = {}) {
  const t0 = performance.now();
  const r = await fetch(url + path, {
    method,
    headers: {
      authorization: `Bearer ${key}`,
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
      ...headers,
    },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  const ms = performance.now() - t0;
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = { raw: text.slice(0, 200) };
  }
  return { status: r.status, json, text, ms };
}

/** Like api(), but throws unless the status is one of `ok`. */
export async function apiOk(url, key, method, path, body, ok = [200, 201], headers = {}) {
  const r = await api(url, key, method, path, body, headers);
  if (!ok.includes(r.status)) throw new Error(`${method} ${path} -> ${r.status} ${r.text.slice(0, 300)}`);
  return r;
}

/** CPU ms a process's main (event-loop) thread has run so far (schedstat, ns precision). */
export const threadCpuMs = (pid) =>
  Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, "utf8").split(" ")[0]) / 1e6;

/**
 * While `run` goes, sample the thread's scheduler state every millisecond: the share of samples it was
 * running or waiting for a core (R), waiting on disk (D: fsync) or idle (S: nothing to do).
 */
export async function threadStates(pid, run) {
  const counts = { R: 0, D: 0, S: 0 };
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      try {
        const st = readFileSync(`/proc/${pid}/task/${pid}/stat`, "utf8");
        const c = st[st.lastIndexOf(")") + 2];
        counts[c === "R" || c === "D" ? c : "S"]++;
      } catch {
        /* gone */
      }
      await sleep(1);
    }
  })();
  try {
    await run();
  } finally {
    sampling = false;
    await sampler;
  }
  const total = counts.R + counts.D + counts.S || 1;
  return { R: (100 * counts.R) / total, D: (100 * counts.D) / total, S: (100 * counts.S) / total };
}

/** Run `fn(i)` for i in [0, n) with at most `concurrency` in flight; stops early past `deadline` (ms epoch). */
export async function pool(n, concurrency, fn, { deadline = Infinity, onProgress } = {}) {
  let next = 0;
  let done = 0;
  const results = new Array(n);
  async function worker() {
    while (next < n && Date.now() < deadline) {
      const i = next++;
      results[i] = await fn(i);
      done++;
      if (onProgress) onProgress(done, n);
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
  return { results, done };
}

export function percentile(values, p) {
  if (!values.length) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const idx = Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1));
  return s[idx];
}
export const median = (values) => percentile(values, 50);
export const fmt = (x, digits = 1) => (Number.isFinite(x) ? x.toFixed(digits) : "n/a");

/** Progress printer that writes at most every `everyMs`. */
export function progress(label, everyMs = 2_000) {
  let last = 0;
  return (done, total) => {
    const now = Date.now();
    if (now - last >= everyMs || done === total) {
      last = now;
      log(`  ${label}: ${done}/${total}`);
    }
  };
}

export function versions() {
  const pkg = (name) => {
    try {
      return JSON.parse(readFileSync(join(root, "node_modules", name, "package.json"), "utf8")).version;
    } catch {
      return "?";
    }
  };
  let commit = "?";
  try {
    commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], {
      cwd: root,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    /* not a checkout */
  }
  const cpu = cpus();
  return {
    date: new Date().toISOString().replace(/\.\d+Z$/, "Z"),
    cpu: `${cpu[0]?.model ?? "?"} × ${cpu.length}`,
    memory: `${Math.round(totalmem() / 2 ** 30)} GiB`,
    os: `${platform()} ${release()}`,
    node: process.version,
    wrangler: pkg("wrangler"),
    workerd: pkg("workerd"),
    autocannon: pkg("autocannon"),
    commit,
  };
}

export function machineLine() {
  const v = versions();
  return (
    `Measured ${v.date} on ${v.cpu}, ${v.memory}, ${v.os}; Node ${v.node}, wrangler ${v.wrangler}, ` +
    `workerd ${v.workerd}, autocannon ${v.autocannon}; commit ${v.commit} (plus uncommitted changes, if any). ` +
    `Local workerd via wrangler's dev API (\`scripts/serve.mjs\`, no inspector); the machine is shared, so compare ratios from the same run.`
  );
}

export const BENCH_DOC = join(root, "docs", "BENCHMARKS.md");

const DOC_HEAD = `# Benchmarks

Every number here comes from a script anyone can rerun; nothing is a timed test. Each script starts
its own local server (a snapshot of the code, a temporary state folder, a free loopback port), stops
it at the end and rewrites only its own part below, between its markers, so runs compose. The
machine is a shared, noisy 2-core one: compare medians and ratios measured within one run, not
absolute numbers across runs. Each part names its machine, versions and commit.

## How to rerun

| Command | Measures | Options |
| --- | --- | --- |
| \`npm run bench:recall [-- <LoCoMo file or folder>]\` | retrieval quality of compile against plain BM25 (default data \`../shared/data/locomo\`, never copied here) | \`--no-vectors\` (lexical compile), \`--budgets\`, \`--limit-questions\`, \`--misses FILE\` (where missed evidence ranks) |
| \`npm run bench\` | parts 1-9 and 11: append against a bare insert, compile and search as an organization grows, many tenants, drain and export, login, channels, federation, retention, Atlas, vectors on and off | \`--parts append,append-cpu,scale,tenants,drain,login,channels,federation,retention,atlas,vectors,footprint\` (footprint and append-cpu alone are not in the default list), \`--sizes\` (default 1000,10000,50000,200000), \`--samples\` (150), \`--duration\` (5 s), \`--rounds\` (3), \`--cpu-requests\`, \`--footprint-n\`, \`--retention-claims\`, \`--atlas-claims\`, \`--atlas-samples\`, \`--releases\`, \`--federation-events\`, \`--federation-bundles\`, \`--max-minutes\` |
| \`npm run bench:webhooks\` | part 10: commit-to-delivery latency, slow and failing receivers, receiver outages | \`--parts latency,slow,flaky,outage\`, \`--latency-events\`, \`--slow-events\`, \`--flaky-events\`, \`--outage-events\` |
| \`npm run load\` | integrity under 32 concurrent writers: lost writes, 5xx, duplicate retries | \`--writers\`, \`--appends\`, \`--orgs\`, \`--retry-share\`, \`--phases\` |
| \`npm run bench -- --parts footprint\` | bytes per row and one organization's write rate, into \`docs/footprint.json\` for \`npm run plan\` | \`--footprint-n\` |
| \`npx vitest run --config bench/vitest.profile.config.ts\` | compile and search in process, phase by phase, answers hashed (no HTTP) | \`PROFILE_SIZES=1000,50000\` |
| \`npx vitest run --config bench/vitest.vector.config.ts\` | the vector query alone at 1k / 50k / 200k vectors, exact against the plain scan | \`__VEC_SIZES\` |

\`npm run bench\` serves \`bench/wrangler.toml\`: the product's Worker unchanged, plus bench-only routes
under \`/__bench/\` (a bare SQLite insert, a dispatch timed inside the organization's object, a phase
profile) that are not in the product's route table.
`;

/** Replace (or append) the section between `<!-- BEGIN name -->` and `<!-- END name -->`. */
export function writeSection(name, markdown) {
  const begin = `<!-- BEGIN ${name} (generated by a script; edits inside are overwritten) -->`;
  const end = `<!-- END ${name} -->`;
  mkdirSync(join(root, "docs"), { recursive: true });
  let doc = existsSync(BENCH_DOC) ? readFileSync(BENCH_DOC, "utf8") : DOC_HEAD;
  const block = `${begin}\n${markdown.trim()}\n${end}`;
  const re = new RegExp(`<!-- BEGIN ${name} [^\\n]*-->[\\s\\S]*?<!-- END ${name} -->`);
  doc = re.test(doc) ? doc.replace(re, () => block) : `${doc.trimEnd()}\n\n${block}\n`;
  writeFileSync(BENCH_DOC, doc);
  log(`wrote section "${name}" of ${BENCH_DOC}`);
}

/** Markdown table from a header row and rows of cells. */
export function table(header, rows) {
  const line = (cells) => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

// ---- deterministic synthetic text ---------------------------------------------------------------

// The local embedder's own vocabulary (src/generated/glove-table.ts, the 10,000 most frequent English
// words in frequency order), read out of the table file so it stays in step with the table: statements
// and queries made of words the embedder knows embed to real vectors, so a hybrid compile's vector step
// finds real neighbours (made-up words all embed to zero and find none).
const readSource = (path) => readFileSync(join(root, path), "utf8");
function tableWords() {
  const m = /^\s*words: "([a-z0-9 ]+)",?$/m.exec(readSource("src/generated/glove-table.ts"));
  if (!m) throw new Error("src/generated/glove-table.ts: no `words` line (the table's format changed?)");
  return m[1].split(" ");
}
/** compile's and the embedder's stopwords (src/text/stopwords.ts STOPWORDS), read out of the source. */
function ftsStopwords() {
  const m = /export const STOPWORDS\b[^=]*= new Set\(\s*\(([\s\S]*?)\)\.split\(" "\),?\s*\)/.exec(
    readSource("src/text/stopwords.ts"),
  );
  if (!m) throw new Error("src/text/stopwords.ts: no STOPWORDS list (its format changed?)");
  return new Set(
    [...m[1].matchAll(/"([^"]*)"/g)]
      .map((q) => q[1])
      .join("")
      .split(" "),
  );
}
export const VOCAB = tableWords();
export const STOPWORDS = ftsStopwords();
// Zipf(1.07) over the vocabulary by frequency rank (scripts/synthetic-text.mjs, shared with the in-process benches).
const text = zipfText(VOCAB, STOPWORDS);
export const { word: zipfWord, informativeWord, statement, queryWords } = text;

/**
 * Fill the vector index the way an operator would: verify pages (queueing whatever the index lacks),
 * then drain until the queue is empty (the server's own timer may drain part of it first). Returns the
 * claims the index then holds (a last verify pass), or null when the server has no vector routes.
 */
export async function fillIndex(server, key) {
  const verifyAll = async () => {
    let present = 0,
      missing = 0;
    for (let after; ;) {
      const v = await api(server.url, key, "POST", "/v1/index/verify", after ? { after } : {});
      if (v.status !== 200) return null;
      present += v.json.data.present;
      missing += v.json.data.missing + (v.json.data.pending ?? 0);
      after = v.json.data.next_after;
      if (!after) break;
    }
    return { present, missing };
  };
  if (!(await verifyAll())) return null;
  await drainIndex(server, key);
  const after = await verifyAll();
  if (after.missing) throw new Error(`${after.missing} claims still missing from the index after draining`);
  return after.present;
}

/** The drain route's largest page (src/domains/indexing/schema.ts INDEX_DRAIN_MAX). */
export const DRAIN_PAGE = 100;

/**
 * Drain the organization's index queue through `POST /v1/index/drain` (pages of DRAIN_PAGE, `concurrency`
 * requests in flight; the organization's object runs them one after another, each on the queue's next
 * rows, so two in flight only overlap one's HTTP with the other's work) until a drain answers that
 * nothing remains. The server's own timer, if it runs, drains beside it. Returns the drains sent.
 */
export async function drainIndex(server, key, { concurrency = 2, maxDrains = 100_000 } = {}) {
  let sent = 0,
    empty = false;
  const worker = async () => {
    while (!empty) {
      if (++sent > maxDrains) throw new Error("the index queue did not drain");
      const d = await apiOk(server.url, key, "POST", "/v1/index/drain", { limit: DRAIN_PAGE });
      if (d.json.data.remaining === 0) empty = true;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return sent;
}
