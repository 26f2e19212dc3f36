// The operator console is Workers Static Assets under /console/ (wrangler.toml [assets]); every other
// path still runs the Worker first, so the API's routing answers are unchanged. Checked against the
// real local server (the Workers test pool calls the Worker directly, past the asset router). The
// console's behaviour in a browser is `npm run test:browser`.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

process.env.SVC_STATE_DIR = mkdtempSync(join(tmpdir(), "svc-console-assets-"));
const local = await import("../local.mjs");
let child;
let base;

before(async () => {
  const port = await local.freePort();
  base = `http://127.0.0.1:${port}`;
  local.applyLocalMigrations();
  child = local.startDev(port, { quiet: true });
  await local.waitHealthy(base, child);
});
after(() => {
  child?.kill("SIGTERM");
  rmSync(process.env.SVC_STATE_DIR, { recursive: true, force: true });
});

test("the page and its one bundle are served under /console/ with the strict Content-Security-Policy", async () => {
  for (const [path, type] of [
    ["/console/", "text/html"],
    ["/console/app.js", "javascript"],
    ["/console/console.css", "text/css"],
  ]) {
    const r = await fetch(base + path);
    assert.equal(r.status, 200, path);
    assert.match(r.headers.get("content-type"), new RegExp(type), path);
    const csp = r.headers.get("content-security-policy") ?? "";
    for (const rule of [
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      "connect-src 'self'",
      "frame-ancestors 'none'",
      "base-uri 'none'",
    ])
      assert.ok(csp.includes(rule), `${path}: ${rule} in "${csp}"`);
    assert.ok(!csp.includes("unsafe"), path);
    assert.equal(r.headers.get("x-content-type-options"), "nosniff", path);
    await r.arrayBuffer();
  }
});

test("the page holds no inline script or style and nothing from another origin", async () => {
  const html = await (await fetch(`${base}/console/`)).text();
  assert.match(html, /<script type="module" src="\/console\/app\.js"><\/script>/);
  assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/);
  assert.doesNotMatch(html, /\sstyle=|<style/);
  assert.doesNotMatch(html, /https?:\/\//);
});

test("every path outside /console/ keeps the API's routing answers; /console itself redirects to /console/", async () => {
  const bare = await fetch(`${base}/console?x=1`, { redirect: "manual" });
  assert.equal(bare.status, 308);
  assert.equal(bare.headers.get("location"), "/console/?x=1");
  await bare.arrayBuffer();
  for (const path of ["/v1/nope", "/v1/console/", "/consoles/app.js", "/app.js", "/_headers"]) {
    const r = await fetch(base + path);
    assert.equal(r.status, 404, path);
    assert.deepEqual((await r.json()).error, { code: "NOT_FOUND", message: "Unknown endpoint." }, path);
    assert.equal(r.headers.get("content-security-policy"), null, path);
  }
  const wrongMethod = await fetch(`${base}/v1/memories`, { method: "PUT" });
  assert.equal(wrongMethod.status, 405);
  await wrongMethod.arrayBuffer();
  const principal = await fetch(`${base}/v1/principal`);
  assert.equal(principal.status, 401);
  await principal.arrayBuffer();
});
