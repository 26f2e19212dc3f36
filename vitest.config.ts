import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { readdirSync } from "node:fs";
import { defineConfig } from "vitest/config";

const d1Migrations = await readD1Migrations("./schema/d1");

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
  },
});
