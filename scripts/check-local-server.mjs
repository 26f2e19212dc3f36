#!/usr/bin/env node
// npm run test:e2e (first step; .ci/run runs it): the served mode opens no debugger and shows no secret to other local users.
// Starts the local server exactly as `npm start` does (scripts/local.mjs startDev) on a free port with
// a temporary state folder, then asserts, for the whole process tree:
//   - none of its listening TCP ports speaks the V8 inspector protocol (/json/version, /json/list);
//   - the operator token and password pepper appear in no process's command line (/proc/*/cmdline, readable by anyone)
//     and in no environment of the tree.
// Linux only (reads /proc); elsewhere it says so and passes.
import { existsSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

if (!existsSync("/proc/net/tcp")) {
  console.log("check-local-server: no /proc, skipped");
  process.exit(0);
}
const state = mkdtempSync(join(tmpdir(), "svc-check-"));
process.env.SVC_STATE_DIR = state;
const local = await import("./local.mjs");

const read = (p) => {
  try {
    return readFileSync(p);
  } catch {
    return null;
  }
};
const pids = () =>
  readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .map(Number);

function descendants(root) {
  const children = new Map();
  for (const pid of pids()) {
    const stat = read(`/proc/${pid}/stat`)?.toString();
    if (!stat) continue;
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), pid]);
  }
  const out = [root];
  for (let i = 0; i < out.length; i++) out.push(...(children.get(out[i]) ?? []));
  return out;
}

/** Listening TCP ports owned by these processes (socket inodes from /proc/PID/fd). */
function listeningPorts(tree) {
  const inodes = new Set();
  for (const pid of tree) {
    let fds = [];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m) inodes.add(m[1]);
      } catch {
        /* closed meanwhile */
      }
    }
  }
  const ports = new Set();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of (read(table)?.toString() ?? "").split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length > 9 && f[3] === "0A" && inodes.has(f[9])) ports.add(parseInt(f[1].split(":").pop(), 16));
    }
  }
  return [...ports];
}

async function speaksInspector(port) {
  for (const path of ["/json/version", "/json/list"]) {
    try {
      const r = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(3_000) });
      const text = await r.text();
      if (/webSocketDebuggerUrl|Protocol-Version/.test(text)) return true;
    } catch {
      /* not HTTP, or no answer: not an inspector endpoint */
    }
  }
  return false;
}

const failures = [];
const port = await local.freePort();
const child = local.startDev(port, { quiet: true });
try {
  await local.waitHealthy(`http://127.0.0.1:${port}`, child);
  const secrets = { "operator token": local.operatorToken(), "password pepper": local.passwordPepper() };
  const tree = descendants(child.pid);
  const ports = listeningPorts(tree);
  if (!ports.includes(port))
    failures.push(`the served port ${port} is not among the tree's listening ports ${ports.join(",")}`);
  for (const p of ports) if (await speaksInspector(p)) failures.push(`port ${p} answers the inspector protocol`);
  for (const [name, secret] of Object.entries(secrets)) {
    for (const pid of pids())
      if (read(`/proc/${pid}/cmdline`)?.includes(secret))
        failures.push(`the ${name} is on the command line of pid ${pid}`);
    for (const pid of tree)
      if (read(`/proc/${pid}/environ`)?.includes(secret))
        failures.push(`the ${name} is in the environment of pid ${pid}`);
  }
} catch (err) {
  failures.push(String(err?.message ?? err));
} finally {
  for (const pid of descendants(child.pid).reverse())
    try {
      process.kill(pid, "SIGTERM");
    } catch {
      /* gone */
    }
  rmSync(state, { recursive: true, force: true });
}
if (failures.length) {
  console.error(`check-local-server: FAILED\n  ${failures.join("\n  ")}`);
  process.exit(1);
}
console.log("check-local-server: no inspector port, no secret in any command line or environment");
