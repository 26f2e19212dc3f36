#!/usr/bin/env node
// Two-deployment federation test (run by .ci/run; not a vitest suite): starts TWO local servers with
// `npm start` (two SVC_STATE_DIR folders, two ports), creates an organization on each with
// `npm run bootstrap -- --json`, registers the peers and their filters, writes a claim with its
// evidence on A, checks that pulls not signed with the peer's secret are refused and move nothing,
// runs `npm run federation:sync` from A into B, and checks the evidence, its provenance and the
// exchange log on both sides. Exit 0 when everything holds.
import { execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);
const root = new URL("..", import.meta.url).pathname;
const SECRET = `e2e-shared-secret-${Date.now()}`;
const failures = [];
const check = (ok, what) => {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures.push(what);
};

const freePort = () =>
  new Promise((res) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });

async function startServer(name) {
  const stateDir = mkdtempSync(join(tmpdir(), `svc-fed-${name}-`));
  const port = await freePort();
  const env = { ...process.env, PORT: String(port), SVC_STATE_DIR: stateDir };
  // Its own process group, so stopping it stops npm, the start script and workerd together.
  const child = spawn("npm", ["start"], { cwd: root, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 180_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server ${name} exited early:\n${output.slice(-2000)}`);
    try {
      if ((await fetch(`${url}/readyz`)).status === 200) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`server ${name} did not become ready:\n${output.slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  const { stdout } = await run("npm", ["run", "-s", "bootstrap", "--", "--json"], { cwd: root, env });
  const org = JSON.parse(
    stdout
      .trim()
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .pop(),
  );
  return { name, url, stateDir, child, org, stop: () => stop(child, stateDir) };
}

function stop(child, stateDir) {
  try {
    process.kill(-child.pid, "SIGTERM");
  } catch {
    // already gone
  }
  return new Promise((res) => {
    const done = () => {
      rmSync(stateDir, { recursive: true, force: true });
      res();
    };
    if (child.exitCode !== null) return done();
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
      done();
    }, 10_000);
    child.on("exit", () => {
      clearTimeout(timer);
      done();
    });
  });
}

async function api(server, key, method, path, body) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  const json = text ? JSON.parse(text) : undefined;
  if (res.status >= 300) throw new Error(`${server.name} ${method} ${path}: ${res.status} ${text}`);
  return json.data;
}

async function syncDriver(a, keyOnA, peerOnA, b, keyOnB, peerOnB, secret = SECRET) {
  const { stdout } = await run(
    "npm",
    [
      "run",
      "-s",
      "federation:sync",
      "--",
      "--from",
      a.url,
      "--from-key",
      keyOnA,
      "--from-peer",
      peerOnA,
      "--to",
      b.url,
      "--to-key",
      keyOnB,
      "--to-peer",
      peerOnB,
      "--include-memory",
    ],
    { cwd: root, env: { ...process.env, FEDERATION_SHARED_SECRET: secret } },
  );
  return JSON.parse(stdout.trim().split("\n").pop());
}

const servers = [];
try {
  const started = await Promise.allSettled([startServer("A"), startServer("B")]);
  for (const s of started) if (s.status === "fulfilled") servers.push(s.value);
  for (const s of started) if (s.status === "rejected") throw s.reason;
  const [a, b] = servers;
  console.log(`A ${a.url} (${a.org.org_id}), B ${b.url} (${b.org.org_id})`);

  // Each side registers the other; each gives the other a key of its own organization to call it with.
  const peerOnA = (
    await api(a, a.org.api_key, "POST", "/v1/federation/peers", {
      endpoint: b.url,
      shared_secret: SECRET,
      direction: "pull",
      label: "B",
    })
  ).peer_id;
  const peerOnB = (
    await api(b, b.org.api_key, "POST", "/v1/federation/peers", {
      endpoint: a.url,
      shared_secret: SECRET,
      direction: "push",
      label: "A",
    })
  ).peer_id;
  for (const [server, peer] of [
    [a, peerOnA],
    [b, peerOnB],
  ])
    for (const resource_type of ["observation", "claim"])
      await api(server, server.org.api_key, "POST", `/v1/federation/peers/${peer}/filters`, { resource_type });
  const keyOnA = (
    await api(a, a.org.api_key, "POST", "/v1/keys", { label: "federation: B pulls", scopes: ["federation:write"] })
  ).key;
  const keyOnB = (
    await api(b, b.org.api_key, "POST", "/v1/keys", {
      label: "federation: A pushes",
      scopes: ["federation:write"],
      max_trust: "high",
    })
  ).key;

  const word = `bladderwort${Date.now()}`;
  const evidence = await api(a, a.org.api_key, "POST", "/v1/observations", {
    subject_id: "e2e-subject",
    kind: "document",
    content: `${word} grows in still water`,
    source: { type: "field-notes", ref: "p12" },
    trust: "high",
  });
  await api(a, a.org.api_key, "POST", "/v1/observations", {
    subject_id: "e2e-subject",
    kind: "note",
    content: `private ${word} diary`,
    source: { type: "diary" },
    visibility: "private",
  });
  const claim = (
    await api(a, a.org.api_key, "POST", "/v1/consolidations", {
      subject_id: "e2e-subject",
      claims: [
        {
          kind: "fact",
          statement: `${word} is aquatic`,
          sources: [{ observation_id: evidence.observation_id, relation: "supports" }],
        },
      ],
    })
  ).claims[0];

  // A pull is bound to its peer: unsigned, or signed with another secret, it is refused and moves nothing.
  const unsigned = await fetch(`${a.url}/v1/federation/pull`, {
    method: "POST",
    body: JSON.stringify({ peer_id: peerOnA, sent_at: new Date().toISOString() }),
    headers: { authorization: `Bearer ${keyOnA}`, "content-type": "application/json" },
  });
  check(unsigned.status === 403, "an unsigned pull is refused (403)");
  const wrongSecret = await syncDriver(a, keyOnA, peerOnA, b, keyOnB, peerOnB, `not-${SECRET}`).then(
    () => null,
    (err) => err,
  );
  check(
    /pull failed: 403/.test(wrongSecret?.stderr ?? ""),
    "a sync signing with another secret fails at its first pull (403)",
  );
  const refusedLog = await api(a, a.org.api_key, "GET", `/v1/federation/log?peer_id=${peerOnA}`);
  check(refusedLog.entries.length === 0, "refused pulls leave no log entry");

  const first = await syncDriver(a, keyOnA, peerOnA, b, keyOnB, peerOnB);
  console.log(`sync: ${JSON.stringify(first)}`);
  check(
    first.pulled_events === 2 && first.events.success === 2,
    "both team events (observation, claim) crossed and were recorded",
  );
  check(
    first.pulled_bundles === 1 && first.bundles.success === 1,
    "the claim crossed as one signed bundle and was imported",
  );

  const found = await api(b, b.org.api_key, "GET", `/v1/memories?q=${word}`);
  const local = found.items?.find((c) => c.statement === `${word} is aquatic`);
  check(!!local && local.claim_id !== claim.claim_id, "B holds the claim under a new local id");
  if (local) {
    const ev = await api(b, b.org.api_key, "GET", `/v1/claims/${local.claim_id}/evidence`);
    const source = ev.supporting?.[0];
    check(source?.content === `${word} grows in still water`, "B holds the evidence with its content");
    check(
      source?.source?.type === "federation" && source?.source?.ref === `${peerOnB}:${evidence.observation_id}`,
      "the evidence's provenance names the peer and the remote observation",
    );
    check(source?.content_hash === evidence.content_hash, "the content hash is the one A computed");
    check(source?.observation_id !== evidence.observation_id, "the evidence has a new local id");
  }
  const exported = await fetch(`${b.url}/v1/export`, { headers: { authorization: `Bearer ${b.org.api_key}` } }).then(
    (r) => r.text(),
  );
  check(!exported.includes(`private ${word}`), "the private observation never reached B");

  const logA = await api(a, a.org.api_key, "GET", `/v1/federation/log?peer_id=${peerOnA}`);
  const logB = await api(b, b.org.api_key, "GET", `/v1/federation/log?peer_id=${peerOnB}`);
  check(
    logA.entries.some((e) => e.operation === "pull" && e.counts.events === 2 && e.counts.bundles === 1),
    "A's log records the pull",
  );
  check(
    logB.entries.some(
      (e) => e.operation === "push" && e.counts.events === 2 && e.counts.bundles === 1 && e.counts.success === 3,
    ),
    "B's log records the push",
  );
  const peersB = await api(b, b.org.api_key, "GET", "/v1/federation/peers");
  check(peersB.peers[0].remote_org_id === a.org.org_id, "B pinned A's organization as the peer's source");

  const again = await syncDriver(a, keyOnA, peerOnA, b, keyOnB, peerOnB);
  check(again.pulled_events === 0 && again.pulled_bundles === 0, "a second sync finds nothing new (A's cursor moved)");
} catch (err) {
  failures.push(String(err?.stack ?? err));
  console.error(err);
} finally {
  await Promise.all(servers.map((s) => s.stop()));
}
console.log(failures.length ? `federation e2e: ${failures.length} failed` : "federation e2e: all checks passed");
process.exit(failures.length ? 1 : 0);
