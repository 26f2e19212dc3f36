#!/usr/bin/env node
// Three fixes for @cloudflare/vitest-pool-workers 0.15.1, applied to its installed files. 0.15.1 is the
// last release that runs on Node 20: every later one depends on a wrangler that needs Node 22. Each
// fix is the one upstream made in a later release:
//   1. Every construction of a SELF or Durable Object wrapper wrapped the wrapper class's prototype in
//      one more Proxy, so each request through SELF, and each call to an object, cost more than the
//      one before: a test file's 800th request took ~50x its first (cloudflare/workers-sdk#15092,
//      fixed by cloudflare/workers-sdk#15106). The Proxy is now installed once per class.
//   2. With vitest's `isolate: false` the pool wrapped the module runner's transport once more for
//      every test file, so module fetches (one per request and per object call) got slower with each
//      file (cloudflare/workers-sdk#16135). The transport is now wrapped once.
//   3. workerd's "WebSocket peer disconnected" when the pool shuts a runner down is ignored like the
//      pool's other shutdown disconnects (cloudflare/workers-sdk#13833).
// Idempotent. Any other version of the package is refused: its files need this script looked at again.
//   node scripts/patch-vitest-pool.mjs
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const VERSION = "0.15.1";
const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const pkg = join(root, "node_modules", "@cloudflare", "vitest-pool-workers");

const FIXES = [
  {
    file: "dist/worker/lib/cloudflare/test-internal.mjs",
    from: `	function Class(...args) {
		Class.prototype = new Proxy(Class.prototype, { get(target, key, receiver) {
			const value = Reflect.get(target, key, receiver);
			if (value !== void 0) return value;
			if (typeof key === "symbol" || IGNORED_KEYS.includes(key)) return;
			return getUnknownPrototypeKey.call(receiver, key);
		} });
		return Reflect.construct(superClass, args, Class);
	}`,
    to: `	let prototypeProxied = false; // patched by scripts/patch-vitest-pool.mjs: one Proxy per class
	function Class(...args) {
		if (!prototypeProxied) {
			prototypeProxied = true;
			Class.prototype = new Proxy(Class.prototype, { get(target, key, receiver) {
				const value = Reflect.get(target, key, receiver);
				if (value !== void 0) return value;
				if (typeof key === "symbol" || IGNORED_KEYS.includes(key)) return;
				return getUnknownPrototypeKey.call(receiver, key);
			} });
		}
		return Reflect.construct(superClass, args, Class);
	}`,
  },
  {
    file: "dist/worker/index.mjs",
    from: `			onModuleRunner(moduleRunner) {
				const runner = moduleRunner;
				if (runner.transport?.invoke) {`,
    to: `			onModuleRunner(moduleRunner) {
				const runner = moduleRunner;
				if (runner.__vpwTransportWrapped) return; // patched by scripts/patch-vitest-pool.mjs: wrap once
				if (runner.transport?.invoke) {
					runner.__vpwTransportWrapped = true;`,
  },
  {
    file: "dist/pool/index.mjs",
    from: `	"disconnected: WebSocket was aborted",
`,
    to: `	"disconnected: WebSocket was aborted",
	"disconnected: WebSocket peer disconnected", // patched by scripts/patch-vitest-pool.mjs
`,
  },
];

/** Applies the fixes that are not in place yet; returns how many it applied. */
export function patchVitestPool() {
  const version = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")).version;
  if (version !== VERSION)
    throw new Error(
      `scripts/patch-vitest-pool.mjs fixes @cloudflare/vitest-pool-workers ${VERSION}, not ${version}: check whether ${version} still needs each fix, then update or delete the script`,
    );
  let applied = 0;
  for (const { file, from, to } of FIXES) {
    const path = join(pkg, file);
    const text = readFileSync(path, "utf8");
    if (text.includes(to)) continue;
    if (text.split(from).length !== 2)
      throw new Error(
        `scripts/patch-vitest-pool.mjs: ${file} does not hold the expected code once; reinstall with npm ci`,
      );
    writeFileSync(path, text.replace(from, to));
    applied++;
  }
  return applied;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const applied = patchVitestPool();
  console.log(
    `@cloudflare/vitest-pool-workers ${VERSION}: ${applied} fix(es) applied, ${FIXES.length - applied} already in place`,
  );
}
