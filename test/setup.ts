import { applyD1Migrations, env } from "cloudflare:test";
import { afterEach } from "vitest";
import { delivery } from "../src/domains/webhooks/routes";
import { clock } from "../src/http/clock";

/** Tests never reach the network: a test that delivers webhooks installs its own sender. */
export const offlineSender: typeof delivery.send = async (url) => {
  throw new Error(`tests do not send to ${url}`);
};
delivery.send = offlineSender;

await applyD1Migrations(env.INDEX_DB, env.TEST_D1_MIGRATIONS);

afterEach(() => {
  clock.reset();
  delivery.send = offlineSender;
});
