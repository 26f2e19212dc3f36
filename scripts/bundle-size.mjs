#!/usr/bin/env node
// npm run bundle:size: builds the production bundle exactly as `wrangler deploy` would (dry run, no
// network) and fails when it exceeds the limit gzipped (3 MB; Workers' free-plan ceiling), so a
// dependency that bloats the Worker is caught in CI rather than at deploy time.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

export const LIMIT_BYTES = 3 * 1024 * 1024;

/** Gzipped size of the modules wrangler would upload (source maps are not uploaded). */
export function gzippedSize(dir) {
  return readdirSync(dir)
    .filter((f) => !f.endsWith(".map") && !f.endsWith(".md") && statSync(join(dir, f)).isFile())
    .reduce((sum, f) => sum + gzipSync(readFileSync(join(dir, f))).length, 0);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const root = join(fileURLToPath(import.meta.url), "..", "..");
  const out = mkdtempSync(join(tmpdir(), "svc-bundle-"));
  try {
    const env = process.argv.includes("--env") ? ["--env", process.argv[process.argv.indexOf("--env") + 1]] : [];
    const r = spawnSync(
      join(root, "node_modules", ".bin", "wrangler"),
      ["deploy", "--dry-run", "--outdir", out, ...env],
      { cwd: root, encoding: "utf8", env: { ...process.env, WRANGLER_SEND_METRICS: "false" } },
    );
    if (r.status !== 0) {
      process.stderr.write(`${r.stdout}${r.stderr}`);
      process.exit(1);
    }
    const size = gzippedSize(out);
    const line = `production bundle: ${(size / 1024).toFixed(1)} KiB gzipped (limit ${LIMIT_BYTES / 1024 / 1024} MB)`;
    if (size > LIMIT_BYTES) {
      console.error(`${line}: TOO LARGE`);
      process.exit(1);
    }
    console.log(line);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}
