#!/usr/bin/env node
// The local server process behind `npm start`, `npm run dev`, `npm run bootstrap` and the MCP
// conformance runner: wrangler's programmatic dev API on local workerd, in this process.
//   node scripts/serve.mjs --port N [--inspect] [--quiet] [--config PATH] [--no-bundle] [--var NAME=VALUE]...
// --config serves another wrangler config (the benchmarks' bench/wrangler.toml, or a snapshot of one
// whose main is an already bundled worker.js: then --no-bundle); --var adds or overrides a plain-text
// binding and is for non-secret values only (it is on the command line).
// Why not `wrangler dev`: its CLI always opens a V8 inspector (a WebSocket on loopback that accepts
// any Origin and evaluates code inside the Worker serving every organization), and `--var` would put
// the operator token on the command line, readable by every local user in the process list. Here the
// inspector stays closed unless --inspect (npm run dev) asks for it, and the token (and the password
// pepper) are read from the state folder (operator.json, pepper.json; mode 600) into secret
// bindings, never into argv or the environment.
import { unstable_startWorker } from "wrangler";
import { execFileSync } from "node:child_process";
import { join, resolve } from "node:path";
import { LOCAL_MODE_BINDING, operatorToken, passwordPepper, root, stateDir } from "./local.mjs";

const args = process.argv.slice(2);
const portAt = args.indexOf("--port");
const port = Number(portAt >= 0 ? args[portAt + 1] : process.env.PORT || 8787);
const inspect = args.includes("--inspect");
const quiet = args.includes("--quiet");
const configAt = args.indexOf("--config");
const config = configAt >= 0 ? resolve(root, args[configAt + 1]) : join(root, "wrangler.toml");
const plainVars = Object.fromEntries(
  args.flatMap((a, i) => {
    if (a !== "--var") return [];
    const [name, ...value] = args[i + 1].split("=");
    return [[name, { type: "plain_text", value: value.join("=") }]];
  }),
);

// wrangler.toml serves the operator console from console/dist: build it when a fresh clone has none.
execFileSync(process.execPath, [join(root, "scripts", "build-console.mjs"), "--if-missing"], { stdio: "inherit" });

// The local server is offline by design: no fetch of Cloudflare's sample Request.cf object (offline it
// printed a DNS stack trace on every start); requests get miniflare's placeholder cf instead.
process.env.CLOUDFLARE_CF_FETCH_ENABLED ??= "false";

/**
 * Network failures (offline laptop, no DNS) are not bugs of ours: one line, no stack trace. The local
 * server itself needs no network; wrangler may still try to reach out for optional extras.
 */
const NETWORK_CODES = new Set([
  "ENOTFOUND",
  "EAI_AGAIN",
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "ENETUNREACH",
  "EHOSTUNREACH",
  "UND_ERR_CONNECT_TIMEOUT",
]);
const isNetworkError = (err) =>
  NETWORK_CODES.has(err?.code) ||
  NETWORK_CODES.has(err?.cause?.code) ||
  /fetch failed|getaddrinfo/i.test(String(err?.message));
const oneLine = (err) => `${err?.message ?? err}${err?.cause?.code ? ` (${err.cause.code})` : ""}`;
process.on("unhandledRejection", (err) => {
  if (isNetworkError(err)) return console.warn(`serve: network unavailable, continuing offline: ${oneLine(err)}`);
  console.error(err);
  process.exit(1);
});

let worker;
try {
  worker = await unstable_startWorker({
    config,
    ...(args.includes("--no-bundle") ? { build: { bundle: false } } : {}),
    bindings: {
      OPERATOR_TOKEN: { type: "secret_text", value: operatorToken() },
      // Dashboard passwords: the state folder's pepper (mode 600), and this server's own origin for passkeys.
      PASSWORD_PEPPER: { type: "secret_text", value: passwordPepper() },
      WEBAUTHN_ORIGINS: { type: "plain_text", value: `http://localhost:${port}` },
      // Marks the embedded local server: loopback browser origins may call /mcp (docs/security.md, "Hardening").
      [LOCAL_MODE_BINDING]: { type: "plain_text", value: "true" },
      // The webhook retry schedule, from this process's environment (npm start passes its own).
      ...(process.env.WEBHOOK_RETRY_SCHEDULE
        ? { WEBHOOK_RETRY_SCHEDULE: { type: "plain_text", value: process.env.WEBHOOK_RETRY_SCHEDULE } }
        : {}),
      ...plainVars,
    },
    dev: {
      server: { hostname: "127.0.0.1", port },
      // npm run dev opens the inspector on a loopback port it prints; npm start never opens one.
      inspector: inspect ? { hostname: "127.0.0.1", port: 0 } : false,
      persist: stateDir,
      remote: false,
      watch: inspect,
      logLevel: quiet ? "warn" : "info",
    },
  });
  await worker.ready;
} catch (err) {
  console.error(
    isNetworkError(err)
      ? `serve: the local server could not start, a network request failed: ${oneLine(err)}`
      : `serve: the local server could not start: ${oneLine(err)}`,
  );
  process.exit(1);
}
if (inspect) console.log(`inspector (debugging only): ${await worker.inspectorUrl}`);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await worker.dispose().catch(() => {});
  process.exit(0);
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
