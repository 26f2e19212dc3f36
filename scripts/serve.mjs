#!/usr/bin/env node
// The local server process behind `npm start`, `npm run dev`, `npm run bootstrap` and the MCP
// conformance runner: wrangler's programmatic dev API on local workerd, in this process.
//   node scripts/serve.mjs --port N [--inspect] [--quiet]
// Why not `wrangler dev`: its CLI always opens a V8 inspector (a WebSocket on loopback that accepts
// any Origin and evaluates code inside the Worker serving every organization), and `--var` would put
// the operator token on the command line, readable by every local user in the process list. Here the
// inspector stays closed unless --inspect (npm run dev) asks for it, and the token (and the password
// pepper) are read from the state folder (operator.json, pepper.json; mode 600) into secret
// bindings, never into argv or the environment.
import { unstable_startWorker } from "wrangler";
import { join } from "node:path";
import { LOCAL_MODE_BINDING, operatorToken, passwordPepper, root, stateDir } from "./local.mjs";

const args = process.argv.slice(2);
const portAt = args.indexOf("--port");
const port = Number(portAt >= 0 ? args[portAt + 1] : process.env.PORT || 8787);
const inspect = args.includes("--inspect");
const quiet = args.includes("--quiet");

const worker = await unstable_startWorker({
  config: join(root, "wrangler.toml"),
  bindings: {
    OPERATOR_TOKEN: { type: "secret_text", value: operatorToken() },
    // Dashboard passwords: the state folder's pepper (mode 600), and this server's own origin for passkeys.
    PASSWORD_PEPPER: { type: "secret_text", value: passwordPepper() },
    WEBAUTHN_ORIGINS: { type: "plain_text", value: `http://localhost:${port}` },
    // Marks the embedded local server: loopback browser origins may call /mcp (see README "Security").
    [LOCAL_MODE_BINDING]: { type: "plain_text", value: "true" },
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
