#!/usr/bin/env node
// Builds the operator console (console/) into console/dist, the Workers Static Assets folder of
// wrangler.toml: one bundle console/app.js (TypeScript + Cytoscape.js, by esbuild), the page, its
// stylesheet, and _headers (the console's Content-Security-Policy).
//   node scripts/build-console.mjs [--if-missing]
import { build } from "esbuild";
import { cpSync, existsSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const dist = join(root, "console", "dist");
const out = join(dist, "console");
if (process.argv.includes("--if-missing") && existsSync(join(out, "app.js")) && existsSync(join(dist, "_headers")))
  process.exit(0);

rmSync(dist, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [join(root, "console", "src", "main.ts")],
  outfile: join(out, "app.js"),
  bundle: true,
  minify: true,
  format: "esm",
  target: "es2022",
  platform: "browser",
  legalComments: "linked",
  logLevel: "warning",
});
cpSync(join(root, "console", "public"), out, { recursive: true });
cpSync(join(root, "console", "_headers"), join(dist, "_headers"));
