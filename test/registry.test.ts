// The record-ownership registry (src/registry): sharded on Durable Objects, claimed by import, fed by
// each write before it answers and by the outbox as the retry.
import { env, runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { durableRegistry } from "../src/registry/client";
import { groupByShard, recordIdFor, registryShardOf } from "../src/registry/shards";
import { isId } from "../src/http/ids";
import { RegistrationBatcher } from "../src/org/outbox";
import {
  appendOk,
  call,
  consolidateOk,
  expectError,
  failingRegistry,
  inOrg,
  newOrg,
  obs,
  orgStub,
  registryOwners,
  supports,
} from "./helpers";

const importNdjson = (key: string, body: string) =>
  call("POST", "/v1/import", { key, raw: body, headers: { "content-type": "application/x-ndjson" } });

async function exportedOrg() {
  const a = await newOrg();
  const p = (
    await call("POST", "/v1/projects/resolve", { key: a.api_key, body: { reference: "repo:x", create: true } })
  ).json.data.project_id;
  const o = await appendOk(a.api_key, obs("s", "evidence", { project_id: p }));
  const [c] = await consolidateOk(a.api_key, "s", [{ kind: "fact", statement: "a fact", sources: supports(o) }]);
  const text = (await call("GET", "/v1/export", { key: a.api_key })).text;
  return { a, text, ids: [p, o, c] };
}

const recordCount = (orgId: string) =>
  inOrg(
    orgId,
    (x) =>
      x.db.first<{ n: number }>(
        "SELECT (SELECT count(*) FROM projects) + (SELECT count(*) FROM observations) + (SELECT count(*) FROM claims) AS n",
      )!.n,
  );

describe("shard routing", () => {
  it("is the first two hex characters of the id's hex part, fixed forever", () => {
    expect(registryShardOf("obs_" + "3f" + "0".repeat(30))).toBe("ids:3f");
    expect(registryShardOf("claim_" + "a0" + "1".repeat(30))).toBe("ids:a0");
    expect(registryShardOf("prj_" + "FF" + "1".repeat(30))).toBe("ids:ff");
    // Not an id form: still a stable shard in range.
    expect(registryShardOf("weird")).toBe(registryShardOf("weird"));
    expect(registryShardOf("weird")).toMatch(/^ids:[0-9a-f]{2}$/);
    const grouped = groupByShard([
      "obs_00" + "a".repeat(30),
      "obs_00" + "b".repeat(30),
      "obs_01" + "a".repeat(30),
      "obs_00" + "a".repeat(30),
    ]);
    expect([...grouped]).toEqual([
      ["ids:00", ["obs_00" + "a".repeat(30), "obs_00" + "b".repeat(30)]],
      ["ids:01", ["obs_01" + "a".repeat(30)]],
    ]);
  });
});

describe("new record ids", () => {
  it("live in their organization's shard and are still prefix + 32 hex", () => {
    const org = "org_" + "7c" + "9".repeat(30);
    const ids = Array.from({ length: 50 }, (_, i) => recordIdFor(org, ["obs_", "claim_", "prj_"][i % 3]));
    for (const id of ids) {
      expect(registryShardOf(id)).toBe("ids:7c");
      expect(isId(id.slice(0, id.indexOf("_") + 1), id)).toBe(true);
    }
    expect(new Set(ids).size).toBe(50);
  });
});

describe("registration batching", () => {
  it("sends what arrives during a batch together in the next, and settles each caller with its own batch", async () => {
    const flushed: string[][] = [];
    let release!: () => void;
    const batcher = new RegistrationBatcher(
      async (ids) => {
        flushed.push(ids);
        if (flushed.length === 1)
          await new Promise<void>((r) => {
            release = r;
          });
      },
      (err) => {
        throw err;
      },
    );
    const settled: string[] = [];
    const first = batcher.register(["a"]).then(() => settled.push("a"));
    const sameTick = batcher.register(["b"]).then(() => settled.push("b"));
    await new Promise((r) => setTimeout(r, 0));
    expect(flushed).toEqual([["a", "b"]]);
    const later = [
      batcher.register(["c"]).then(() => settled.push("c")),
      batcher.register(["d", "e"]).then(() => settled.push("d")),
    ];
    await new Promise((r) => setTimeout(r, 0));
    // c and d wait for the batch in flight; nobody has been answered yet.
    expect(flushed).toEqual([["a", "b"]]);
    expect(settled).toEqual([]);
    release();
    await Promise.all([first, sameTick, ...later]);
    expect(flushed).toEqual([
      ["a", "b"],
      ["c", "d", "e"],
    ]);
    expect(settled).toEqual(["a", "b", "c", "d"]);
    await batcher.settled();
  });

  it("settles the callers of a failed batch, reports the failure, and still sends the next batch", async () => {
    const flushed: string[][] = [];
    const errors: unknown[] = [];
    let fail!: (err: Error) => void;
    const batcher = new RegistrationBatcher(
      async (ids) => {
        flushed.push(ids);
        if (flushed.length === 1)
          await new Promise<void>((_, reject) => {
            fail = reject;
          });
      },
      (err) => errors.push(err),
    );
    const first = batcher.register(["a"]);
    await new Promise((r) => setTimeout(r, 0));
    const second = batcher.register(["b"]);
    let allSettled = false;
    const all = batcher.settled().then(() => {
      allSettled = true;
    });
    fail(new Error("registry down"));
    await first;
    await second;
    await all;
    expect(allSettled).toBe(true);
    expect(flushed).toEqual([["a"], ["b"]]);
    expect(errors.map(String)).toEqual(["Error: registry down"]);
  });
});

describe("ownership across organizations through import", () => {
  it("refuses another organization's ids at once, before its outbox or alarm ran (409, nothing written)", async () => {
    const { a, text, ids } = await exportedOrg();
    // No alarm has run: the writes registered their ids before answering.
    expect(await registryOwners(ids)).toEqual(Object.fromEntries(ids.map((id) => [id, a.org_id])));
    const b = await newOrg();
    const r = await importNdjson(b.api_key, text);
    expectError(r, 409, "CONFLICT");
    expect(await recordCount(b.org_id)).toBe(0);
    // The refused import left no claim behind: the owner is unchanged and nothing is B's.
    expect(Object.values(await registryOwners(ids))).toEqual([a.org_id, a.org_id, a.org_id]);
  });

  it("refuses them after the outbox drained too, and lets the owner re-import its own export", async () => {
    const { a, text, ids } = await exportedOrg();
    await runDurableObjectAlarm(orgStub(a.org_id) as unknown as DurableObjectStub);
    expect(
      await inOrg(
        a.org_id,
        (x) => x.db.first<{ n: number }>("SELECT count(*) AS n FROM outbox WHERE topic = 'record_owner'")!.n,
      ),
    ).toBe(0);
    const b = await newOrg();
    expectError(await importNdjson(b.api_key, text), 409, "CONFLICT");
    expect(await recordCount(b.org_id)).toBe(0);
    expect((await importNdjson(a.api_key, text)).status).toBe(200);
    expect(Object.values(await registryOwners(ids))).toEqual([a.org_id, a.org_id, a.org_id]);
  });

  it("gives an unowned id to the first organization that imports it; the second is refused", async () => {
    const { a, text, ids } = await exportedOrg();
    await durableRegistry(env.ID_REGISTRY).release(a.org_id, ids); // as if exported from another deployment
    const [b, c] = [await newOrg(), await newOrg()];
    const [rb, rc] = await Promise.all([importNdjson(b.api_key, text), importNdjson(c.api_key, text)]);
    expect([rb.status, rc.status].sort()).toEqual([201, 409]);
    const winner = rb.status === 201 ? b : c;
    expect(Object.values(await registryOwners(ids))).toEqual([winner.org_id, winner.org_id, winner.org_id]);
    expect(await recordCount(rb.status === 201 ? c.org_id : b.org_id)).toBe(0);
  });

  it("releases its claims when the import itself is refused after claiming", async () => {
    const { a, text, ids } = await exportedOrg();
    await durableRegistry(env.ID_REGISTRY).release(a.org_id, ids);
    const b = await newOrg();
    // The claim line references an observation the file does not carry and B does not hold: 400 after the claim.
    const lines = text
      .split("\n")
      .filter(Boolean)
      .slice(1)
      .filter((l) => JSON.parse(l).type !== "observation");
    const r = await importNdjson(b.api_key, lines.join("\n"));
    expectError(r, 400, "UNRESOLVED_REFERENCE");
    expect(await registryOwners(ids)).toEqual({});
    expect(await recordCount(b.org_id)).toBe(0);
  });
});

describe("registry unavailable", () => {
  it("answers import 503 with nothing written", async () => {
    const { a, text, ids } = await exportedOrg();
    await durableRegistry(env.ID_REGISTRY).release(a.org_id, ids);
    const b = await newOrg();
    const auditBefore = await inOrg(
      b.org_id,
      (x) => x.db.first<{ n: number }>("SELECT count(*) AS n FROM audit_log")!.n,
    );
    await inOrg(b.org_id, (x) => {
      x.deps = { ...x.deps, registry: failingRegistry };
    });
    const r = await importNdjson(b.api_key, text);
    expectError(r, 503, "UNAVAILABLE");
    expect(await recordCount(b.org_id)).toBe(0);
    expect(await inOrg(b.org_id, (x) => x.db.first<{ n: number }>("SELECT count(*) AS n FROM audit_log")!.n)).toBe(
      auditBefore,
    );
    expect(
      await inOrg(
        b.org_id,
        (x) => x.db.first<{ n: number }>("SELECT count(*) AS n FROM outbox WHERE topic = 'record_owner'")!.n,
      ),
    ).toBe(0);
    expect(await registryOwners(ids)).toEqual({});
  });
});
