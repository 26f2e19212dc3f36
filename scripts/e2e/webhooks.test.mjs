// Webhook delivery end to end, over real HTTP: `npm start` (scripts/start.mjs) with
// WEBHOOK_RETRY_SCHEDULE=1s in its environment, a loopback receiver that fails twice and then accepts.
// The service retries by itself a second apart under one delivery id, and every attempt verifies with
// SPEC's X-Svc-Signature (@octokit/webhooks-methods), the node:crypto Standard Webhooks snippet of
// docs/api-guide.md and the standardwebhooks package.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";
import { verify } from "@octokit/webhooks-methods";
import { Webhook } from "standardwebhooks";
import { freePort, root } from "../local.mjs";

/** The node:crypto verifier of docs/api-guide.md, exactly as printed there. */
async function guideVerifier(dir) {
  const guide = readFileSync(join(root, "docs", "api-guide.md"), "utf8");
  const block = [...guide.matchAll(/```js\n([\s\S]*?)```/g)]
    .map((m) => m[1])
    .find((code) => code.includes("function verifyStandardWebhook"));
  assert.ok(block, "docs/api-guide.md shows verifyStandardWebhook in a js block");
  const file = join(dir, "guide-verifier.mjs");
  writeFileSync(file, block.replace(/^ {2}/gm, "") + "\nexport { verifyStandardWebhook };\n");
  return (await import(pathToFileURL(file).href)).verifyStandardWebhook;
}

test(
  "npm start retries a failing receiver on WEBHOOK_RETRY_SCHEDULE; every attempt verifies three ways",
  { timeout: 240_000 },
  async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-webhooks-e2e-"));
    const secret = "ünïcødé-s3cret-✓-e2e";
    const received = [];
    const receiver = createServer(async (req, res) => {
      let body = "";
      for await (const chunk of req) body += chunk;
      received.push({ at: Date.now(), headers: req.headers, body });
      res.writeHead(received.length <= 2 ? 500 : 204).end();
    });
    await new Promise((r) => receiver.listen(0, "127.0.0.1", r));
    const port = await freePort();
    const server = spawn(process.execPath, [join(root, "scripts", "start.mjs")], {
      cwd: root,
      env: {
        ...process.env,
        PORT: String(port),
        SVC_STATE_DIR: join(dir, "state"),
        WEBHOOK_RETRY_SCHEDULE: "1s,1s,1s,1s",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    server.stdout.on("data", (d) => (output += d));
    server.stderr.on("data", (d) => (output += d));
    try {
      await new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`npm start did not serve within 180 s:\n${output}`)), 180_000);
        server.stdout.on("data", () => /serving the API on /.test(output) && (clearTimeout(timer), resolve()));
        server.on("exit", (code) => reject(new Error(`npm start exited with ${code}:\n${output}`)));
      });
      const key = output.match(/owner API key:\s+(\S+)/)[1];
      const api = async (method, path, body) => {
        const r = await fetch(`http://127.0.0.1:${port}${path}`, {
          method,
          headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const json = await r.json();
        assert.ok(r.ok, `${method} ${path}: ${r.status} ${JSON.stringify(json)}`);
        return json.data;
      };
      const hook = await api("POST", "/v1/webhooks", {
        url: `http://127.0.0.1:${receiver.address().port}/hook`,
        secret,
        events: ["*"],
      });
      await api("POST", "/v1/observations", {
        subject_id: "e2e",
        kind: "note",
        content: "delivered on the third attempt",
        source: { type: "test" },
      });
      const deadline = Date.now() + 30_000;
      while (received.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      assert.equal(received.length, 3, `three attempts arrived; the server said:\n${output.slice(-2000)}`);

      const ids = new Set(received.map((r) => r.headers["x-svc-delivery"]));
      assert.equal(ids.size, 1, "one delivery id across the attempts");
      const gaps = received.slice(1).map((r, i) => r.at - received[i].at);
      for (const gap of gaps) assert.ok(gap >= 900 && gap < 5_000, `attempts about a second apart: ${gaps}`);
      const verifyGuide = await guideVerifier(dir);
      const library = new Webhook(Buffer.from(secret, "utf8").toString("base64"));
      for (const r of received) {
        assert.equal(r.headers["webhook-id"], r.headers["x-svc-delivery"]);
        assert.equal(await verify(secret, r.body, r.headers["x-svc-signature"]), true);
        assert.equal(verifyGuide(secret, r.headers, r.body), true);
        assert.deepEqual(library.verify(r.body, r.headers), JSON.parse(r.body));
        assert.equal(verifyGuide("another-secret-entirely", r.headers, r.body), false);
        assert.equal(verifyGuide(secret, r.headers, r.body + " "), false);
        assert.equal(
          verifyGuide(
            secret,
            { ...r.headers, "webhook-timestamp": String(Number(r.headers["webhook-timestamp"]) - 600) },
            r.body,
          ),
          false,
        );
        assert.throws(() => library.verify(r.body + " ", r.headers));
      }
      const { deliveries } = await api("GET", `/v1/webhooks/${hook.webhook_id}/deliveries`);
      assert.deepEqual(
        deliveries.map((d) => [d.id, d.status, d.attempts, d.response_status]),
        [[[...ids][0], "delivered", 3, 204]],
      );
    } finally {
      const exited = new Promise((r) => (server.exitCode === null ? server.once("exit", r) : r()));
      server.kill("SIGTERM");
      await exited;
      receiver.close();
      rmSync(dir, { recursive: true, force: true });
    }
  },
);
