import { execFileSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { defineConfig } from "vitest/config";
import { patchVitestPool } from "./scripts/patch-vitest-pool.mjs";

// The pool's fixes (scripts/patch-vitest-pool.mjs) go in before the pool is loaded.
patchVitestPool();
const { cloudflareTest, readD1Migrations } = await import("@cloudflare/vitest-pool-workers");
const d1Migrations = await readD1Migrations("./schema/d1");
// wrangler.toml's [assets] folder (the operator console) must exist before the pool reads the config.
execFileSync(process.execPath, ["scripts/build-console.mjs", "--if-missing"], { stdio: "inherit" });

export default defineConfig({
  plugins: [
    cloudflareTest({
      wrangler: { configPath: "./wrangler.toml" },
      miniflare: {
        bindings: {
          TEST_D1_MIGRATIONS: d1Migrations,
          TEST_D1_MIGRATION_FILES: readdirSync("./schema/d1").filter((f) => f.endsWith(".sql")).sort(),
          // Tests never reach the network: every org object is built with the offline webhook sender;
          // a test that observes deliveries gives its own object a recording sender (OrgStore.deps).
          WEBHOOK_SENDER: "offline",
          // Dashboard accounts: a fixed test pepper; WebAuthn RP ID defaults to "localhost".
          PASSWORD_PEPPER: "test-pepper-not-a-secret",
          WEBAUTHN_ORIGINS: "http://localhost:8787",
        },
      },
    }),
  ],
  test: {
    include: ["test/**/*.test.ts"],
    setupFiles: ["./test/setup.ts"],
    testTimeout: 30_000,
    // Files share a workerd process per worker instead of starting one each (~4 s of CPU per file:
    // the runtime, the test runner and the app's ~540 modules); test/setup.ts gives every file empty
    // storage. Modules are shared too, so a test must not replace a module (vi.mock).
    isolate: false,
    // The suite waits on round trips between workerd and Node more than it computes: two workers
    // overlap them even on two cores.
    maxWorkers: 2,
  },
});
