#!/usr/bin/env node
// Runs examples/quickstart.sh and examples/agent.ts (with tsx, as its header says, on this Node) against
// a fresh server started the way the conformance kit starts one (npm start on a free port, a temporary
// state folder, a bootstrapped organization), and checks the typed client's types
// (clients/typescript/src/openapi.d.ts) are still what openapi-typescript makes of docs/openapi.json.
// Wired into .ci/run (it starts a server, so it is not part of npm test).
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort, root, waitHealthy } from "./local.mjs";

const fail = (msg) => {
  console.error(`examples-e2e: ${msg}`);
  process.exitCode = 1;
};

const typesNow = join(mkdtempSync(join(tmpdir(), "svc-types-")), "openapi.d.ts");
execFileSync(join(root, "node_modules/.bin/openapi-typescript"), ["docs/openapi.json", "-o", typesNow], {
  cwd: root,
  stdio: "ignore",
});
if (readFileSync(typesNow, "utf8") !== readFileSync(join(root, "clients/typescript/src/openapi.d.ts"), "utf8"))
  fail("clients/typescript/src/openapi.d.ts is stale: npm run generate -w clients/typescript");

const port = await freePort();
const state = mkdtempSync(join(tmpdir(), "svc-examples-"));
const env = { ...process.env, PORT: String(port), SVC_STATE_DIR: state };
const server = spawn("npm", ["start"], { cwd: root, env, stdio: "ignore", detached: true });
try {
  const base = `http://127.0.0.1:${port}`;
  await waitHealthy(base, server, 180_000);
  const org = JSON.parse(
    execFileSync("npm", ["run", "-s", "bootstrap", "--", "--json"], { cwd: root, env, encoding: "utf8" }),
  );
  const runEnv = { ...process.env, BASE: base, KEY: org.api_key };
  const shell = execFileSync("bash", [join(root, "examples/quickstart.sh")], {
    cwd: root,
    env: runEnv,
    encoding: "utf8",
  });
  process.stdout.write(shell);
  for (const step of ["1 appended", "2 consolidated", "3 compiled", "4 feedback", "5 handed off", "6 exported"])
    if (!shell.includes(step)) fail(`quickstart.sh printed no "${step}"`);
  if (!/3 compiled\s+ctx_\w+: Prefers tea in the morning/.test(shell)) fail("quickstart.sh did not recall its claim");
  const agent = execFileSync(join(root, "node_modules/.bin/tsx"), ["examples/agent.ts"], {
    cwd: root,
    env: runEnv,
    encoding: "utf8",
  });
  process.stdout.write(agent);
  if (!/3 compiled\s+ctx_\w+ Standups are at 9:30/.test(agent)) fail("agent.ts did not recall its claim");
  if (!/6 exported\s+\d+ NDJSON lines/.test(agent)) fail("agent.ts did not export");
} catch (err) {
  fail(err.message);
} finally {
  try {
    process.kill(-server.pid, "SIGTERM");
  } catch {}
  await new Promise((r) => setTimeout(r, 1000));
  rmSync(state, { recursive: true, force: true });
}
if (!process.exitCode) console.log("examples-e2e: both examples ran against a fresh server");
