#!/usr/bin/env node
// npm start: install if needed, apply local migrations, serve the whole API on local workerd at
// 127.0.0.1:${PORT:-8787} with state in ${SVC_STATE_DIR:-.wrangler/state}, and on the first run
// create the default organization, printing its owner key and temporary password once.
// WEBHOOK_RETRY_SCHEDULE in its environment sets the webhook retry schedule (e.g. 2s,2s,2s,2s,2s).
// No debugger port is opened; `npm run dev` (this script with --inspect) opens one on loopback.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";

const port = Number(process.env.PORT || 8787);
const url = `http://127.0.0.1:${port}`;

// WEBHOOK_RETRY_SCHEDULE goes to the Worker as is (scripts/serve.mjs); a malformed one is said here, not
// later in the server's log. The Worker's grammar: a comma list of positive whole durations (ms, s, m, h, d).
const retrySchedule = process.env.WEBHOOK_RETRY_SCHEDULE?.trim();
if (retrySchedule && !/^0*[1-9]\d*(ms|s|m|h|d)(\s*,\s*0*[1-9]\d*(ms|s|m|h|d))*$/.test(retrySchedule)) {
  console.error(`npm start: WEBHOOK_RETRY_SCHEDULE="${retrySchedule}" is not a comma list of durations such as 2s,2s,2s,2s,2s
(whole numbers above 0 with ms, s, m, h or d). Nothing was changed.`);
  process.exit(1);
}

// A busy port is said plainly, before anything is installed or the state folder is touched.
const portProblem = await new Promise((resolve) => {
  const probe = createServer();
  probe.once("error", (err) => resolve(err.code === "EADDRINUSE" ? "in use" : (err.code ?? String(err))));
  probe.listen(port, "127.0.0.1", () => probe.close(() => resolve(null)));
});
if (portProblem) {
  console.error(`npm start: port ${port} on 127.0.0.1 is ${portProblem === "in use" ? "already in use (another npm start?)" : `not usable (${portProblem})`}.
Stop that process, or start on another port: PORT=8788 npm start. Nothing was changed.`);
  process.exit(1);
}

execFileSync(process.execPath, [new URL("./ensure-deps.mjs", import.meta.url).pathname], { stdio: "inherit" });
const {
  applyLocalMigrations,
  bootstrapVia,
  operatorToken,
  serverFile,
  servingBanner,
  startDev,
  stateDir,
  waitHealthy,
} = await import("./local.mjs");

try {
  applyLocalMigrations();
} catch (err) {
  console.error(`npm start: ${err.message}`);
  process.exit(1);
}
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

try {
  await waitHealthy(url, child);
} catch (err) {
  console.error(`npm start: ${err.message}`);
  stop();
  process.exit(1);
}
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
} else {
  // A later start: say what exists and where, since the key was shown only the first time.
  const known = JSON.parse(readFileSync(marker, "utf8"));
  console.log(`
Default organization ${known.org_id} (dashboard user ${known.owner_username}) exists; its state lives in ${stateDir}.
Its owner key was shown on the first start only. Lost it? \`npm run -s bootstrap -- --json\` creates another
organization, or start over with an empty folder: SVC_STATE_DIR=/tmp/svc-fresh npm start
`);
}
console.log(servingBanner(port, stateDir));
