#!/usr/bin/env node
// npm test: every check that needs no running server. The vitest suite spends much of its time waiting
// on round trips between Node and workerd, so the other checks (type checks, lint, formatting, the node tests) run
// beside it in a second lane instead of after it. Each step's output is printed whole when it ends, so
// two steps never interleave their lines; the run fails if any step fails, after every step has run.
// Run one lane's steps alone with `node scripts/test.mjs <step name>...` (e.g. `vitest`, `typecheck`).
import { spawn } from "node:child_process";

const npx = (...args) => ["npx", ...args];
const STEPS = [
  { name: "vitest", lane: 0, cmd: npx("vitest", "run") },
  { name: "typecheck", lane: 1, cmd: npx("tsc", "--noEmit") },
  { name: "typecheck console", lane: 1, cmd: npx("tsc", "--noEmit", "-p", "console") },
  { name: "typecheck examples", lane: 1, cmd: npx("tsc", "-p", "examples/tsconfig.json") },
  { name: "lint openapi", lane: 1, cmd: ["npm", "run", "-s", "lint:openapi"] },
  { name: "node tests", lane: 1, cmd: ["node", "--test", "scripts/test/"] },
  { name: "lint", lane: 1, cmd: npx("eslint", ".") },
  { name: "format", lane: 1, cmd: ["npm", "run", "-s", "format:check"] },
];

function run(step) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(step.cmd[0], step.cmd.slice(1), {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, FORCE_COLOR: process.stdout.isTTY ? "1" : "0" },
    });
    const out = [];
    child.stdout.on("data", (d) => out.push(d));
    child.stderr.on("data", (d) => out.push(d));
    child.on("close", (code) => {
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      process.stdout.write(
        `\n=== ${step.name} (${step.cmd.join(" ")}): ${code === 0 ? "passed" : `FAILED (exit ${code})`} in ${seconds} s\n`,
      );
      process.stdout.write(Buffer.concat(out));
      resolve({ step, code, seconds });
    });
  });
}

const only = process.argv.slice(2);
const chosen = only.length ? STEPS.filter((s) => only.includes(s.name)) : STEPS;
if (only.length && chosen.length !== only.length) {
  console.error(`unknown step; the steps are: ${STEPS.map((s) => s.name).join(", ")}`);
  process.exit(2);
}
const started = Date.now();
const lanes = [...new Set(chosen.map((s) => s.lane))].map((lane) => chosen.filter((s) => s.lane === lane));
const results = (
  await Promise.all(
    lanes.map(async (steps) => {
      const done = [];
      for (const step of steps) done.push(await run(step));
      return done;
    }),
  )
).flat();
const failed = results.filter((r) => r.code !== 0);
console.log(`\n${results.map((r) => `${r.code === 0 ? "ok  " : "FAIL"} ${r.step.name} ${r.seconds} s`).join("\n")}`);
console.log(
  `npm test: ${failed.length ? `${failed.length} of ${results.length} steps failed` : `all ${results.length} steps passed`} in ${((Date.now() - started) / 1000).toFixed(1)} s`,
);
process.exit(failed.length ? 1 : 0);
