#!/usr/bin/env node
// npm run bench [-- --parts append,scale,tenants,drain,login,channels,federation,retention,atlas,vectors] [--duration 5] [--rounds 3] [--sizes 1000,10000,50000,200000]
//
// Speed, measured against the same local runtime, never by timed tests. One private server runs
// bench/wrangler.toml: the product's Worker unchanged plus bench-only routes under /__bench/ (a bare
// SQLite insert Durable Object, and a dispatch timed inside the org Durable Object). Parts:
//   append   POST /v1/observations vs the bare insert, autocannon at concurrency 1, 8, 32
//   scale    compile (hybrid: the statements are the local embedder's own words, and the vector index is
//            filled before each size) and memories search p50/p95 at 1k, 10k, 50k, 200k claims in one
//            organization, over HTTP and inside the Durable Object, and a profile of compile's phases
//   tenants  the same append load spread over 100 organizations vs one
//   drain    webhook drain to a loopback receiver (if the routes exist), and export of the large
//            organization: records per second and peak workerd memory
//   login    dashboard login round trip (password, then passkey) p50, next to the password hash's
//            cost per login measured inside the Durable Object
//   channels channel compile over 1,000 active releases beside compile over the same 1,000 claims
//   footprint  bytes per observation, claim (with FTS), event, audit entry and registry entry in a real
//            organization, and the sustained appends per second one organization takes; writes
//            docs/footprint.json, the input of `npm run plan` (not in the default parts)
//   federation  pull and push throughput (events per second, 200 per call) and bundle import
//            (bundles per second, 200 per push) between two organizations of the server
//   retention POST /v1/retention/apply over a --retention-claims (default 50,000) claim organization
//            whose records were aged past the policy (bench-only /__bench/age), pages of 500:
//            records examined per second, dry run and real run, with 1% of the sources under a hold
//   atlas    each Memory Atlas lens's p50/p95 at max_nodes 300 in a 50,000-claim organization
//            (--atlas-claims N for a smaller run on a busy machine)
//   vectors  compile with and without vectors at the same sizes, two servers, same content
// Rounds alternate the compared cases so that drift on this shared machine hits both alike; the
// tables report medians and ratios measured within the same run. Writes docs/BENCHMARKS.md.
import autocannon from "autocannon";
import { createHmac } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { loadavg } from "node:os";
import { freePort } from "./local.mjs";
import { SoftAuthenticator } from "../test/authenticator.mjs";
import {
  drainIndex,
  fillIndex,
  queryWords,
  STOPWORDS,
  VOCAB,
  api,
  apiOk,
  fmt,
  log,
  machineLine,
  median,
  newOrg,
  parseArgs,
  percentile,
  pool,
  prng,
  progress,
  sleep,
  startServer,
  statement,
  table,
  threadCpuMs,
  threadStates,
  writeSection,
} from "./bench-lib.mjs";

const args = parseArgs();
const PARTS = new Set(
  String(args.parts ?? "append,scale,tenants,drain,login,channels,federation,retention,atlas,vectors").split(","),
);
const DURATION = Number(args.duration ?? 5); // seconds per autocannon measurement
const ROUNDS = Number(args.rounds ?? 3);
const CONCURRENCY = [1, 8, 32];
const SIZES = String(args.sizes ?? "1000,10000,50000,200000")
  .split(",")
  .map(Number);
const SAMPLES = Number(args.samples ?? 150); // latency samples per size, route and vantage point
const DEADLINE = Date.now() + Number(args["max-minutes"] ?? 60) * 60_000;

// ---- helpers ------------------------------------------------------------------------------------

/** Part 1's target: append throughput at concurrency 8 as a share of the bare insert's. */
const APPEND_TARGET = 0.8;

/** The 1-minute load average, for the record: on a shared machine it says how much else was running. */
const loadAverage = () => readFileSync("/proc/loadavg", "utf8").split(" ")[0];

async function cannon(opts) {
  const r = await autocannon({ duration: DURATION, ...opts });
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    ok: r["2xx"],
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
  };
}

const obsBody = (i = 0) =>
  JSON.stringify({
    subject_id: "bench",
    kind: "note",
    source: { type: "bench" },
    content: `Observation ${i}: the deploy pipeline for the billing service ran its checks and published build artifacts to staging.`,
  });

/** A request timed inside the org object; a dev-runtime restart mid-request (503, not JSON) is retried twice. */
async function timedInside(server, key, method, path, { query, body } = {}) {
  for (let attempt = 1; ; attempt++) {
    const r = await fetch(`${server.url}/__bench/timed`, {
      method: "POST",
      body: JSON.stringify({ key, method, path, query, body }),
    });
    const text = await r.text();
    if (r.status === 503 && attempt < 3 && !text.startsWith("{")) {
      await sleep(1000);
      continue;
    }
    const j = JSON.parse(text);
    if (r.status !== 200 || !j.ok) throw new Error(`timed ${method} ${path}: ${r.status} ${text.slice(0, 300)}`);
    return j;
  }
}

/** Processes of the server's process group that are workerd, with their resident memory (bytes). */
function workerdRss(server) {
  let total = 0;
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(fields[2]) !== server.pid) continue; // process group
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      if (!/^Name:\s*workerd/m.test(status)) continue;
      total += Number(/^VmRSS:\s*(\d+)/m.exec(status)?.[1] ?? 0) * 1024;
    } catch {
      /* gone */
    }
  }
  return total;
}
const mib = (b) => (b / 2 ** 20).toFixed(0);

// ---- part 5: dashboard login round trip -----------------------------------------------------------

/** The bench server's WebAuthn origin (any string the server lists in WEBAUTHN_ORIGINS). */
const BENCH_ORIGIN = "http://localhost";

async function partLogin(server) {
  log("part 5: dashboard login round trip");
  const org = await newOrg(server);
  const username = `bench-${Date.now().toString(36)}`;
  const created = await apiOk(server.url, org.api_key, "POST", "/v1/operator-accounts", { username, role: "member" });
  const login = async (password) => {
    const t0 = performance.now();
    const r = await fetch(`${server.url}/v1/dashboard-sessions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ username, password }),
    });
    const j = await r.json();
    if (r.status !== 201) throw new Error(`login -> ${r.status} ${JSON.stringify(j)}`);
    return { ...j.data, ms: performance.now() - t0 };
  };
  const temp = created.json.data.temporary_password;
  const password = `bench password ${Date.now()}`;
  await apiOk(server.url, (await login(temp)).session_token, "PATCH", "/v1/operator-accounts/current/password", {
    current_password: temp,
    new_password: password,
  });
  const full = (await login(password)).session_token;
  const auth = new SoftAuthenticator(BENCH_ORIGIN, "localhost");
  const reg = await apiOk(server.url, full, "POST", "/v1/operator-accounts/current/passkeys/options", {});
  await apiOk(server.url, full, "POST", "/v1/operator-accounts/current/passkeys", {
    response: await auth.create(reg.json.data.options),
  });
  const n = Number(args["login-samples"] ?? 30);
  const rows = { trip: [], password: [], options: [], assertion: [], client: [] };
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const staged = await login(password);
    const o = await apiOk(
      server.url,
      staged.session_token,
      "POST",
      "/v1/dashboard-sessions/current/passkey-options",
      {},
    );
    const c0 = performance.now();
    const response = await auth.get(o.json.data.options);
    const client = performance.now() - c0;
    const done = await apiOk(server.url, staged.session_token, "POST", "/v1/dashboard-sessions/current/passkey", {
      response,
    });
    rows.trip.push(performance.now() - t0 - client);
    rows.password.push(staged.ms);
    rows.options.push(o.ms);
    rows.assertion.push(done.ms);
    rows.client.push(client);
    await apiOk(server.url, done.json.data.session_token, "DELETE", "/v1/dashboard-sessions/current");
  }
  // The hash's cost: a route whose only real work is one password verification, against one that has none
  // (both take a full session of the account).
  const hashRoute = [],
    plainRoute = [];
  for (let i = 0; i < n; i++) {
    hashRoute.push(
      (
        await timedInside(server, full, "POST", "/v1/operator-accounts/current/recovery-codes", {
          body: { current_password: password },
        })
      ).inside_ms,
    );
    plainRoute.push((await timedInside(server, full, "GET", "/v1/operator-accounts/current/passkeys")).inside_ms);
  }
  const hashMs = median(hashRoute) - median(plainRoute);
  const md = `### 5. Dashboard login round trip

${n} logins of one account with a passkey: \`POST /v1/dashboard-sessions\` (password, stage \`staged\`), then
\`…/passkey-options\` and \`…/passkey\` (assertion, stage \`full\`), over HTTP; the software authenticator's own
signing time is left out. The password hash is PBKDF2-SHA256 at 100,000 iterations over an HMAC of the
password with the pepper; its cost per login is measured inside the org Durable Object as the median
of a route that verifies one password minus that of a route that verifies none.

${table(
  ["step", "p50 ms", "p95 ms"],
  [
    ["round trip (password + options + assertion)", fmt(median(rows.trip)), fmt(percentile(rows.trip, 95))],
    ["password login", fmt(median(rows.password)), fmt(percentile(rows.password, 95))],
    ["assertion options", fmt(median(rows.options)), fmt(percentile(rows.options, 95))],
    ["assertion verification", fmt(median(rows.assertion)), fmt(percentile(rows.assertion, 95))],
    ["password hash per login (inside the DO)", fmt(hashMs), ""],
  ],
)}`;
  return { md, p50: median(rows.trip), hashMs };
}

// ---- part 1: append vs bare insert --------------------------------------------------------------

async function partAppend(server) {
  log("part 1: append vs bare insert");
  const loadBefore = loadAverage();
  const org = await newOrg(server);
  const json = { "content-type": "application/json" };
  const targets = {
    append: {
      url: `${server.url}/v1/observations`,
      method: "POST",
      headers: { ...json, authorization: `Bearer ${org.api_key}` },
      body: obsBody(),
    },
    bare: { url: `${server.url}/__bench/bare`, method: "POST", headers: json, body: obsBody() },
  };
  for (const t of Object.values(targets)) await cannon({ ...t, connections: 8, duration: 2 }); // warm up
  const runs = {}; // `${target}:${c}` -> [result]
  const names = Object.keys(targets);
  for (let round = 0; round < ROUNDS && Date.now() < DEADLINE; round++)
    for (const c of CONCURRENCY) {
      const order = names.map((_, k) => names[(k + round) % names.length]);
      for (const name of order) {
        const r = await cannon({ ...targets[name], connections: c });
        (runs[`${name}:${c}`] ??= []).push(r);
        log(
          `  round ${round + 1} c=${c} ${name}: ${fmt(r.rps, 0)} req/s p50 ${r.p50} ms p99 ${r.p99} ms non2xx ${r.non2xx} errors ${r.errors}`,
        );
      }
    }
  const rows = [];
  const ratios = {};
  const m = (rs, k) => median(rs.map((r) => r[k]));
  for (const c of CONCURRENCY) {
    const a = runs[`append:${c}`] ?? [],
      b = runs[`bare:${c}`] ?? [];
    if (!a.length || !b.length) continue;
    const perRound = a.map((r, i) => (b[i] ? r.rps / b[i].rps : NaN)).filter(Number.isFinite);
    ratios[c] = m(a, "rps") / m(b, "rps");
    const bad = [...a, ...b].reduce((n, r) => n + r.non2xx + r.errors, 0);
    rows.push([
      String(c),
      fmt(m(a, "rps"), 0),
      `${m(a, "p50")} / ${m(a, "p99")}`,
      fmt(m(b, "rps"), 0),
      `${m(b, "p50")} / ${m(b, "p99")}`,
      `**${fmt(ratios[c], 2)}×**`,
      perRound.map((x) => fmt(x, 2)).join(", "),
      String(bad),
    ]);
  }
  const met = Number.isFinite(ratios[8]) ? (ratios[8] >= APPEND_TARGET ? "met" : "missed") : "not measured";
  const md = `### 1. Append vs the platform's floor

(a) \`POST /v1/observations\` (authenticated, validated; observation, event, chained audit entry and outbox row in one
transaction) vs (b) \`POST /__bench/bare\` (the same body as one row in a bare SQLite Durable Object). Autocannon ${DURATION} s
each, ${ROUNDS} rounds rotating; medians; ms; load average ${loadBefore} → ${loadAverage()} (this run included).

${table(["c", "(a) append req/s", "(a) p50 / p99", "(b) bare req/s", "(b) p50 / p99", "a/b", "a/b per round", "errors"], rows)}

Target: append ≥ ${APPEND_TARGET}× the bare insert at c=8 → **${met}** (${fmt(ratios[8], 2)}×).`;
  return { md, ratios };
}

// ---- part 1b: CPU per append, and where it goes -------------------------------------------------

/** CPU seconds (user + system) used so far by each workerd / node process of the server's process group. */
function groupCpu(server) {
  const out = new Map();
  const tick = 100; // USER_HZ on Linux
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (Number(f[2]) !== server.pid || !/^(workerd|node)$/.test(name)) continue;
      out.set(pid, { name, cpu: (Number(f[11]) + Number(f[12])) / tick });
    } catch {
      /* gone */
    }
  }
  return out;
}

/** Buckets for perf's native symbols (workerd is not stripped; JIT-compiled JavaScript has no symbols). */
const CPU_BUCKETS = [
  ["SQLite", /^sqlite3|^(pager|btree|vdbe|wal)/i],
  [
    "V8 JavaScript (JIT code, interpreter, builtins)",
    /^(Builtins_|\[unknown\]|0x[0-9a-f]+$|v8::internal::(Interpreter|Runtime_|Execution))|^\(JIT/,
  ],
  ["V8 runtime (GC, compiler, API calls)", /^v8::|^cppgc|^Heap|^(MarkCompact|Scavenger)/],
  ["workerd I/O, RPC, serialization (kj, capnp, workerd::)", /^(kj::|capnp::|workerd::|edgeworker|jsg::)/],
  ["kernel (syscalls, network, scheduler)", /\[k\]|^(entry_|__x64_sys|do_syscall|__sys|tcp_|ep_|__schedule)/],
  [
    "libc, allocator",
    /^(__?libc|mem(cpy|set|move|cmp)|malloc|free|_int_|tc|operator new|operator delete|__memcpy|__memset|pthread)/,
  ],
];

/** perf samples of the server's workerd processes while `run` goes, bucketed; null when perf cannot run here. */
async function perfBuckets(server, run) {
  const { spawn: spawnChild, spawnSync: spawnSyncChild } = await import("node:child_process");
  const pids = [...groupCpu(server)].filter(([, p]) => p.name === "workerd").map(([pid]) => pid);
  if (!pids.length || spawnSyncChild("perf", ["--version"]).status !== 0) return null;
  const file = `${server.stateDir}/perf.data`;
  const rec = spawnChild("perf", ["record", "-e", "cpu-clock", "-F", "997", "-p", pids.join(","), "-o", file], {
    stdio: "ignore",
  });
  await sleep(300);
  await run();
  rec.kill("SIGINT");
  await new Promise((r) => rec.once("exit", r));
  const rep = spawnSyncChild(
    "perf",
    ["report", "-i", file, "--stdio", "--no-children", "--sort", "sym", "--percent-limit", "0"],
    { encoding: "utf8", maxBuffer: 64 << 20 },
  );
  if (rep.status !== 0) return null;
  const buckets = new Map(CPU_BUCKETS.map(([n]) => [n, 0]));
  const top = [];
  for (const line of rep.stdout.split("\n")) {
    const m = /^\s*([\d.]+)%\s+\[(.)\]\s+(.*)$/.exec(line);
    if (!m) continue;
    const pct = Number(m[1]),
      sym = m[3].trim(),
      kernel = m[2] === "k";
    const bucket = kernel
      ? "kernel (syscalls, network, scheduler)"
      : (CPU_BUCKETS.find(([, re]) => re.test(sym))?.[0] ?? "other");
    buckets.set(bucket, (buckets.get(bucket) ?? 0) + pct);
    if (top.length < 12) top.push([sym.slice(0, 90), pct]);
  }
  return { buckets, top };
}

/**
 * System calls of the server's workerd processes per request while `run` makes `n` requests (strace -f -c):
 * fsync and fdatasync count durable commits, pwrite64 the pages written. Unlike throughput, these counts do
 * not move with the machine's load. Null when strace cannot attach here.
 */
async function syscallsPerRequest(server, n, run) {
  const { spawn: spawnChild, spawnSync: spawnSyncChild } = await import("node:child_process");
  const pids = [...groupCpu(server)].filter(([, p]) => p.name === "workerd").map(([pid]) => pid);
  if (!pids.length || spawnSyncChild("strace", ["-V"]).status !== 0) return null;
  const file = `${server.stateDir}/strace.txt`;
  const tr = spawnChild(
    "strace",
    ["-f", "-c", "-e", "trace=fsync,fdatasync,pwrite64,openat", "-o", file, ...pids.flatMap((p) => ["-p", p])],
    { stdio: "ignore" },
  );
  await sleep(500);
  await run();
  tr.kill("SIGINT");
  await new Promise((r) => tr.once("exit", r));
  const counts = {};
  for (const line of readFileSync(file, "utf8").split("\n")) {
    const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$/.exec(line);
    if (m) counts[m[2]] = Number(m[1]) / n;
  }
  return counts;
}

/**
 * The event-loop thread of each workerd process of the server: wrangler's dev proxy (the process listening
 * on the server's port) and the Worker's own process, whose one thread runs the front Worker, every Durable
 * Object and their alarms. Returns { worker, proxy } process ids (null when not found).
 */
function workerdThreads(server) {
  const pids = [...groupCpu(server)].filter(([, p]) => p.name === "workerd").map(([pid]) => pid);
  if (pids.length === 1) return { worker: pids[0], proxy: null }; // no separate proxy process
  const out = { worker: null, proxy: null };
  for (const pid of pids) {
    let cmd = "";
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      continue;
    }
    out[cmd.includes(`127.0.0.1:${server.port}`) ? "proxy" : "worker"] = pid;
  }
  return out;
}

async function partAppendCpu(server) {
  const n = Number(args["cpu-requests"] ?? 2000);
  log(`part 1b: CPU per request, ${n} requests per measurement at concurrency 8`);
  const org = await newOrg(server);
  const json = { "content-type": "application/json" };
  const targets = {
    append: {
      url: `${server.url}/v1/observations`,
      method: "POST",
      headers: { ...json, authorization: `Bearer ${org.api_key}` },
      body: obsBody(),
    },
    bare: { url: `${server.url}/__bench/bare`, method: "POST", headers: json, body: obsBody() },
  };
  for (const t of Object.values(targets)) await autocannon({ ...t, connections: 8, amount: 300 });
  const per = { append: [], bare: [] };
  const threads = workerdThreads(server);
  for (let round = 0; round < ROUNDS; round++)
    for (const name of round % 2 ? ["bare", "append"] : ["append", "bare"]) {
      const before = groupCpu(server);
      const threadCpu = () => ({
        worker: threads.worker && threadCpuMs(threads.worker),
        proxy: threads.proxy && threadCpuMs(threads.proxy),
      });
      const t0 = threadCpu();
      let r;
      const run = async () => {
        r = await autocannon({ ...targets[name], connections: 8, amount: n });
      };
      const states = threads.worker ? await threadStates(threads.worker, run) : (await run(), null);
      // The event-loop threads right after the run (before the pause): what the requests themselves cost.
      const t1 = threadCpu();
      await sleep(200);
      const after = groupCpu(server);
      let workerd = 0,
        node = 0;
      for (const [pid, p] of after) {
        const d = p.cpu - (before.get(pid)?.cpu ?? 0);
        if (p.name === "workerd") workerd += d;
        else node += d;
      }
      per[name].push({
        workerd: (workerd * 1000) / n,
        node: (node * 1000) / n,
        bad: r.non2xx + r.errors,
        workerThread: threads.worker ? (t1.worker - t0.worker) / n : NaN,
        proxyThread: threads.proxy ? (t1.proxy - t0.proxy) / n : NaN,
        busy: states ? states.R + states.D : NaN,
        disk: states ? states.D : NaN,
      });
      log(
        `  round ${round + 1} ${name}: workerd ${fmt((workerd * 1000) / n, 3)} ms CPU/request, wrangler's node ${fmt((node * 1000) / n, 3)}; ` +
          `Worker thread ${fmt(per[name].at(-1).workerThread, 3)} ms/request, busy ${fmt(per[name].at(-1).busy, 0)}% (disk ${fmt(per[name].at(-1).disk, 0)}%)`,
      );
    }
  const profiles = {};
  for (const name of ["append", "bare"])
    profiles[name] = await perfBuckets(server, () => autocannon({ ...targets[name], connections: 8, amount: n }));
  const syscalls = {};
  for (const name of ["append", "bare"])
    syscalls[name] = await syscallsPerRequest(server, n, () =>
      autocannon({ ...targets[name], connections: 8, amount: n }),
    );
  const m = (name, k) => median(per[name].map((x) => x[k]));
  // The native profile goes to the log: the section stays short, and the buckets are there when a change needs them.
  if (profiles.append && profiles.bare) {
    const names = [...new Set([...profiles.append.buckets.keys(), ...profiles.bare.buckets.keys()])];
    const ms = (name, b) => ((profiles[name].buckets.get(b) ?? 0) / 100) * m(name, "workerd");
    log(
      `perf buckets, workerd ms/request (append / bare):\n${names.map((b) => `  ${b}: ${fmt(ms("append", b), 3)} / ${fmt(ms("bare", b), 3)}`).join("\n")}`,
    );
    log(`top symbols of append: ${profiles.append.top.map(([s, p]) => `${s} ${fmt(p, 1)}%`).join(", ")}`);
  } else log("perf was not available: no native profile.");
  const ratio = m("append", "workerd") / m("bare", "workerd");
  const threadRatio = m("append", "workerThread") / m("bare", "workerThread");
  const calls = ["fsync", "pwrite64", "openat"];
  const sys = (name, c) => (syscalls[name] ? fmt(syscalls[name][c] ?? 0, 2) : "n/a");
  const md = `### 1b. CPU and commits per append

${n} requests of each at c=8, ${ROUNDS} rounds alternating; CPU from /proc, the Worker thread being the one event loop of every
Durable Object and the front Worker ("busy": running or waiting for a core; disk wait in parentheses); \`strace -f -c\` counts.

${table(
  [
    "target",
    "workerd CPU ms/req",
    "Worker thread ms/req (rounds)",
    "busy % (disk)",
    ...calls.map((c) => `${c}/req`),
    "errors",
  ],
  ["append", "bare"].map((name) => [
    name === "append" ? "(a) append" : "(b) bare insert",
    fmt(m(name, "workerd"), 3),
    `${fmt(m(name, "workerThread"), 3)} (${per[name].map((x) => fmt(x.workerThread, 3)).join(", ")})`,
    `${fmt(m(name, "busy"), 0)} (${fmt(m(name, "disk"), 0)})`,
    ...calls.map((c) => sys(name, c)),
    String(per[name].reduce((s, x) => s + x.bad, 0)),
  ]),
)}

Append: **${fmt(threadRatio, 2)}×** the bare insert's Worker-thread CPU (${fmt(ratio, 2)}× its workerd CPU), so ${fmt(1 / threadRatio, 2)}× is part 1's c=8 ratio when that thread is the only limit.`;
  return { md, ratio, threadRatio };
}

// ---- footprint: bytes per row and one organization's sustained write rate ------------------------

const FOOTPRINT_N = Number(args["footprint-n"] ?? 2000);

async function partFootprint(server) {
  log(`footprint: ${FOOTPRINT_N} appends, ${FOOTPRINT_N} claims, ${FOOTPRINT_N} copied events and audit entries`);
  const org = await newOrg(server);
  const size = async (copy) => {
    const r = await fetch(`${server.url}/__bench/footprint`, {
      method: "POST",
      body: JSON.stringify({ key: org.api_key, copy }),
    });
    if (r.status !== 200) throw new Error(`footprint: ${r.status} ${await r.text()}`);
    return (await r.json()).bytes;
  };
  // Warm up: the first rows of each table allocate pages that later rows share.
  const o0 = await apiOk(server.url, org.api_key, "POST", "/v1/observations", JSON.parse(obsBody(0)));
  await apiOk(server.url, org.api_key, "POST", "/v1/consolidations", {
    subject_id: "bench",
    claims: [
      {
        kind: "fact",
        statement: "warm up claim",
        sources: [{ observation_id: o0.json.data.observation_id, relation: "supports" }],
      },
    ],
  });

  // Events and audit entries alone: copies of the newest real row with fresh ids.
  let before = await size();
  const perEvent = ((await size({ table: "events", copies: FOOTPRINT_N })) - before) / FOOTPRINT_N;
  before = await size();
  const perAudit = ((await size({ table: "audit_log", copies: FOOTPRINT_N })) - before) / FOOTPRINT_N;

  // Appends: each writes one observation, one event and one audit entry (its outbox row is gone once registered).
  before = await size();
  await pool(FOOTPRINT_N, 8, (i) => apiOk(server.url, org.api_key, "POST", "/v1/observations", JSON.parse(obsBody(i))));
  const perAppend = ((await size()) - before) / FOOTPRINT_N;
  // One registry row: ids spread over 256 shards would not fill a page each, so measure one shard.
  const perRegistryEntry = (
    await (await fetch(`${server.url}/__bench/registry-entry?n=${FOOTPRINT_N}`, { method: "POST" })).json()
  ).bytes_per_entry;

  // Claims, 50 per consolidation (the maximum): each claim writes its row, a source row, its FTS row and one event; one audit entry per call.
  const sourceId = o0.json.data.observation_id;
  const rand = prng(7);
  const calls = Math.ceil(FOOTPRINT_N / 50);
  before = await size();
  await pool(calls, 4, (b) =>
    apiOk(server.url, org.api_key, "POST", "/v1/consolidations", {
      subject_id: `subject-${b % 20}`,
      claims: Array.from({ length: 50 }, () => ({
        kind: "fact",
        statement: statement(rand),
        sources: [{ observation_id: sourceId, relation: "supports" }],
      })),
    }),
  );
  const perConsolidatedClaim = ((await size()) - before) / (calls * 50);

  // Sustained appends per second into one organization (concurrency 8).
  const load = await cannon({
    url: `${server.url}/v1/observations`,
    method: "POST",
    connections: 8,
    body: obsBody(),
    headers: { "content-type": "application/json", authorization: `Bearer ${org.api_key}` },
  });
  const figures = {
    measured_at: new Date().toISOString(),
    machine: machineLine(),
    rows_per_measurement: FOOTPRINT_N,
    bytes: {
      observation: Math.round(perAppend - perEvent - perAudit),
      claim: Math.round(perConsolidatedClaim - perEvent - perAudit / 50),
      event: Math.round(perEvent),
      audit_entry: Math.round(perAudit),
      append_total: Math.round(perAppend),
      consolidated_claim_total: Math.round(perConsolidatedClaim),
      registry_entry: Math.round(perRegistryEntry),
    },
    appends_per_second_one_org: Math.round(load.rps),
    append_p99_ms: load.p99,
    notes:
      "claim includes its source link, FTS and ranking rows and its index-queue row; its vector, written by the background index drain while the claims are written, is partly counted. " +
      "append_total = observation + event + audit_entry; ~220-byte observation bodies, ~60-character claim statements.",
  };
  writeFileSync(new URL("../docs/footprint.json", import.meta.url), JSON.stringify(figures, null, 2) + "\n");
  log("wrote docs/footprint.json");
  const b = figures.bytes;
  const md = `### Footprint: bytes per row and one organization's write rate

Measured in a real organization of the bench server from \`ctx.storage.sql.databaseSize\` before and after ${FOOTPRINT_N} writes
of each kind (events and audit entries: copies of a real row; observations: appends, net of their event and audit entry; claims:
consolidations of 50, net of their events and a 50th of the audit entry). Written to \`docs/footprint.json\` for \`npm run plan\`.

${table(
  ["row", "bytes"],
  [
    ["observation (~220-byte content)", String(b.observation)],
    ["claim (with source link, FTS and ranking rows)", String(b.claim)],
    ["event", String(b.event)],
    ["audit entry", String(b.audit_entry)],
    ["one append, all rows", String(b.append_total)],
    ["one consolidated claim, all rows", String(b.consolidated_claim_total)],
    ["ownership registry entry", String(b.registry_entry)],
  ],
)}

Sustained appends into one organization at concurrency 8: **${fmt(load.rps, 0)}/s** (p99 ${load.p99} ms, ${load.non2xx + load.errors} non-2xx/errors).`;
  return { md, figures };
}

// ---- part 2: compile and search as the organization grows -----------------------------------------

/**
 * A seeding write, sent again with the same Idempotency-Key when wrangler's dev proxy answers 503
 * "restarted mid-request" (the request never reached the Worker, or its replay answers): a 200-k-claim
 * run otherwise dies on one such answer.
 */
async function seedWrite(server, key, path, body, idem) {
  for (let attempt = 1; ; attempt++) {
    const r = await api(server.url, key, "POST", path, body, { "idempotency-key": idem });
    if (r.status === 200 || r.status === 201) return r;
    if (r.status !== 503 || attempt >= 5) throw new Error(`POST ${path} -> ${r.status} ${r.text.slice(0, 300)}`);
    await sleep(1000 * attempt);
  }
}

async function seedClaims(server, key, from, to, rand, sample) {
  const batches = Math.ceil((to - from) / 50);
  const t0 = Date.now();
  await pool(
    batches,
    4,
    async (b) => {
      const n = Math.min(50, to - from - b * 50);
      const o = await seedWrite(
        server,
        key,
        "/v1/observations",
        {
          subject_id: `subject-${b % 20}`,
          kind: "document",
          content: `bench source document ${from + b * 50}`,
          source: { type: "bench" },
        },
        `seed-o-${from}-${b}`,
      );
      const claims = Array.from({ length: n }, () => {
        const s = statement(rand);
        if (sample.length < 500 && rand() < 0.05) sample.push(s);
        return {
          kind: "fact",
          statement: s,
          sources: [{ observation_id: o.json.data.observation_id, relation: "supports" }],
        };
      });
      await seedWrite(
        server,
        key,
        "/v1/consolidations",
        { subject_id: `subject-${b % 20}`, claims },
        `seed-c-${from}-${b}`,
      );
    },
    { deadline: DEADLINE, onProgress: progress(`seeding claims ${from}..${to}`, 10_000) },
  );
  return (Date.now() - t0) / 1000;
}

/** POST a bench probe; a dev-runtime restart mid-request (503, not JSON) is retried twice. */
async function probe(server, path, body) {
  for (let attempt = 1; ; attempt++) {
    const r = await fetch(`${server.url}${path}`, { method: "POST", body: JSON.stringify(body) });
    const text = await r.text();
    if (r.status === 200) return JSON.parse(text);
    if (attempt >= 3) throw new Error(`${path}: ${r.status} ${text.slice(0, 200)}`);
    await sleep(1000);
  }
}

const probeSql = (server, key, sql, args, reps = 1) => probe(server, "/__bench/sql", { key, sql, args, reps });

/**
 * Mean ms per compile of each phase (the vector query, rankClaims' marks, pack and JSON) and the
 * SQLite rows one compile reads (its read-rule and candidate reads, the vector query's included).
 */
async function profileCompile(server, key, queries) {
  const { "SQLite rows read per compile": rowsRead, ...phases } = await probe(server, "/__bench/profile", {
    key,
    bodies: queries.map((query) => ({ query })),
    reps: 3,
  });
  return { phases, rowsRead };
}

/** The organization's local vector index: counters since its object started, what its copy holds, its bound (/__bench/vector-stats). */
const vectorStats = (server, key) => probe(server, "/__bench/vector-stats", { key });

/** Vectors the organization's local index holds (a bench-only read of its table). */
const indexedVectors = async (server, key) =>
  (await probeSql(server, key, "SELECT count(*) AS n FROM local_vectors", [])).first.n;

/**
 * Part 2's index fill: what the server's timer had indexed when seeding ended, then the rest drained
 * through POST /v1/index/drain (timed; the timer keeps draining beside it), then a check that the index
 * holds every claim, so that each size is measured with a full index and nothing draining.
 */
async function fillScaleIndex(server, key, size) {
  const duringSeeding = await indexedVectors(server, key);
  const t0 = Date.now();
  const drains = await drainIndex(server, key);
  const seconds = (Date.now() - t0) / 1000;
  const held = await indexedVectors(server, key);
  if (held < size) throw new Error(`the vector index holds ${held} of ${size} claims after draining`);
  return { duringSeeding, seconds, drains, held };
}

/** Search queries: two informative words (stopwords left out, as for compile) of stored statements (all words must match, so there is a hit). */
const searchQueriesFrom = (sample) =>
  Array.from({ length: 50 }, (_, i) => {
    const all = sample[(i * 7) % sample.length].split(" ");
    const telling = all.filter((w) => !STOPWORDS.has(w));
    const words = telling.length >= 2 ? telling : all;
    return `${words[i % words.length]} ${words[(i * 3 + 1) % words.length]}`;
  });

/** One round of part 2's four requests against one organization, each latency pushed onto `lat`. */
async function scaleRound(server, key, q, s, lat) {
  const c = await apiOk(server.url, key, "POST", "/v1/context/compile", { query: q, token_budget: 1000 });
  lat.compileHttp.push(c.ms);
  lat.items.push(c.json.data.items.length);
  if (c.json.meta?.degraded?.vectors === false) lat.hybrid++;
  const ci = await timedInside(server, key, "POST", "/v1/context/compile", { body: { query: q, token_budget: 1000 } });
  lat.compileIn.push(ci.inside_ms);
  const m = await apiOk(server.url, key, "GET", `/v1/memories?q=${encodeURIComponent(s)}&limit=25`);
  lat.searchHttp.push(m.ms);
  const mi = await timedInside(server, key, "GET", "/v1/memories", { query: { q: s, limit: "25" } });
  lat.searchIn.push(mi.inside_ms);
}

const newLatencies = () => ({ compileHttp: [], compileIn: [], searchHttp: [], searchIn: [], items: [], hybrid: 0 });

async function partScale(server) {
  log("part 2: compile and search as the organization grows");
  const org = await newOrg(server);
  const rand = prng(42);
  const qrand = prng(7);
  const sample = [];
  const compileQueries = Array.from({ length: 50 }, () => queryWords(qrand));
  // The reference: a second organization of the first size, same content, sampled in the same rounds
  // as every size, so each ratio compares two measurements under the same load.
  const ref = { org: await newOrg(server), size: SIZES[0], sample: [] };
  await seedClaims(server, ref.org.api_key, 0, ref.size, prng(42), ref.sample);
  await fillScaleIndex(server, ref.org.api_key, ref.size);
  const refSearches = searchQueriesFrom(ref.sample);
  const results = {};
  let have = 0;
  for (const size of SIZES) {
    if (Date.now() > DEADLINE) {
      log("  time bound reached");
      break;
    }
    const seedS = await seedClaims(server, org.api_key, have, size, rand, sample);
    have = size;
    // Fill the vector index before measuring: the server's timer drains it in the background while
    // seeding goes on; what is left is drained through the product's route, timed on its own.
    const fill = await fillScaleIndex(server, org.api_key, size);
    log(
      `  ${size} claims (seeded in ${seedS.toFixed(0)} s, ${fill.duringSeeding} vectors indexed meanwhile, ` +
        `the other ${size - fill.duringSeeding} in ${fmt(fill.seconds)} s); measuring`,
    );
    const searchQueries = searchQueriesFrom(sample);
    const lat = newLatencies(),
      refLat = newLatencies();
    for (let i = 0; i < 10; i++) {
      await api(server.url, org.api_key, "POST", "/v1/context/compile", {
        query: compileQueries[i],
        token_budget: 1000,
      });
      await api(server.url, ref.org.api_key, "POST", "/v1/context/compile", {
        query: compileQueries[i],
        token_budget: 1000,
      });
    }
    const statsBefore = await vectorStats(server, org.api_key);
    const loadBefore = loadavg()[0];
    for (let i = 0; i < SAMPLES && Date.now() < DEADLINE; i++) {
      const q = compileQueries[i % compileQueries.length];
      // Alternate the organization first in each round so drift hits both alike.
      const rounds = [
        () => scaleRound(server, org.api_key, q, searchQueries[i % searchQueries.length], lat),
        () => scaleRound(server, ref.org.api_key, q, refSearches[i % refSearches.length], refLat),
      ];
      for (const round of i % 2 ? rounds.reverse() : rounds) await round();
    }
    const statsAfter = await vectorStats(server, org.api_key);
    const load = [Math.min(loadBefore, loadavg()[0]), Math.max(loadBefore, loadavg()[0])];
    // Counters over the samples (both vantage points' compiles); a restart of the object in between resets them.
    const delta = Object.fromEntries(
      [
        "queries",
        "cacheHits",
        "loads",
        "aboveBound",
        "rowsScanned",
        "idsAccepted",
        "stemHits",
        "stemMisses",
        "stemClears",
      ].map((k) => [k, statsAfter[k] - (statsAfter.queries >= statsBefore.queries ? statsBefore[k] : 0)]),
    );
    const index = {
      ...delta,
      heldBytes: statsAfter.heldBytes,
      bound: statsAfter.bound,
      vectors: statsAfter.vectors,
      stemBound: statsAfter.stemBound,
      rss: workerdRss(server),
    };
    const profile = await profileCompile(server, org.api_key, compileQueries);
    const r = {
      size,
      seedS,
      fill,
      profile,
      index,
      load,
      hybrid: lat.hybrid,
      cHttp50: median(lat.compileHttp),
      cHttp95: percentile(lat.compileHttp, 95),
      cIn50: median(lat.compileIn),
      cIn95: percentile(lat.compileIn, 95),
      sHttp50: median(lat.searchHttp),
      sHttp95: percentile(lat.searchHttp, 95),
      sIn50: median(lat.searchIn),
      sIn95: percentile(lat.searchIn, 95),
      items: median(lat.items),
      n: lat.compileHttp.length,
      ref: {
        cHttp95: percentile(refLat.compileHttp, 95),
        cIn95: percentile(refLat.compileIn, 95),
        sIn95: percentile(refLat.searchIn, 95),
      },
    };
    results[size] = r;
    log(
      `  ${size}: vector index ${index.vectors} vectors (bound ${index.bound}), ${index.queries} queries: ${index.cacheHits} from the copy, ` +
        `${index.aboveBound} refused above the bound, ${fmt(index.rowsScanned / Math.max(1, index.queries), 0)} rows scanned each; ` +
        `copy ${mib(index.heldBytes)} MiB, workerd RSS ${mib(index.rss)} MiB`,
    );
    log(
      `  ${size}: compile phases (mean ms): ${Object.entries(profile.phases)
        .map(([k, v]) => `${k} ${fmt(v, 2)}`)
        .join(", ")}`,
    );
    log(
      `  ${size}: compile http p50 ${fmt(r.cHttp50)} p95 ${fmt(r.cHttp95)} inside p50 ${fmt(r.cIn50)} p95 ${fmt(r.cIn95)}; ` +
        `search http p50 ${fmt(r.sHttp50)} p95 ${fmt(r.sHttp95)} inside p50 ${fmt(r.sIn50)} p95 ${fmt(r.sIn95)}; ` +
        `reference p95 compile http ${fmt(r.ref.cHttp95)} inside ${fmt(r.ref.cIn95)}, search inside ${fmt(r.ref.sIn95)}; load ${fmt(load[0], 1)}-${fmt(load[1], 1)}`,
    );
  }
  const measured = SIZES.filter((s) => results[s]);
  const base = results[measured[0]];
  const last = results[measured.at(-1)];
  /** p95 at a size over the reference's p95 in the same rounds (whole-ms inside values floored at 1 ms). */
  const vsRef = (r, k) => r[k] / Math.max(r.ref[k], k.endsWith("In95") ? 1 : 0);
  const growth = last ? vsRef(last, "cHttp95") : NaN;
  const x95 = (r, k) => fmt(vsRef(r, k), 2);
  const per = (x, n) => (n > 0 ? fmt(x / n, 0) : "-");
  const rows = measured.map((s) => {
    const r = results[s],
      x = r.index,
      answered = x.queries - x.aboveBound;
    return [
      s.toLocaleString("en-US"),
      `${fmt(r.cHttp50)} / ${fmt(r.cHttp95)}`,
      `${fmt(r.cIn50, 0)} / ${fmt(r.cIn95, 0)}`,
      `${fmt(r.sHttp50)} / ${fmt(r.sHttp95)}`,
      `${fmt(r.sIn50, 0)} / ${fmt(r.sIn95, 0)}`,
      `${x95(r, "cHttp95")}× / ${x95(r, "cIn95")}× / ${x95(r, "sIn95")}×`,
      `${r.hybrid} of ${r.n}`,
      `${answered} of ${x.queries}`,
      `${per(x.rowsScanned, answered)} / ${per(x.idsAccepted, answered)}`,
      fmt(r.profile.rowsRead, 0),
      `${answered > 0 ? `${fmt((100 * x.cacheHits) / answered, 1)} %` : "-"} / ${x.stemHits + x.stemMisses > 0 ? `${fmt((100 * x.stemHits) / (x.stemHits + x.stemMisses), 1)} %` : "no lookups"}`,
      `${fmt(x.heldBytes / 2 ** 20, 1)} / ${mib(x.rss)} MiB`,
      `${fmt(r.load[0], 1)}-${fmt(r.load[1], 1)}`,
    ];
  });
  const ratio = (a, k) => (results[a] ? vsRef(results[a], k) : NaN);
  const verdict = (x, limit) =>
    Number.isFinite(x) ? `${fmt(x, 2)}× (${x <= limit ? "met" : "missed"})` : "not measured";
  const bound = base?.index.bound;
  const md = `### 2. Compile and search as the organization grows

${table(
  [
    "claims",
    "compile HTTP p50 / p95",
    "compile inside p50 / p95",
    "search HTTP p50 / p95",
    "search inside p50 / p95",
    `p95 vs ${SIZES[0].toLocaleString("en-US")} in the same rounds: compile HTTP / inside, search inside`,
    "hybrid packs",
    "local index: queries answered",
    "rows scored / ids to the read rule per query",
    "SQLite rows per compile",
    "hit rate: vector copy / stem memo",
    "copy held / workerd RSS",
    "load average (1 min)",
  ],
  rows,
)}

Targets (p95, 200k vs 1k in the same rounds): compile HTTP ${verdict(ratio(200_000, "cHttp95"), 2)}, compile inside ${verdict(ratio(200_000, "cIn95"), 2)},
search inside ${verdict(ratio(200_000, "sIn95"), 2)}.

Method: one organization grown through the API to each size (statements of 10-30 words, Zipf over the local embedder's
${VOCAB.length.toLocaleString("en-US")}-word vocabulary, so compile is hybrid), its vector index drained full before measuring, and a reference
organization holding the first ${SIZES[0].toLocaleString("en-US")} of the same claims, sampled in the same rounds (order alternating), so each ratio
compares two measurements under the same load. Per size ${SAMPLES} rounds, each, against both: \`POST /v1/context/compile\` (4 informative words, \`token_budget\` 1000) over HTTP and dispatched inside the
Durable Object (\`/__bench/timed\`, whole ms), and \`GET /v1/memories?q=<2 words of a stored claim>&limit=25\` both ways; ms.
"Hybrid packs": compiles a vector hit took part in. The local index's counters over the samples (\`/__bench/vector-stats\`):
queries it answered (above its bound of ${bound?.toLocaleString("en-US") ?? "?"} vectors, 32 MiB, it answers none and compile ranks lexically), rows it scored
in memory and ids it passed to the read rule per answered query, the share answered from the copy already in memory, the
copy's bytes and workerd's resident memory; the share of tokens the isolate's stem memo (\`src/domains/memory/fts.ts\`,
bound ${base?.index.stemBound?.toLocaleString("en-US") ?? "?"} tokens, dropped whole when full) answered (ranking reads ASCII claims' stored stems, so it is
looked up only for other claims and on writes); SQLite rows one compile reads (\`/__bench/profile\`, read rule and vector query
included). Load average sampled before and after each size's samples. Rerun: \`npm run bench -- --parts scale --sizes ${measured.join(",")}\`.`;
  return { md, org, growth, largest: have };
}

// ---- part 8: compile with and without vectors ----------------------------------------------------

/**
 * Two servers from the same bundle, both without a background timer: one with the embedded vector
 * backends (the default), one with vectors off (EMBEDDING_PROVIDER and VECTOR_INDEX none). Both get
 * the same organization content (same seed); the vector one's index is filled at each size; then the
 * same compiles alternate between them.
 */
async function partVectors(vecServer, lexServer) {
  log("part 8: compile with and without vectors");
  const orgs = { vec: await newOrg(vecServer), lex: await newOrg(lexServer) };
  const rands = { vec: prng(42), lex: prng(42) };
  const qrand = prng(7);
  const compileQueries = Array.from({ length: 50 }, () => queryWords(qrand));
  const rows = [];
  let have = 0,
    last = null;
  for (const size of SIZES) {
    if (Date.now() > DEADLINE) {
      log("  time bound reached");
      break;
    }
    await seedClaims(vecServer, orgs.vec.api_key, have, size, rands.vec, []);
    await seedClaims(lexServer, orgs.lex.api_key, have, size, rands.lex, []);
    have = size;
    const t0 = Date.now();
    const held = await fillIndex(vecServer, orgs.vec.api_key);
    const fillS = (Date.now() - t0) / 1000;
    if (held === null || held < size) throw new Error(`the vector index holds ${held} of ${size} claims after filling`);
    log(`  ${size} claims; ${held} vectors indexed in ${fmt(fillS)} s; measuring`);
    const lat = { vec: { http: [], inside: [], used: 0 }, lex: { http: [], inside: [], used: 0 } };
    for (const [k, server] of [
      ["vec", vecServer],
      ["lex", lexServer],
    ])
      for (let i = 0; i < 10; i++)
        await api(server.url, orgs[k].api_key, "POST", "/v1/context/compile", {
          query: compileQueries[i],
          token_budget: 1000,
        });
    for (let i = 0; i < SAMPLES && Date.now() < DEADLINE; i++) {
      const q = compileQueries[i % compileQueries.length];
      for (const [k, server] of i % 2
        ? [
            ["lex", lexServer],
            ["vec", vecServer],
          ]
        : [
            ["vec", vecServer],
            ["lex", lexServer],
          ]) {
        const c = await apiOk(server.url, orgs[k].api_key, "POST", "/v1/context/compile", {
          query: q,
          token_budget: 1000,
        });
        lat[k].http.push(c.ms);
        if (c.json.meta?.degraded?.vectors === false) lat[k].used++;
        lat[k].inside.push(
          (
            await timedInside(server, orgs[k].api_key, "POST", "/v1/context/compile", {
              body: { query: q, token_budget: 1000 },
            })
          ).inside_ms,
        );
      }
    }
    const p = (k, key, q) => percentile(lat[k][key], q);
    last = {
      size,
      ratio: p("vec", "http", 95) / p("lex", "http", 95),
      ratioIn: p("vec", "inside", 95) / Math.max(1, p("lex", "inside", 95)),
    };
    rows.push([
      size.toLocaleString("en-US"),
      `${held} in ${fmt(fillS, 1)} s`,
      `${fmt(p("lex", "http", 50))} / ${fmt(p("lex", "http", 95))}`,
      `${fmt(p("vec", "http", 50))} / ${fmt(p("vec", "http", 95))}`,
      `${fmt(p("lex", "inside", 50), 0)} / ${fmt(p("lex", "inside", 95), 0)}`,
      `${fmt(p("vec", "inside", 50), 0)} / ${fmt(p("vec", "inside", 95), 0)}`,
      `${fmt(last.ratio, 2)}× / ${fmt(last.ratioIn, 2)}×`,
      `${lat.lex.used} / ${lat.vec.used} of ${lat.vec.http.length}`,
    ]);
    log(`  ${size}: lexical p95 ${fmt(p("lex", "http", 95))} ms, hybrid p95 ${fmt(p("vec", "http", 95))} ms`);
  }
  const md = `### 11. Compile with and without vectors

Two servers from the same bundle, no background timer: the embedded default (local embedder and index) and the same with
\`EMBEDDING_PROVIDER\` and \`VECTOR_INDEX\` \`none\`, each with part 2's claims (same seed). At each size the first one's
index is filled and verified complete (second column), then ${SAMPLES} identical compiles (part 2's queries) alternate between
them, over HTTP and timed inside the object. Last column: packs in which a vector hit took part.

${table(
  [
    "claims",
    "vectors indexed",
    "lexical HTTP p50 / p95",
    "hybrid HTTP p50 / p95",
    "lexical inside p50 / p95",
    "hybrid inside p50 / p95",
    "hybrid p95 vs lexical (HTTP / inside)",
    "packs with vectors (lexical / hybrid server)",
  ],
  rows,
)}

Target: compile p95 with vectors at ${last ? last.size.toLocaleString("en-US") : "the largest size"} claims within 2× of lexical-only → **${last ? (last.ratio <= 2 ? "met" : "missed") : "not measured"}** (${last ? fmt(last.ratio, 2) : "n/a"}× over HTTP).`;
  return { md, ratio: last?.ratio };
}

// ---- part 3: many tenants -------------------------------------------------------------------------

async function partTenants(server) {
  log("part 3: 100 organizations vs one");
  const orgs = [];
  await pool(100, 4, async () => {
    orgs.push(await newOrg(server));
  });
  const one = orgs[0].api_key;
  const keys = orgs.map((o) => o.api_key);
  const CONNECTIONS = 32;
  const load = (spread) => {
    let i = 0;
    return cannon({
      url: server.url,
      connections: CONNECTIONS,
      requests: [
        {
          method: "POST",
          path: "/v1/observations",
          body: obsBody(),
          setupRequest: (req) => ({
            ...req,
            headers: {
              "content-type": "application/json",
              authorization: `Bearer ${spread ? keys[i++ % keys.length] : one}`,
            },
          }),
        },
      ],
    });
  };
  await load(true); // warm up every organization's Durable Object
  const runs = { one: [], many: [] };
  for (let round = 0; round < ROUNDS && Date.now() < DEADLINE; round++)
    for (const name of round % 2 ? ["many", "one"] : ["one", "many"]) {
      const r = await load(name === "many");
      runs[name].push(r);
      log(
        `  round ${round + 1} ${name}: ${fmt(r.rps, 0)} req/s p50 ${r.p50} p99 ${r.p99} non2xx ${r.non2xx} errors ${r.errors}`,
      );
    }
  const m = (rs, k) => median(rs.map((r) => r[k]));
  const ratio = m(runs.many, "rps") / m(runs.one, "rps");
  const rows = [
    ["1 organization", fmt(m(runs.one, "rps"), 0), `${m(runs.one, "p50")} / ${m(runs.one, "p99")}`, "1.00×"],
    [
      "100 organizations",
      fmt(m(runs.many, "rps"), 0),
      `${m(runs.many, "p50")} / ${m(runs.many, "p99")}`,
      `**${fmt(ratio, 2)}×**`,
    ],
  ];
  const md = `### 3. Many tenants

The append load of part 1 (\`POST /v1/observations\`, concurrency ${CONNECTIONS}, ${DURATION} s, ${ROUNDS} rounds alternating)
sent to one organization vs spread round-robin over 100 organizations (100 Durable Objects). Medians; latency in ms.

${table(["load on", "req/s", "p50 / p99", "throughput vs one"], rows)}

Locally every Durable Object lives in the one workerd process on this 2-core machine, so spreading cannot add
hardware: the ratio shows what per-tenant fan-out costs or saves here (${ratio >= 0.9 ? "nothing measurable is lost by spreading" : "spreading costs throughput"}${ratio > 1.1 ? "; the single object's serialized transactions were the bottleneck" : ""}).
On Cloudflare each organization's object can run on its own machine, which this cannot show.`;
  return { md, ratio };
}

// ---- part 4: webhook drain and export -----------------------------------------------------------

async function partWebhooks(server) {
  const org = await newOrg(server);
  const probe = await api(server.url, org.api_key, "GET", "/v1/webhooks");
  if (probe.status === 404)
    return { md: "Webhook drain: **not measured** — `/v1/webhooks` does not exist in this build." };
  const secret = "bench-webhook-secret-0123456789";
  let received = 0,
    badSignature = 0;
  const ids = new Set();
  let first = 0,
    last = 0,
    t0 = 0,
    duringDrain = 0;
  const receiver = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks);
      const want = "sha256=" + createHmac("sha256", secret).update(raw).digest("hex");
      if (req.headers["x-svc-signature"] !== want) badSignature++;
      ids.add(req.headers["x-svc-delivery"]);
      received++;
      last = performance.now();
      if (!first) first = last;
      if (t0 && last >= t0) duringDrain++;
      res.writeHead(204).end();
    });
  });
  const port = await freePort();
  await new Promise((r) => receiver.listen(port, "127.0.0.1", r));
  try {
    const hook = await api(server.url, org.api_key, "POST", "/v1/webhooks", {
      url: `http://127.0.0.1:${port}/hook`,
      secret,
      events: ["*"],
    });
    if (hook.status !== 201)
      return {
        md: `Webhook drain: **not measured** — registering a loopback hook answered ${hook.status} ${hook.text.slice(0, 200)}.`,
      };
    const EVENTS = Number(args["webhook-events"] ?? 2000);
    await pool(EVENTS, 8, (i) => apiOk(server.url, org.api_key, "POST", "/v1/observations", JSON.parse(obsBody(i))), {
      deadline: DEADLINE,
      onProgress: progress("webhook events", 10_000),
    });
    let cursor,
      calls = 0,
      drained = 0;
    await sleep(500);
    const before = received; // delivered by the background alarm drain while the events were written
    t0 = performance.now();
    for (let guard = 0; guard < 10_000 && Date.now() < DEADLINE; guard++) {
      const r = await apiOk(server.url, org.api_key, "POST", "/v1/webhooks/deliver", {
        limit: 200,
        ...(cursor ? { after: cursor } : {}),
      });
      calls++;
      drained += r.json.data.events_drained;
      if (!r.json.data.events_drained) break;
      cursor = r.json.data.cursor;
    }
    const seconds = (performance.now() - t0) / 1000;
    await sleep(200);
    const rate = duringDrain / seconds;
    const md = `Webhook drain: ${EVENTS} \`observation.appended\` events (plus the organization's own earlier events), one hook
subscribed to \`*\` on a loopback receiver (\`http://127.0.0.1\`, answers 204, checks \`X-Svc-Signature\`), drained with
\`POST /v1/webhooks/deliver\` (\`limit\` 200, following \`cursor\`) until a call drained nothing: ${drained} events drained in
${calls} calls, **${duringDrain} deliveries in ${fmt(seconds, 2)} s = ${fmt(rate, 0)} events delivered per second**
(${before} more were delivered by the background alarm drain before the timed drain began; ${received} deliveries in all,
${ids.size} distinct \`X-Svc-Delivery\` ids, ${badSignature} bad signatures).`;
    return { md, rate };
  } finally {
    receiver.close();
  }
}

async function partExport(server, org, claims) {
  const base = workerdRss(server);
  let peak = base,
    records = 0,
    pages = 0,
    bytes = 0,
    after;
  const timer = setInterval(() => {
    peak = Math.max(peak, workerdRss(server));
  }, 50);
  const t0 = performance.now();
  try {
    for (let guard = 0; guard < 1000 && Date.now() < DEADLINE; guard++) {
      const r = await fetch(`${server.url}/v1/export?limit=2000${after ? `&after=${encodeURIComponent(after)}` : ""}`, {
        headers: { authorization: `Bearer ${org.api_key}` },
      });
      const text = await r.text();
      if (r.status !== 200) throw new Error(`export ${r.status} ${text.slice(0, 200)}`);
      bytes += text.length;
      const lines = text.split("\n").filter(Boolean);
      const header = JSON.parse(lines[0]);
      records += lines.length - 1;
      pages++;
      if (!header.has_more) break;
      after = header.next_after;
    }
  } finally {
    clearInterval(timer);
  }
  const seconds = (performance.now() - t0) / 1000;
  peak = Math.max(peak, workerdRss(server));
  return `Export: the ${claims.toLocaleString("en-US")}-claim organization (part 2's, or seeded alike), \`GET /v1/export?limit=2000\` following
\`next_after\`: **${records.toLocaleString("en-US")} records in ${fmt(seconds, 2)} s = ${fmt(records / seconds, 0)} records/s** (${pages} pages,
${mib(bytes)} MiB of NDJSON). workerd resident memory (sampled every 50 ms): ${mib(base)} MiB before, **peak ${mib(peak)} MiB**
(+${mib(peak - base)} MiB while exporting).`;
}

// ---- part 5: channel compile over released knowledge ----------------------------------------------

const RELEASES = Number(args.releases ?? 1000);

async function partChannels(server) {
  log(`part 5: channel compile over ${RELEASES} active releases vs compile over the same claims`);
  const org = await newOrg(server);
  const rand = prng(11);
  const qrand = prng(13);
  const gateway = await apiOk(server.url, org.api_key, "POST", "/v1/keys", {
    label: "gateway",
    scopes: ["channel:compile"],
  });
  const gw = gateway.json.data;
  const channel = (
    await apiOk(server.url, org.api_key, "POST", "/v1/channels", {
      name: "bench",
      audiences: ["public"],
      min_trust: "high",
      gateway_principal_id: gw.principal_id,
    })
  ).json.data.channel_id;
  // Verified claims (the release-eligible trust), 50 per consolidation, then one release each.
  const claimIds = [];
  const t0 = Date.now();
  await pool(
    Math.ceil(RELEASES / 50),
    4,
    async (b) => {
      const n = Math.min(50, RELEASES - b * 50);
      const o = await apiOk(server.url, org.api_key, "POST", "/v1/observations", {
        subject_id: `subject-${b % 20}`,
        kind: "document",
        content: `released source ${b}`,
        source: { type: "bench" },
        trust: "verified",
      });
      const claims = Array.from({ length: n }, () => ({
        kind: "fact",
        statement: statement(rand),
        sources: [{ observation_id: o.json.data.observation_id, relation: "supports" }],
      }));
      const c = await apiOk(server.url, org.api_key, "POST", "/v1/consolidations", {
        subject_id: `subject-${b % 20}`,
        claims,
      });
      claimIds.push(...c.json.data.claims.map((x) => x.claim_id));
    },
    { deadline: DEADLINE, onProgress: progress("seeding verified claims", 10_000) },
  );
  await pool(
    claimIds.length,
    4,
    async (i) => {
      const r = await apiOk(server.url, org.api_key, "POST", "/v1/knowledge-releases", {
        claim_id: claimIds[i],
        channel_id: channel,
      });
      const id = r.json.data.release_id;
      await apiOk(server.url, org.api_key, "POST", `/v1/knowledge-releases/${id}/approve`, {});
      await apiOk(server.url, org.api_key, "POST", `/v1/knowledge-releases/${id}/activate`, {});
    },
    { deadline: DEADLINE, onProgress: progress("releasing", 10_000) },
  );
  const seedS = (Date.now() - t0) / 1000;
  const queries = Array.from({ length: 50 }, () => queryWords(qrand));
  const path = `/v1/channels/${channel}/context/compile`;
  for (let i = 0; i < 10; i++) {
    await api(server.url, gw.key, "POST", path, { query: queries[i], token_budget: 1000 });
    await api(server.url, org.api_key, "POST", "/v1/context/compile", { query: queries[i], token_budget: 1000 });
  }
  const lat = { chHttp: [], chIn: [], cHttp: [], cIn: [], chItems: [], cItems: [] };
  for (let i = 0; i < SAMPLES && Date.now() < DEADLINE; i++) {
    const q = queries[i % queries.length];
    // Alternate the two routes and vantage points so drift on the shared machine hits both alike.
    const ch = await apiOk(server.url, gw.key, "POST", path, { query: q, token_budget: 1000 });
    lat.chHttp.push(ch.ms);
    lat.chItems.push(ch.json.data.items.length);
    lat.chIn.push(
      (await timedInside(server, gw.key, "POST", path, { body: { query: q, token_budget: 1000 } })).inside_ms,
    );
    const c = await apiOk(server.url, org.api_key, "POST", "/v1/context/compile", { query: q, token_budget: 1000 });
    lat.cHttp.push(c.ms);
    lat.cItems.push(c.json.data.items.length);
    lat.cIn.push(
      (
        await timedInside(server, org.api_key, "POST", "/v1/context/compile", {
          body: { query: q, token_budget: 1000 },
        })
      ).inside_ms,
    );
  }
  const row = (name, http, inside, items) => [
    name,
    `${fmt(median(http))} / ${fmt(percentile(http, 95))}`,
    `${fmt(median(inside), 0)} / ${fmt(percentile(inside, 95), 0)}`,
    String(median(items)),
    String(http.length),
  ];
  const ratio = percentile(lat.chHttp, 95) / percentile(lat.cHttp, 95);
  log(
    `  channel compile p95 ${fmt(percentile(lat.chHttp, 95))} ms vs compile p95 ${fmt(percentile(lat.cHttp, 95))} ms`,
  );
  const md = `### 6. Channel compile over released knowledge

One organization with ${claimIds.length.toLocaleString("en-US")} verified claims (the same synthetic statements as part 2), each
released into one channel and activated (seeded in ${fmt(seedS, 0)} s). ${lat.chHttp.length} samples each, alternating:
\`POST /v1/channels/:id/context/compile\` by the channel's gateway (every active release is rechecked for eligibility,
then ranked with compile's scoring) and \`POST /v1/context/compile\` over the same claims by the owner (which also records
a run), with the same 4-word query and \`token_budget\` 1000, over HTTP and timed inside the Durable Object. Latency in
ms (p50 / p95).

${table(
  ["route", "HTTP p50 / p95", "inside DO p50 / p95", "items per pack (median)", "samples"],
  [
    row(`channel compile (${claimIds.length} active releases)`, lat.chHttp, lat.chIn, lat.chItems),
    row(`compile (${claimIds.length} claims)`, lat.cHttp, lat.cIn, lat.cItems),
  ],
)}

Channel compile p95 / compile p95 over HTTP: **${fmt(ratio, 2)}×**.`;
  return { md, ratio };
}

// ---- part 7: federation ------------------------------------------------------------------------

async function partFederation(server) {
  const a = await newOrg(server);
  const b = await newOrg(server);
  const probe = await api(server.url, a.api_key, "GET", "/v1/federation/peers");
  if (probe.status === 404)
    return { md: "Federation: **not measured** — `/v1/federation/peers` does not exist in this build." };
  const secret = "bench-federation-secret-0123456789";
  const sign = (raw) => "sha256=" + createHmac("sha256", secret).update(raw).digest("hex");
  const EVENTS = Number(args["federation-events"] ?? 2000);
  const BUNDLES = Math.min(EVENTS, Number(args["federation-bundles"] ?? 1000));
  let endpoints = 0;
  const peer = async (org, direction) => {
    const p = await apiOk(server.url, org.api_key, "POST", "/v1/federation/peers", {
      endpoint: `https://bench-${process.pid}-${endpoints++}.example.com`,
      shared_secret: secret,
      direction,
    });
    for (const resource_type of ["observation", "claim"])
      await apiOk(server.url, org.api_key, "POST", `/v1/federation/peers/${p.json.data.peer_id}/filters`, {
        resource_type,
      });
    return p.json.data.peer_id;
  };
  const [eventsPeer, memoryPeer, intoB] = [await peer(a, "pull"), await peer(a, "pull"), await peer(b, "push")];
  const { results: ids } = await pool(
    EVENTS,
    8,
    async (i) =>
      (await apiOk(server.url, a.api_key, "POST", "/v1/observations", JSON.parse(obsBody(i)))).json.data.observation_id,
    { deadline: DEADLINE, onProgress: progress("federation observations", 10_000) },
  );
  for (let i = 0; i < BUNDLES; i += 50)
    await apiOk(server.url, a.api_key, "POST", "/v1/consolidations", {
      subject_id: "bench",
      claims: ids.slice(i, Math.min(i + 50, BUNDLES)).map((id, j) => ({
        kind: "fact",
        statement: `federated claim ${i + j}`,
        sources: [{ observation_id: id, relation: "supports" }],
      })),
    });
  const pullAll = async (peerId, includeMemory) => {
    const pages = [];
    const t0 = performance.now();
    for (let guard = 0; guard < 10_000; guard++) {
      // Signed like push: the signature over the raw body, sent_at in it.
      const raw = JSON.stringify({
        peer_id: peerId,
        sent_at: new Date().toISOString(),
        limit: 200,
        include_memory: includeMemory,
      });
      const res = await fetch(`${server.url}/v1/federation/pull`, {
        method: "POST",
        body: raw,
        headers: {
          authorization: `Bearer ${a.api_key}`,
          "content-type": "application/json",
          "x-svc-peer-signature": sign(raw),
        },
      });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`pull -> ${res.status} ${text.slice(0, 300)}`);
      const r = { json: JSON.parse(text) };
      pages.push(r.json.data);
      if (!r.json.data.has_more) break;
    }
    return { pages, seconds: (performance.now() - t0) / 1000, events: pages.reduce((n, p) => n + p.events.length, 0) };
  };
  const pushRaw = async (body) => {
    const raw = JSON.stringify({
      peer_id: intoB,
      exchange_id: `bench-${Math.random().toString(16).slice(2)}`,
      sent_at: new Date().toISOString(),
      ...body,
    });
    const res = await fetch(`${server.url}/v1/federation/push`, {
      method: "POST",
      body: raw,
      headers: {
        authorization: `Bearer ${b.api_key}`,
        "content-type": "application/json",
        "x-svc-peer-signature": sign(raw),
      },
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`push -> ${res.status} ${text.slice(0, 300)}`);
    return JSON.parse(text).data;
  };
  const pulled = await pullAll(eventsPeer, false);
  let t0 = performance.now(),
    pushedOk = 0;
  for (const page of pulled.pages)
    if (page.events.length)
      pushedOk += (await pushRaw({ events: page.events })).results.filter((x) => x.status === "success").length;
  const pushSeconds = (performance.now() - t0) / 1000;
  const withMemory = await pullAll(memoryPeer, true);
  const bundles = withMemory.pages.flatMap((p) => p.bundles ?? []);
  t0 = performance.now();
  let imported = 0;
  for (let i = 0; i < bundles.length; i += 200)
    imported += (await pushRaw({ events: [], bundles: bundles.slice(i, i + 200) })).bundles.filter(
      (x) => x.status === "success",
    ).length;
  const importSeconds = (performance.now() - t0) / 1000;
  const rate = (n, s) => fmt(n / s, 0);
  const md = `### 7. Federation

Two organizations of the bench server stand in for two deployments. A holds ${EVENTS} observations and ${BUNDLES} claims (one
source each), so ${pulled.events} federable team events; peers filter \`observation\` and \`claim\`. Pages of 200 (\`limit\` 200),
sequential calls, each response signed over its bytes and each push signature-checked over its raw body.

${table(
  ["measure", "items", "calls", "seconds", "per second"],
  [
    [
      "pull (events)",
      pulled.events,
      pulled.pages.length,
      fmt(pulled.seconds, 2),
      `**${rate(pulled.events, pulled.seconds)} events/s**`,
    ],
    [
      "push (events, recorded)",
      pushedOk,
      pulled.pages.filter((p) => p.events.length).length,
      fmt(pushSeconds, 2),
      `**${rate(pushedOk, pushSeconds)} events/s**`,
    ],
    [
      "pull with include_memory (events)",
      withMemory.events,
      withMemory.pages.length,
      fmt(withMemory.seconds, 2),
      `${rate(withMemory.events, withMemory.seconds)} events/s (${bundles.length} bundles)`,
    ],
    [
      "bundle import (push, 200 bundles per call)",
      imported,
      Math.ceil(bundles.length / 200),
      fmt(importSeconds, 2),
      `**${rate(imported, importSeconds)} bundles/s**`,
    ],
  ],
)}`;
  return { md, pull: pulled.events / pulled.seconds, push: pushedOk / pushSeconds, bundles: imported / importSeconds };
}

// ---- part 8: retention apply -------------------------------------------------------------------

async function partRetention(server) {
  const CLAIMS = Number(args["retention-claims"] ?? 50_000);
  log(`part 8: retention apply over ${CLAIMS} claims`);
  const org = await newOrg(server);
  const seedS = await seedClaims(server, org.api_key, 0, CLAIMS, prng(17), []);
  const aged = await (
    await fetch(`${server.url}/__bench/age`, { method: "POST", body: JSON.stringify({ key: org.api_key, days: 400 }) })
  ).json();
  // 1% of the source observations under a hold: their claims are held (the coverage check runs per page).
  const probe = await (
    await fetch(`${server.url}/__bench/sql`, {
      method: "POST",
      body: JSON.stringify({
        key: org.api_key,
        sql: "SELECT json_group_array(observation_id) AS ids FROM (SELECT observation_id FROM observations ORDER BY rowid LIMIT ?)",
        args: [Math.max(1, Math.round(aged.observations / 100))],
      }),
    })
  ).json();
  const obsIds = JSON.parse(probe.first.ids);
  for (const id of obsIds)
    await apiOk(server.url, org.api_key, "POST", "/v1/legal-holds", {
      target_type: "observation",
      target_id: id,
      reason: "bench",
    });
  await apiOk(server.url, org.api_key, "POST", "/v1/policies", {
    type: "retention",
    name: "bench",
    status: "active",
    rules: {
      rules: [
        { record_type: "observation", max_age_days: 365 },
        { record_type: "claim", max_age_days: 365 },
      ],
    },
  });
  const run = async (dryRun) => {
    const t0 = Date.now();
    const total = { examined: 0, excluded: 0, held: 0, pages: 0, pageMs: [] };
    for (let after; ;) {
      const r = await apiOk(server.url, org.api_key, "POST", "/v1/retention/apply", {
        limit: 500,
        dry_run: dryRun,
        ...(after ? { after } : {}),
      });
      const d = r.json.data;
      total.examined += d.examined;
      total.excluded += d.excluded;
      total.held += d.held;
      total.pages++;
      total.pageMs.push(r.ms);
      if (d.done) break;
      after = d.next_after;
    }
    return { ...total, s: (Date.now() - t0) / 1000 };
  };
  const dry = await run(true);
  const real = await run(false);
  const row = (name, r) => [
    name,
    r.examined.toLocaleString("en-US"),
    r.excluded.toLocaleString("en-US"),
    r.held.toLocaleString("en-US"),
    String(r.pages),
    `${fmt(median(r.pageMs))} / ${fmt(percentile(r.pageMs, 95))}`,
    fmt(r.examined / r.s, 0),
  ];
  log(
    `  retention apply: ${fmt(real.examined / real.s, 0)} records examined/s (dry run ${fmt(dry.examined / dry.s, 0)}/s)`,
  );
  const md = `### 8. Retention apply

One organization with ${aged.claims.toLocaleString("en-US")} claims and ${aged.observations.toLocaleString("en-US")} source observations
(seeded in ${fmt(seedS, 0)} s), all aged 400 days by the bench-only \`/__bench/age\`, ${obsIds.length} source observations under a legal
hold (their claims are held as dependents), and an active retention policy of 365 days for both record types.
\`POST /v1/retention/apply\` with \`limit\` 500, resumed with \`next_after\` until \`done\`: first a dry run, then the real run
(which writes \`retention_excluded_at\` and bumps each excluded claim's version).

${table(
  ["run", "examined", "excluded", "held", "pages", "page ms p50 / p95", "records examined / s"],
  [row("dry run", dry), row("apply", real)],
)}`;
  return { md, rate: real.examined / real.s, dryRate: dry.examined / dry.s };
}

// ---- part 9: the Memory Atlas ---------------------------------------------------------------------

const ATLAS_CLAIMS = Number(args["atlas-claims"] ?? 50_000);
const ATLAS_SAMPLES = Number(args["atlas-samples"] ?? 50);

async function partAtlas(server, scale) {
  log(`part 9: Memory Atlas lenses at max_nodes 300 in a ${ATLAS_CLAIMS}-claim organization`);
  let org = scale?.org,
    seedS = null;
  if (!org || scale.largest < ATLAS_CLAIMS) {
    org = await newOrg(server);
    seedS = await seedClaims(server, org.api_key, 0, ATLAS_CLAIMS, prng(42), []);
  }
  const key = org.api_key;
  // Conflicts, pending approvals and expiring claims, so conflict_freshness and review_queue have work.
  const recent = (
    await apiOk(server.url, key, "GET", "/v1/memories?subject_id=subject-3&limit=100")
  ).json.data.items.map((c) => c.claim_id);
  const o = (
    await apiOk(server.url, key, "POST", "/v1/observations", {
      subject_id: "subject-3",
      kind: "note",
      content: "atlas bench dispute",
      source: { type: "bench" },
    })
  ).json.data.observation_id;
  for (let i = 0; i < 50; i++)
    await apiOk(server.url, key, "POST", "/v1/consolidations", {
      subject_id: "subject-3",
      claims: [
        {
          kind: "fact",
          statement: `atlas disputer ${i}`,
          valid_to: new Date(Date.now() + 3 * 86_400_000).toISOString(),
          sources: [
            { observation_id: o, relation: "supports" },
            { claim_id: recent[i], relation: "contradicts" },
          ],
        },
      ],
    });
  for (const id of recent.slice(50, 100)) await api(server.url, key, "POST", "/v1/claim-approvals", { claim_id: id });
  await apiOk(server.url, key, "POST", "/v1/context/compile", { subject_id: "subject-3", token_budget: 4000 });
  const focus = recent[99];
  const bodies = {
    evidence_trace: { focus_id: focus },
    neighborhood: { subject_id: "subject-3" },
    conflict_freshness: {},
    workspace_graph: {},
    review_queue: {},
    scope_preview: {},
    knowledge_release: {},
  };
  const lat = Object.fromEntries(Object.keys(bodies).map((l) => [l, { ms: [], nodes: 0, edges: 0, withheld: "" }]));
  for (let i = 0; i < ATLAS_SAMPLES && Date.now() < DEADLINE; i++)
    for (const [lens, extra] of Object.entries(bodies)) {
      // lenses alternate, so drift hits all alike
      const r = await apiOk(server.url, key, "POST", "/v1/memory-views/compile", { lens, max_nodes: 300, ...extra });
      lat[lens].ms.push(r.ms);
      Object.assign(lat[lens], {
        nodes: r.json.data.nodes.length,
        edges: r.json.data.edges.length,
        withheld: r.json.data.withheld.nodes,
      });
    }
  const rows = Object.entries(lat).map(([lens, l]) => [
    `\`${lens}\``,
    `**${fmt(median(l.ms))} / ${fmt(percentile(l.ms, 95))}**`,
    String(l.nodes),
    String(l.edges),
    l.withheld,
    String(l.ms.length),
  ]);
  const md = `### 9. Memory Atlas

One organization of ${ATLAS_CLAIMS.toLocaleString("en-US")} claims seeded as in part 2${seedS === null ? " (part 2's organization)" : ` (seeded in ${fmt(seedS, 0)} s)`}
(20 subjects, 50 claims sharing each source observation), plus 50 disputing claims expiring within 3 days and 50 pending
approvals. \`POST /v1/memory-views/compile\` with \`max_nodes\` 300 for each lens, ${ATLAS_SAMPLES} rounds, lenses alternating;
HTTP latency in ms (p50 / p95), and the size of the last view.

${table(["lens", "p50 / p95 ms", "nodes", "edges", "withheld nodes", "samples"], rows)}`;
  return { md, worst: Math.max(...Object.values(lat).map((l) => percentile(l.ms, 95))) };
}

// ---- main ---------------------------------------------------------------------------------------

async function main() {
  const started = Date.now();
  const server = await startServer({
    config: "bench/wrangler.toml",
    label: "bench",
    pepper: (await import("node:crypto")).randomBytes(32).toString("hex"),
    vars: { WEBAUTHN_ORIGINS: BENCH_ORIGIN },
  });
  log(`bench server ${server.url} (state ${server.stateDir})`);
  writeSection(
    "speed",
    `## Speed (\`npm run bench\`)

Server: \`bench/wrangler.toml\` (the product's Worker plus bench-only \`/__bench/*\` routes) on local workerd, sharing the
machine's 2 cores with the load generator (autocannon). Each part names the machine, versions and commit it ran on.`,
  );
  const summary = [];
  const done = (name, md) => {
    writeSection(`speed-${name}`, `${md}\n\n<sub>${machineLine()}</sub>`);
    console.log(md + "\n");
  };
  let scale;
  try {
    if (PARTS.has("append")) {
      const a = await partAppend(server);
      done("append", a.md);
      summary.push(`append/bare at c=8: ${fmt(a.ratios[8], 2)}×`);
    }
    if (PARTS.has("append") || PARTS.has("append-cpu")) {
      const c = await partAppendCpu(server);
      done("append-cpu", c.md);
      summary.push(
        `append/bare Worker-thread CPU per request: ${fmt(c.threadRatio, 2)}× (workerd ${fmt(c.ratio, 2)}×)`,
      );
    }
    if (PARTS.has("scale")) {
      scale = await partScale(server);
      done("scale", scale.md);
      summary.push(`compile p95 largest/first size: ${fmt(scale.growth, 2)}×`);
    }
    if (PARTS.has("vectors")) {
      // Both without a timer, so the lexical server never drains and the vector one only when told.
      const vecServer = await startServer({
        config: "bench/wrangler.toml",
        label: "bench-vec",
        vars: { MAINTENANCE_INTERVAL_SECONDS: "0" },
      });
      const lexServer = await startServer({
        config: "bench/wrangler.toml",
        label: "bench-lex",
        vars: { MAINTENANCE_INTERVAL_SECONDS: "0", EMBEDDING_PROVIDER: "none", VECTOR_INDEX: "none" },
      });
      try {
        const v = await partVectors(vecServer, lexServer);
        done("vectors", v.md);
        summary.push(`compile p95 with/without vectors at the largest size: ${fmt(v.ratio, 2)}×`);
      } finally {
        await vecServer.stop();
        await lexServer.stop();
      }
    }
    if (PARTS.has("tenants")) {
      const t = await partTenants(server);
      done("tenants", t.md);
      summary.push(`100 orgs / 1 org throughput: ${fmt(t.ratio, 2)}×`);
    }
    if (PARTS.has("drain")) {
      const parts = [];
      if (!scale) {
        const n = SIZES[SIZES.length - 1];
        log(`part 4 export needs a large organization: seeding ${n} claims`);
        const org = await newOrg(server);
        await seedClaims(server, org.api_key, 0, n, prng(42), []);
        scale = { org, largest: n };
      }
      log("part 4: export");
      parts.push(await partExport(server, scale.org, scale.largest));
      log("part 4: webhook drain");
      const w = await partWebhooks(server);
      parts.push(w.md);
      if (w.rate) summary.push(`webhook drain: ${fmt(w.rate, 0)} events/s`);
      done("drain", `### 4. Webhook drain and export\n\n${parts.join("\n\n")}`);
    }
    if (PARTS.has("login")) {
      const l = await partLogin(server);
      done("login", l.md);
      summary.push(`login round trip p50: ${fmt(l.p50)} ms (password hash ${fmt(l.hashMs)} ms)`);
    }
    if (PARTS.has("channels")) {
      const c = await partChannels(server);
      done("channels", c.md);
      summary.push(`channel compile / compile p95: ${fmt(c.ratio, 2)}×`);
    }
    if (PARTS.has("footprint")) {
      const f = await partFootprint(server);
      done("footprint", f.md);
      summary.push(
        `footprint: ${f.figures.bytes.append_total} B per append, ${f.figures.appends_per_second_one_org} appends/s one org`,
      );
    }
    if (PARTS.has("federation")) {
      log("part 7: federation");
      const f = await partFederation(server);
      done("federation", f.md);
      if (f.pull)
        summary.push(
          `federation: pull ${fmt(f.pull, 0)} events/s, push ${fmt(f.push, 0)} events/s, import ${fmt(f.bundles, 0)} bundles/s`,
        );
    }
    if (PARTS.has("retention")) {
      const r = await partRetention(server);
      done("retention", r.md);
      summary.push(`retention apply: ${fmt(r.rate, 0)} records examined/s`);
    }
    if (PARTS.has("atlas")) {
      const a = await partAtlas(server, scale);
      done("atlas", a.md);
      summary.push(`atlas worst lens p95 at max_nodes 300: ${fmt(a.worst)} ms`);
    }
  } finally {
    await server.stop();
  }
  console.log(`summary (${((Date.now() - started) / 60_000).toFixed(1)} min): ${summary.join("; ")}`);
}

main().catch((err) => {
  log(String(err?.stack ?? err));
  process.exit(1);
});
