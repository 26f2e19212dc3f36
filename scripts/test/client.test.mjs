// The typed client package (clients/typescript): its types are what the pinned openapi-typescript makes
// of the current docs/openapi.json, its dependencies are pinned, and createClient sends the key.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

const root = new URL("../..", import.meta.url).pathname;
const client = join(root, "clients/typescript");
const json = (path) => JSON.parse(readFileSync(path, "utf8"));

test("clients/typescript/src/openapi.d.ts is generated from the current docs/openapi.json", () => {
  const fresh = join(mkdtempSync(join(tmpdir(), "svc-types-")), "openapi.d.ts");
  execFileSync(join(root, "node_modules/.bin/openapi-typescript"), ["docs/openapi.json", "-o", fresh], {
    cwd: root,
    stdio: "ignore",
  });
  assert.ok(
    readFileSync(fresh, "utf8") === readFileSync(join(client, "src/openapi.d.ts"), "utf8"),
    "clients/typescript/src/openapi.d.ts is stale: npm run generate -w clients/typescript",
  );
});

test("the client pins openapi-fetch and the generator the root project uses", () => {
  const pkg = json(join(client, "package.json"));
  const rootPkg = json(join(root, "package.json"));
  assert.equal(pkg.name, "@svc-memory/client");
  const exact = /^\d+\.\d+\.\d+$/;
  assert.match(pkg.dependencies["openapi-fetch"], exact);
  assert.match(pkg.devDependencies["openapi-typescript"], exact);
  assert.equal(pkg.devDependencies["openapi-typescript"], rootPkg.devDependencies["openapi-typescript"]);
  assert.equal(json(join(root, "node_modules/openapi-fetch/package.json")).version, pkg.dependencies["openapi-fetch"]);
});

test("createClient sends the key as a bearer credential, to the local server unless told otherwise", () => {
  // The client is TypeScript: tsx (pinned) runs a probe that records the requests instead of sending them.
  const probe = join(mkdtempSync(join(tmpdir(), "svc-client-")), "probe.mts");
  writeFileSync(
    probe,
    `
    import { createClient } from ${JSON.stringify(join(client, "src/index.ts"))};
    const seen: string[] = [];
    const fetch = async (req: Request) => {
      seen.push(req.method + " " + req.url + " " + req.headers.get("authorization"));
      return new Response(JSON.stringify({ data: { status: "ok" }, meta: {} }), { headers: { "content-type": "application/json" } });
    };
    await createClient({ apiKey: "svc_sk_local", fetch }).GET("/healthz");
    await createClient({ apiKey: "svc_sk_remote", baseUrl: "https://memory.example.org", fetch })
      .POST("/v1/context/{id}/feedback", { params: { path: { id: "ctx_1" } }, body: { outcome: "useful" } });
    console.log(JSON.stringify(seen));
  `,
  );
  const out = execFileSync(join(root, "node_modules/.bin/tsx"), [probe], { cwd: root, encoding: "utf8" });
  assert.deepEqual(JSON.parse(out), [
    "GET http://localhost:8787/healthz Bearer svc_sk_local",
    "POST https://memory.example.org/v1/context/ctx_1/feedback Bearer svc_sk_remote",
  ]);
});
