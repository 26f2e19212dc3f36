// Shared by start.mjs and bootstrap.mjs: the local state folder, its operator token, local D1
// migrations, and starting the local server (scripts/serve.mjs: local workerd, no inspector).
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const root = join(dirname(fileURLToPath(import.meta.url)), "..");
export const stateDir = resolve(root, process.env.SVC_STATE_DIR || ".wrangler/state");
const wrangler = join(root, "node_modules", ".bin", "wrangler");
const quietEnv = {
  ...process.env,
  WRANGLER_SEND_METRICS: "false",
  CI: "true",
  NO_UPDATE_NOTIFIER: "1",
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
};

/** The per-state-folder operator token: lets local tooling bootstrap organizations, nothing else. */
export function operatorToken() {
  mkdirSync(stateDir, { recursive: true });
  const file = join(stateDir, "operator.json");
  if (existsSync(file)) return JSON.parse(readFileSync(file, "utf8")).token;
  const token = randomBytes(32).toString("hex");
  writeFileSync(file, JSON.stringify({ token }), { mode: 0o600 });
  return token;
}

export function applyLocalMigrations() {
  const r = spawnSync(wrangler, ["d1", "migrations", "apply", "INDEX_DB", "--local", "--persist-to", stateDir], {
    cwd: root,
    env: quietEnv,
    encoding: "utf8",
  });
  if (r.status !== 0) {
    process.stderr.write(r.stdout + r.stderr);
    throw new Error("applying local D1 migrations failed");
  }
}

/** The Worker binding that tells the code it is the embedded local server (set only by serve.mjs). */
export const LOCAL_MODE_BINDING = "SVC_LOCAL_MODE";

/**
 * Start scripts/serve.mjs on 127.0.0.1:port. No secret goes on its command line or into its
 * environment: it reads the operator token from the state folder itself. `inspect` (npm run dev
 * only) opens a V8 inspector on loopback for debugging.
 */
export function startDev(port, { quiet = false, inspect = false } = {}) {
  operatorToken(); // create it now, so the child only reads it
  const args = [
    join(root, "scripts", "serve.mjs"),
    "--port",
    String(port),
    ...(inspect ? ["--inspect"] : []),
    ...(quiet ? ["--quiet"] : []),
  ];
  const env = { ...quietEnv, SVC_STATE_DIR: stateDir };
  delete env.OPERATOR_TOKEN;
  delete env.SVC_OPERATOR_TOKEN;
  return spawn(process.execPath, args, {
    cwd: root,
    env,
    stdio: quiet ? "ignore" : ["ignore", "inherit", "inherit"],
    detached: false,
  });
}

/** The per-state-folder dashboard password pepper (mode 600); serve.mjs reads it into a secret binding. */
export function passwordPepper() {
  mkdirSync(stateDir, { recursive: true });
  const file = join(stateDir, "pepper.json");
  if (existsSync(file)) return JSON.parse(readFileSync(file, "utf8")).pepper;
  const pepper = randomBytes(32).toString("hex");
  writeFileSync(file, JSON.stringify({ pepper }), { mode: 0o600 });
  return pepper;
}

export async function waitHealthy(url, child, ms = 120_000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (child && child.exitCode != null) throw new Error(`the local server exited with ${child.exitCode}`);
    try {
      const r = await fetch(`${url}/healthz`);
      if (r.ok) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`no answer from ${url}/healthz`);
}

export async function bootstrapVia(url, token) {
  const r = await fetch(`${url}/__operator/bootstrap`, { method: "POST", headers: { "x-svc-operator-token": token } });
  const body = await r.json().catch(() => null);
  if (r.status !== 201 || !body?.data?.api_key)
    throw new Error(`bootstrap failed: ${r.status} ${JSON.stringify(body)}`);
  return body.data;
}

export const serverFile = () => join(stateDir, "server.json");

/** A free TCP port on 127.0.0.1 (benchmark and load scripts start their own servers). */
export function freePort() {
  return new Promise((resolvePort, reject) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolvePort(port));
    });
    s.on("error", reject);
  });
}

/**
 * The last lines `npm start` prints. The console is named on localhost, not 127.0.0.1: passkeys need a
 * host name (an IP address can never be a WebAuthn relying party), and localhost is the default one.
 */
export const servingBanner = (port, state) =>
  `serving the API on http://127.0.0.1:${port} (state: ${state})\noperator console: http://localhost:${port}/console/`;
