#!/usr/bin/env node
// npm start: install if needed, apply local migrations, serve the whole API on local workerd at
// 127.0.0.1:${PORT:-8787} with state in ${SVC_STATE_DIR:-.wrangler/state}, and on the first run
// create the default organization, printing its owner key and temporary password once.
// No debugger port is opened; `npm run dev` (this script with --inspect) opens one on loopback.
import { execFileSync } from "node:child_process";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

execFileSync(process.execPath, [new URL("./ensure-deps.mjs", import.meta.url).pathname], { stdio: "inherit" });
const { applyLocalMigrations, bootstrapVia, operatorToken, serverFile, startDev, stateDir, waitHealthy } = await import("./local.mjs");

const port = Number(process.env.PORT || 8787);
const url = `http://127.0.0.1:${port}`;
applyLocalMigrations();
const token = operatorToken();
const child = startDev(port, { inspect: process.argv.includes("--inspect") });
const stop = () => {
  rmSync(serverFile(), { force: true });
  child.kill("SIGTERM");
};
process.on("SIGINT", stop);
process.on("SIGTERM", stop);
child.on("exit", (code) => {
  rmSync(serverFile(), { force: true });
  process.exit(code ?? 0);
});

await waitHealthy(url, child);
writeFileSync(serverFile(), JSON.stringify({ url, pid: process.pid }));
const marker = join(stateDir, "default-org.json");
if (!existsSync(marker)) {
  const org = await bootstrapVia(url, token);
  writeFileSync(marker, JSON.stringify({ org_id: org.org_id, owner_username: org.owner_username }));
  console.log(`
Default organization ${org.org_id} created. Shown once; store them now:
  owner API key:       ${org.api_key}
  dashboard username:  ${org.owner_username}
  temporary password:  ${org.temporary_password}
`);
}
console.log(`serving on ${url} (state: ${stateDir})`);
