// examples/quickstart.sh against an address nothing listens on: it names the address and the fix.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createServer } from "node:net";
import { test } from "node:test";

test("quickstart.sh names the base URL it could not reach", async () => {
  const probe = createServer();
  await new Promise((r) => probe.listen(0, "127.0.0.1", r));
  const { port } = probe.address();
  await new Promise((r) => probe.close(r)); // a port that was free a moment ago: nothing listens there
  const base = `http://127.0.0.1:${port}`;
  const r = spawnSync("bash", [new URL("../../examples/quickstart.sh", import.meta.url).pathname], {
    env: { ...process.env, KEY: "svc_sk_unused", BASE: base },
    encoding: "utf8",
  });
  assert.equal(r.status, 1);
  assert.match(r.stderr, new RegExp(`POST /v1/observations: could not reach ${base.replace(/[.]/g, "\\.")}`));
  assert.match(r.stderr, /npm start/);
});
