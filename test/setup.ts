// Runs before each test file. One vitest worker runs its files one after another in one workerd
// process (vitest.config.ts: isolate false), so each file first gets the storage a process of its own
// would start with: reset() deletes every Durable Object with its storage and alarms (organizations,
// the ownership registry, and the D1 database behind INDEX_DB); then the D1 migrations are applied.
import { applyD1Migrations, env, reset } from "cloudflare:test";
import { afterEach } from "vitest";
import { clock } from "../src/http/clock";

await reset();
await applyD1Migrations(env.INDEX_DB, env.TEST_D1_MIGRATIONS);

afterEach(() => {
  clock.reset();
});
