// npm start on a busy port: says so, exits non-zero, and leaves the state folder untouched.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

test("npm start refuses a busy port before touching the state folder", async () => {
  const busy = createServer();
  await new Promise((r) => busy.listen(0, "127.0.0.1", r));
  const { port } = busy.address();
  const state = join(mkdtempSync(join(tmpdir(), "svc-start-")), "state");
  try {
    const r = await new Promise((resolve) => {
      // Async spawn: the listening socket above must keep accepting while the script probes it.
      import("node:child_process").then(({ spawn }) => {
        const child = spawn(process.execPath, [new URL("../start.mjs", import.meta.url).pathname], {
          env: { ...process.env, PORT: String(port), SVC_STATE_DIR: state },
          stdio: ["ignore", "pipe", "pipe"],
        });
        let err = "";
        child.stderr.on("data", (d) => (err += d));
        child.on("exit", (code) => resolve({ status: code, stderr: err }));
      });
    });
    assert.equal(r.status, 1);
    assert.match(r.stderr, new RegExp(`port ${port} on 127.0.0.1 is already in use`));
    assert.match(r.stderr, /PORT=8788 npm start/);
    assert.equal(existsSync(state), false);
  } finally {
    busy.close();
  }
});

test("npm start refuses a malformed WEBHOOK_RETRY_SCHEDULE before touching the state folder", async () => {
  const state = join(mkdtempSync(join(tmpdir(), "svc-start-")), "state");
  const { spawnSync } = await import("node:child_process");
  for (const schedule of ["2", "0s,1m", "1.5s", "2s,,2s", "soon"]) {
    const r = spawnSync(process.execPath, [new URL("../start.mjs", import.meta.url).pathname], {
      env: { ...process.env, PORT: "0", SVC_STATE_DIR: state, WEBHOOK_RETRY_SCHEDULE: schedule },
      encoding: "utf8",
    });
    assert.equal(r.status, 1, schedule);
    assert.match(r.stderr, /WEBHOOK_RETRY_SCHEDULE=".*" is not a comma list of durations such as 2s,2s,2s,2s,2s/);
    assert.equal(existsSync(state), false);
  }
});
