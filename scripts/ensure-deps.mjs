#!/usr/bin/env node
// Installs the pinned dependencies when they are missing or older than package-lock.json, so that
// `npm start` and `npm test` work on a fresh clone with nothing else run first.
import { execSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const marker = join(root, "node_modules", ".package-lock.json");
const lock = join(root, "package-lock.json");
const stale = !existsSync(marker) || (existsSync(lock) && statSync(lock).mtimeMs > statSync(marker).mtimeMs);
if (stale) {
  console.error("installing dependencies (npm ci)…");
  execSync(existsSync(lock) ? "npm ci --no-audit --no-fund" : "npm install --no-audit --no-fund", {
    cwd: root,
    stdio: "inherit",
  });
}
