import { applyD1Migrations, env } from "cloudflare:test";
import { afterEach } from "vitest";
import { clock } from "../src/http/clock";

await applyD1Migrations(env.INDEX_DB, env.TEST_D1_MIGRATIONS);

afterEach(() => {
  clock.reset();
});
