#!/usr/bin/env node
// npm run bootstrap -- [--json] [--remote URL]
// Creates a new organization and prints org_id, api_key (scopes *, trust verified, role owner),
// owner_username and temporary_password. Locally it uses the running server of the same
// SVC_STATE_DIR, or starts one for the moment; --remote URL targets a deployment whose
// OPERATOR_TOKEN secret is given in the SVC_OPERATOR_TOKEN environment variable.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer } from "node:net";

const args = process.argv.slice(2);
const json = args.includes("--json");
const remoteAt = args.indexOf("--remote");

async function freePort() {
  return new Promise((res) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

async function run() {
  if (remoteAt >= 0) {
    const url = args[remoteAt + 1];
    const token = process.env.SVC_OPERATOR_TOKEN;
    if (!url || !token) throw new Error("--remote needs a URL and SVC_OPERATOR_TOKEN in the environment");
    const { bootstrapVia } = await import("./local.mjs");
    return bootstrapVia(url.replace(/\/$/, ""), token);
  }
  execFileSync(process.execPath, [new URL("./ensure-deps.mjs", import.meta.url).pathname], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  const local = await import("./local.mjs");
  const token = local.operatorToken();
  if (existsSync(local.serverFile())) {
    const { url } = JSON.parse(readFileSync(local.serverFile(), "utf8"));
    try {
      await local.waitHealthy(url, null, 2_000);
      return await local.bootstrapVia(url, token);
    } catch {
      // stale server file: fall through and start one for the moment
    }
  }
  local.applyLocalMigrations();
  const port = await freePort();
  const child = local.startDev(port, { quiet: true });
  try {
    await local.waitHealthy(`http://127.0.0.1:${port}`, child);
    return await local.bootstrapVia(`http://127.0.0.1:${port}`, token);
  } finally {
    child.kill("SIGTERM");
  }
}

try {
  const org = await run();
  if (json) console.log(JSON.stringify(org));
  else
    console.log(
      `organization ${org.org_id}\n  owner API key:       ${org.api_key}\n  dashboard username:  ${org.owner_username}\n  temporary password:  ${org.temporary_password}`,
    );
} catch (err) {
  console.error(String(err?.message ?? err));
  process.exit(1);
}
