// The vector index queue (drain, verify), hybrid compile and enrichment: end to end on the embedded
// default over HTTP, and against typed fakes of Workers AI and Vectorize for the production path.
import { describe, expect, it } from "vitest";
import { ApiError } from "../src/http/errors";
import { applyEnrichment, runEnrichment } from "../src/domains/indexing/enrichment";
import { changeClaim, tombstone } from "../src/domains/memory/records";
import { clock } from "../src/http/clock";
import { vectorHits } from "../src/domains/memory/vector-candidates";
import { indexQueueSize } from "../src/domains/indexing/queue";
import { applyDrain, runDrain, runVerify } from "../src/domains/indexing/service";
import { indexDrainJob } from "../src/domains/indexing/background";
import { jobDueAt } from "../src/org/jobs";
import { rankClaims } from "../src/domains/memory/compile";
import { loadCaller } from "../src/domains/identity/store";
import { sha256Hex } from "../src/auth/credentials";
import { readModelConfig } from "../src/vector/config";
import { vectorRuntime } from "../src/vector/runtime";
import { FakeAi, FakeVectorize } from "./fakes/vector";
import {
  appendOk,
  call,
  consolidateOk,
  countingDb,
  expectError,
  inOrg,
  mintKey,
  newOrg,
  obs,
  supports,
  holdBackgroundDrain,
} from "./helpers";

const NOW = () => new Date().toISOString();

async function claimOk(key: string, subject: string, statement: string, extra: Record<string, unknown> = {}) {
  const o = await appendOk(key, obs(subject, statement, extra));
  return (await consolidateOk(key, subject, [{ kind: "fact", statement, sources: supports(o), ...extra }]))[0];
}

/** Verify every page (queues what the index lacks), then drain until the queue is empty. */
async function indexAll(key: string) {
  for (let after: string | undefined, i = 0; i < 50; i++) {
    const v = await call("POST", "/v1/index/verify", { key, body: after ? { after } : {} });
    expect(v.status, v.text).toBe(200);
    after = v.json.data.next_after ?? undefined;
    if (!after) break;
  }
  let indexed = 0;
  for (let i = 0; i < 50; i++) {
    const d = await call("POST", "/v1/index/drain", { key, body: { limit: 100 } });
    expect(d.status, d.text).toBe(200);
    indexed += d.json.data.indexed;
    if (d.json.data.remaining === 0) return { indexed, last: d.json.data };
  }
  throw new Error("queue never drained");
}

/** The production pair on fakes, for one organization's Durable Object. */
function production(db: import("../src/sql/db").Db, orgId: string, opts: { extraction?: boolean } = {}) {
  const ai = new FakeAi();
  const vectorize = new FakeVectorize();
  const env = { AI: ai, VECTORIZE: vectorize };
  const config = readModelConfig(
    {
      EMBEDDING_PROVIDER: "workers-ai",
      VECTOR_INDEX: "vectorize",
      EXTRACTION_PROVIDER: opts.extraction ? "workers-ai" : "none",
      ...env,
    },
    NOW(),
  );
  return { ai, vectorize, rt: vectorRuntime(config, env, db, orgId) };
}

describe("index drain and verify on the embedded default", () => {
  it("keeps only vector hits that point the query's way (cosine above 0)", async () => {
    const { vectorHits } = await import("../src/domains/memory/vector-candidates");
    const org = await newOrg();
    await inOrg(org.org_id, async (o) => {
      const unit = new Float32Array(100);
      unit[0] = 1;
      const fake = {
        config: readModelConfig({}, NOW()),
        extractor: null,
        embedder: { provider: "local" as const, model: "fake", dimensions: 100, embed: async () => [unit] },
        index: {
          provider: "local" as const,
          upsert: async () => {},
          remove: async () => {},
          present: async () => new Set<string>(),
          appliedUpTo: async () => null,
          query: async () => [
            { id: "claim_a", score: 0.5 },
            { id: "claim_b", score: 0 },
            { id: "claim_c", score: -0.2 },
          ],
        },
      };
      const caller = loadCaller(o.db, sha256Hex(org.api_key))!;
      expect(fake.config.vectors.status).toBe("enabled");
      expect([...(await vectorHits(fake, o.db, caller, { query: "anything" }))!.similarities]).toEqual([
        ["claim_a", 0.5],
      ]);
    });
  });

  it("a query the embedder knows no word of finds no vector hits: nothing arbitrary joins the pack", async () => {
    const org = await newOrg();
    for (const text of [
      "the marmalade recipe uses seville oranges",
      "the ferry leaves at noon",
      "a walnut cake for sunday",
    ])
      await claimOk(org.api_key, "kitchen", text);
    await indexAll(org.api_key);
    // Known words: a vector hit takes part.
    const known = await call("POST", "/v1/context/compile", {
      key: org.api_key,
      body: { query: "recipe with oranges" },
    });
    expect(known.json.meta.degraded.vectors).toBe(false);
    // No word the embedder (or the index) knows: a zero query vector is near nothing, so no claim comes
    // back as the "nearest" (the smallest ids, every cosine 0), and the pack holds nothing.
    const unknown = await call("POST", "/v1/context/compile", { key: org.api_key, body: { query: "zqxvw qqjjk" } });
    expect(unknown.status).toBe(201);
    expect(unknown.json.data.items).toEqual([]);
    expect(unknown.json.meta.degraded.vectors).toBe(true);
  });

  it("indexes claims, verifies them present, and compile then uses vectors", async () => {
    holdBackgroundDrain();
    const org = await newOrg();
    const id = await claimOk(org.api_key, "kitchen", "the marmalade recipe uses seville oranges");
    const before = await call("POST", "/v1/context/compile", {
      key: org.api_key,
      body: { query: "marmalade oranges" },
    });
    expect(before.json.meta.degraded).toEqual({ vectors: true, model: true });
    const { indexed, last } = await indexAll(org.api_key);
    expect(indexed).toBe(1);
    expect(last).toMatchObject({ remaining: 0, model: "local-glove-sif-10k-int8", dimensions: 100 });
    expect(typeof last.at).toBe("string");
    const v = await call("POST", "/v1/index/verify", { key: org.api_key, body: {} });
    expect(v.json.data).toEqual({
      checked: 1,
      present: 1,
      missing: 0,
      pending: 0,
      repairs_queued: 0,
      next_after: null,
    });
    const run = await call("POST", "/v1/context/compile", { key: org.api_key, body: { query: "marmalade oranges" } });
    expect(run.json.meta.degraded).toEqual({ vectors: false, model: true });
    expect(run.json.data.items.map((i: { claim_id: string }) => i.claim_id)).toContain(id);
    const audit = await call("GET", "/v1/audit?action=index.drained", { key: org.api_key });
    // The write queued two rows (the observation and the claim); only the claim is retrieved, so embedded.
    expect(audit.json.data.entries.at(-1).metadata).toEqual({ drained: 2, indexed: 1, removed: 0, skipped: 1 });
  });

  it("a vector hit at or above the embedder's floor brings in a claim that shares no word with the query", async () => {
    const org = await newOrg();
    const id = await claimOk(org.api_key, "s", "she adopted a puppy from the animal shelter");
    await claimOk(org.api_key, "s", "quarterly invoices are due on friday");
    await indexAll(org.api_key);
    await inOrg(org.org_id, async (o) => {
      const caller = loadCaller(o.db, sha256Hex(org.api_key))!;
      const rt = vectorRuntime(readModelConfig({}, NOW()), {}, o.db, "org");
      const hits = (await vectorHits(rt, o.db, caller, { query: "dog pet" }))!;
      const similarity = hits.similarities.get(id)!;
      const ranked = (floor: number) =>
        rankClaims(o.db, caller, { query: "dog pet" }, undefined, { ...hits, floor }).map((r) => r.claim.claim_id);
      expect(ranked(similarity)).toContain(id);
      expect(ranked(similarity + 1e-6)).not.toContain(id);
    });
  });

  it("verify pages with an opaque cursor and queues one repair per missing id", async () => {
    holdBackgroundDrain();
    const org = await newOrg();
    for (let i = 0; i < 3; i++) await claimOk(org.api_key, "s", `statement number ${i}`);
    await indexAll(org.api_key);
    await inOrg(org.org_id, (o) =>
      o.db.run("DELETE FROM local_vectors WHERE record_id = (SELECT min(record_id) FROM local_vectors)"),
    );
    const p1 = await call("POST", "/v1/index/verify", { key: org.api_key, body: { limit: 2 } });
    const p2 = await call("POST", "/v1/index/verify", {
      key: org.api_key,
      body: { limit: 2, after: p1.json.data.next_after },
    });
    expect(p1.json.data.checked + p2.json.data.checked).toBe(3);
    expect(p1.json.data.missing + p2.json.data.missing).toBe(1);
    expect(p1.json.data.repairs_queued + p2.json.data.repairs_queued).toBe(1);
    expect(p2.json.data.next_after).toBeNull();
    // The queued repair is pending, not missing, on the next verify; a drain restores it.
    const again = await call("POST", "/v1/index/verify", { key: org.api_key, body: {} });
    expect(again.json.data).toMatchObject({ checked: 3, present: 2, missing: 0, pending: 1, repairs_queued: 0 });
    const d = await call("POST", "/v1/index/drain", { key: org.api_key, body: {} });
    expect(d.json.data).toMatchObject({ drained: 1, indexed: 1, remaining: 0 });
    expectError(
      await call("POST", "/v1/index/verify", { key: org.api_key, body: { after: "not-a-cursor" } }),
      400,
      "VALIDATION_ERROR",
    );
  });

  it("validates limits, and is for owners and admins holding index:write", async () => {
    const org = await newOrg();
    for (const body of [{ limit: 0 }, { limit: 101 }, { limit: 1.5 }, { extra: true }])
      expectError(await call("POST", "/v1/index/drain", { key: org.api_key, body }), 400, "VALIDATION_ERROR");
    expectError(
      await call("POST", "/v1/index/verify", { key: org.api_key, body: { limit: 101 } }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(
      await call("POST", "/v1/enrichment/drain", { key: org.api_key, body: { limit: 51 } }),
      400,
      "VALIDATION_ERROR",
    );
    const member = await mintKey(org.api_key, { scopes: ["*"] });
    expectError(await call("POST", "/v1/index/drain", { key: member.key, body: {} }), 403, "FORBIDDEN");
    const narrow = await mintKey(org.api_key, { scopes: ["enrichment:write"] });
    expectError(await call("POST", "/v1/index/drain", { key: narrow.key, body: {} }), 403, "FORBIDDEN");
  });

  it("never lets a vector hit the caller may not read into a pack", async () => {
    const org = await newOrg();
    const alice = await mintKey(org.api_key, { scopes: ["*"] });
    const bob = await mintKey(org.api_key, { scopes: ["*"] });
    const secret = await claimOk(alice.key, "diary", "alice hides the spare key under the blue flowerpot", {
      visibility: "private",
    });
    await indexAll(org.api_key);
    // The index holds it and the query vector is its own: only authorization can keep it out.
    await inOrg(org.org_id, async (o) => {
      expect(o.db.first("SELECT 1 AS x FROM local_vectors WHERE record_id = ?", secret)).toBeTruthy();
      const bobCaller = loadCaller(o.db, sha256Hex(bob.key))!;
      const aliceCaller = loadCaller(o.db, sha256Hex(alice.key))!;
      const hits = { similarities: new Map([[secret, 1]]) };
      expect(rankClaims(o.db, bobCaller, {}, undefined, hits).map((r) => r.claim.claim_id)).not.toContain(secret);
      expect(rankClaims(o.db, aliceCaller, {}, undefined, hits).map((r) => r.claim.claim_id)).toContain(secret);
    });
    for (const query of ["spare key blue flowerpot", "where is the key hidden"]) {
      const r = await call("POST", "/v1/context/compile", { key: bob.key, body: { query } });
      expect(r.text).not.toContain(secret);
      expect(r.text).not.toContain("flowerpot");
      // Not even the degraded flag tells bob that the index matched something he cannot read.
      expect(r.json.meta.degraded.vectors).toBe(true);
    }
    const own = await call("POST", "/v1/context/compile", {
      key: alice.key,
      body: { query: "spare key blue flowerpot" },
    });
    expect(own.json.meta.degraded.vectors).toBe(false);
  });
});

describe("vector hits are re-authorized inside compile's transaction", () => {
  // The route runs the vector query (whose accept reads each hit's candidate row) before the
  // transaction and ranks inside it; the rows the accept read are taken there only when nothing was
  // written in between and the clock has not gone back (records.ts CandidatesReadAhead).
  const QUERY = { query: "dog pet" };
  /** The hits with a floor every one of them reaches (these tests are about authorization, not the floor). */
  const hitsOf = async (
    o: any,
    caller: NonNullable<ReturnType<typeof loadCaller>>,
    f: Record<string, unknown> = QUERY,
  ) => ({ ...(await vectorHits(rt(o), o.db, caller, f))!, floor: -1 });
  async function withHit(
    fn: (o: any, caller: NonNullable<ReturnType<typeof loadCaller>>, id: string) => Promise<void>,
  ) {
    const org = await newOrg();
    const id = await claimOk(org.api_key, "s", "she adopted a puppy from the animal shelter");
    await claimOk(org.api_key, "s", "quarterly invoices are due on friday");
    await indexAll(org.api_key);
    await inOrg(org.org_id, async (o) => fn(o, loadCaller(o.db, sha256Hex(org.api_key))!, id));
  }
  const rt = (o: any) => vectorRuntime(readModelConfig({}, NOW()), {}, o.db, "org");
  const ids = (ranked: { claim: { claim_id: string } }[]) => ranked.map((r) => r.claim.claim_id);

  it("with nothing written in between, ranks from the rows the accept read: same answer, fewer rows read", async () => {
    await withHit(async (o, caller, id) => {
      const hits = await hitsOf(o, caller);
      // No word in common: the hit comes in through the vector path only.
      expect(hits.similarities.has(id)).toBe(true);
      expect(ids(rankClaims(o.db, caller, QUERY))).not.toContain(id);
      const carried = countingDb(o.db);
      const fromAccept = o.ctx.storage.transactionSync(() => rankClaims(carried.db, caller, QUERY, undefined, hits));
      const again = countingDb(o.db);
      const reread = o.ctx.storage.transactionSync(() =>
        rankClaims(again.db, caller, QUERY, undefined, { similarities: hits.similarities, floor: -1 }),
      );
      expect(ids(fromAccept)).toContain(id);
      expect(fromAccept).toEqual(reread);
      expect(carried.rowsRead()).toBeLessThan(again.rowsRead());
    });
  });

  it("a write between the vector query and the transaction that revokes a hit keeps it out", async () => {
    await withHit(async (o, caller, id) => {
      const hits = await hitsOf(o, caller);
      expect(hits.similarities.has(id)).toBe(true);
      o.ctx.storage.transactionSync(() => changeClaim(o.db, id, { status: "revoked" }));
      expect(ids(o.ctx.storage.transactionSync(() => rankClaims(o.db, caller, QUERY, undefined, hits)))).not.toContain(
        id,
      );
    });
  });

  it("a hit whose validity ends between the vector query and the transaction is kept out (no write, only time)", async () => {
    await withHit(async (o, caller, id) => {
      o.ctx.storage.transactionSync(() =>
        changeClaim(o.db, id, { valid_to: new Date(clock.nowMs() + 60_000).toISOString() }),
      );
      const hits = await hitsOf(o, caller);
      expect(hits.similarities.has(id)).toBe(true);
      clock.advance(120_000);
      try {
        expect(
          ids(o.ctx.storage.transactionSync(() => rankClaims(o.db, caller, QUERY, undefined, hits))),
        ).not.toContain(id);
      } finally {
        clock.reset();
      }
    });
  });

  it("rows the accept read for other kinds are not taken: a ranking asking other kinds reads its hits again", async () => {
    await withHit(async (o, caller, id) => {
      // The accept ran for every kind (the hit is a fact); the ranking asks only preferences.
      const hits = await hitsOf(o, caller);
      expect(hits.similarities.has(id)).toBe(true);
      const ranked = o.ctx.storage.transactionSync(() =>
        rankClaims(o.db, caller, { ...QUERY, kinds: ["preference"] }, undefined, hits),
      );
      expect(ids(ranked)).not.toContain(id);
    });
  });
});

describe("the production backends (typed fakes of Ai and Vectorize)", () => {
  it("drains through Workers AI and Vectorize; an unreachable model or index is 503 with the queue untouched", async () => {
    holdBackgroundDrain();
    const org = await newOrg();
    const a = await claimOk(org.api_key, "s", "first statement about lemons");
    const b = await claimOk(org.api_key, "s", "second statement about limes");
    await inOrg(org.org_id, async (o) => {
      const { ai, vectorize, rt } = production(o.db, org.org_id);
      // Two observations and two claims were written: four rows queued by the writes themselves.
      for (const failing of ["ai", "vectorize"] as const) {
        ai.failing = failing === "ai";
        vectorize.failing = failing === "vectorize";
        const err = await runDrain(o.db, rt, 50, NOW()).catch((e) => e);
        expect(err).toBeInstanceOf(ApiError);
        expect(err.code).toBe("UNAVAILABLE");
        expect(err.meta).toEqual({ pending: 4, retryable: true });
        expect(indexQueueSize(o.db)).toBe(4);
      }
      ai.failing = vectorize.failing = false;
      const plan = await runDrain(o.db, rt, 50, NOW());
      applyDrain(o.db, plan, NOW());
      expect(plan).toMatchObject({ model: "@cf/baai/bge-small-en-v1.5", dimensions: 384 });
      expect([...plan.indexed].sort()).toEqual([a, b].sort());
      expect(plan.skipped).toBe(2);
      expect(indexQueueSize(o.db)).toBe(0);
      vectorize.apply();
      expect(vectorize.ids(org.org_id)).toEqual([a, b].sort());
    });
  });

  it("verify counts asynchronous upserts as pending, not missing, until Vectorize applies them", async () => {
    holdBackgroundDrain();
    const org = await newOrg();
    const a = await claimOk(org.api_key, "s", "a statement about pears");
    await inOrg(org.org_id, async (o) => {
      const { vectorize, rt } = production(o.db, org.org_id);
      vectorize.now = () => 1; // mutations stamped long before the drain's indexed_at
      const plan = await runDrain(o.db, rt, 50, NOW());
      applyDrain(o.db, plan, NOW());
      const pending = await runVerify(o.db, rt, 100, undefined, NOW());
      expect(pending).toMatchObject({ checked: 1, present: 0, pending: 1, missing: 0, repairs_queued: 0 });
      vectorize.apply();
      expect(await runVerify(o.db, rt, 100, undefined, NOW())).toMatchObject({
        checked: 1,
        present: 1,
        pending: 0,
        missing: 0,
      });
      // Lost for real (deleted behind our back, applied after the drain): missing, one repair.
      vectorize.now = () => Date.now() + 60_000;
      await vectorize.deleteByIds([a]);
      vectorize.apply();
      expect(await runVerify(o.db, rt, 100, undefined, NOW())).toMatchObject({
        present: 0,
        pending: 0,
        missing: 1,
        repairs_queued: 1,
      });
    });
  });

  it("without a vector capability, drain and verify are 400", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, async (o) => {
      const rt = vectorRuntime(
        readModelConfig({ EMBEDDING_PROVIDER: "none", VECTOR_INDEX: "none" }, NOW()),
        {},
        o.db,
        org.org_id,
      );
      for (const run of [() => runDrain(o.db, rt, 10, NOW()), () => runVerify(o.db, rt, 10, undefined, NOW())]) {
        const err = await run().catch((e) => e);
        expect(err).toBeInstanceOf(ApiError);
        expect(err.code).toBe("VALIDATION_ERROR");
      }
    });
  });
});

describe("enrichment", () => {
  it("with extraction disabled answers drained 0, status disabled, and writes keep working", async () => {
    const org = await newOrg();
    const r = await call("POST", "/v1/enrichment/drain", { key: org.api_key, body: {} });
    expect(r.status, r.text).toBe(200);
    expect(r.json.data).toEqual({ drained: 0, status: "disabled" });
    await appendOk(org.api_key, obs("s", "still writable"));
  });

  it("with Workers AI extraction proposes candidate claims for review, never canonical claims; a failure keeps the ledger", async () => {
    const org = await newOrg();
    await appendOk(org.api_key, obs("s", "Maria prefers tea over coffee"));
    await appendOk(org.api_key, obs("s", "The deploy happens on Mondays"));
    await inOrg(org.org_id, async (o) => {
      const { ai, rt } = production(o.db, org.org_id, { extraction: true });
      const claimsBefore = o.db.first<{ n: number }>("SELECT count(*) AS n FROM claims")!.n;
      ai.failing = true;
      const err = await runEnrichment(o.db, rt, 10).catch((e) => e);
      expect(err.code).toBe("UNAVAILABLE");
      expect(err.meta).toEqual({ pending: 2, retryable: true });
      ai.failing = false;
      const plan = (await runEnrichment(o.db, rt, 1))!;
      expect(applyEnrichment(o.db, plan, NOW())).toHaveLength(1);
      const rest = (await runEnrichment(o.db, rt, 10))!;
      expect(rest.observations).toBe(1);
      applyEnrichment(o.db, rest, NOW());
      expect(
        o.db.first<{ n: number }>("SELECT count(*) AS n FROM enrichment_proposals WHERE status = 'pending'")!.n,
      ).toBe(2);
      expect(o.db.first<{ n: number }>("SELECT count(*) AS n FROM claims")!.n).toBe(claimsBefore);
      // A plan computed before another drain advanced the ledger stores nothing.
      expect(applyEnrichment(o.db, plan, NOW())).toBeNull();
    });
  });
});

describe("enrichment follows purges", () => {
  it("a purge removes the proposals derived from the observation's content, including one whose drain was waiting on the model", async () => {
    const org = await newOrg();
    const early = await appendOk(org.api_key, obs("s", "Maria's PIN code is 4711"));
    const ai = new FakeAi();
    ai.generation = '[{"kind":"fact","statement":"Maria PIN is 4711"}]';
    await inOrg(org.org_id, (x) => {
      const bindings = { AI: ai, VECTORIZE: new FakeVectorize() };
      x.deps = {
        ...x.deps,
        models: { config: readModelConfig({ EXTRACTION_PROVIDER: "workers-ai", ...bindings }, NOW()), bindings },
      };
    });
    expect((await call("POST", "/v1/enrichment/drain", { key: org.api_key, body: {} })).json.data).toMatchObject({
      proposed: 1,
    });
    expect((await call("DELETE", `/v1/observations/${early}`, { key: org.api_key })).status).toBe(200);
    const proposals = () =>
      inOrg(org.org_id, (x) => x.db.all<{ statement: string }>("SELECT statement FROM enrichment_proposals"));
    expect(await proposals()).toEqual([]);
    const view = await call("POST", "/v1/memory-views/compile", { key: org.api_key, body: { lens: "review_queue" } });
    expect(view.text).not.toContain("4711");

    // A drain planned before the purge commits after it: nothing derived from the purged content is stored.
    const late = await appendOk(org.api_key, obs("s", "Maria's other PIN is 9922"));
    await inOrg(org.org_id, async (x) => {
      const { ai: model, rt } = production(x.db, org.org_id, { extraction: true });
      model.generation = '[{"kind":"fact","statement":"Maria PIN is 9922"}]';
      const plan = (await runEnrichment(x.db, rt, 10))!;
      expect(plan.proposals.map((p) => p.observation_id)).toEqual([late]);
      tombstone(x.db, late);
      expect(applyEnrichment(x.db, plan, NOW())).toEqual([]);
    });
    expect(await proposals()).toEqual([]);
  });
});

describe("the queue follows every write", () => {
  it("writes queue index rows; drain after revoke, supersede and expire removes their vectors", async () => {
    holdBackgroundDrain();
    const org = await newOrg();
    const k = org.api_key;
    const [c1, c2, c3] = [
      await claimOk(k, "s", "one about apples"),
      await claimOk(k, "s", "two about pears"),
      await claimOk(k, "s", "three about plums"),
    ];
    const o = await appendOk(k, obs("s", "to be purged"));
    const drain = async () => (await call("POST", "/v1/index/drain", { key: k, body: { limit: 100 } })).json.data;
    expect(await drain()).toMatchObject({ indexed: 3, removed: 0, remaining: 0 });
    const held = () =>
      inOrg(org.org_id, (x) =>
        x.db
          .all<{ record_id: string }>("SELECT record_id FROM local_vectors ORDER BY record_id")
          .map((r) => r.record_id),
      );
    expect(await held()).toEqual([c1, c2, c3].sort());
    const c4 = await claimOk(k, "s", "four about quinces");
    expect((await call("POST", `/v1/claims/${c1}/revoke`, { key: k, body: {} })).status).toBe(200);
    expect((await call("POST", `/v1/claims/${c2}/supersede`, { key: k, body: { superseded_by: c4 } })).status).toBe(
      200,
    );
    expect((await call("POST", `/v1/claims/${c3}/expire`, { key: k, body: {} })).status).toBe(200);
    expect((await call("DELETE", `/v1/observations/${o}`, { key: k })).status).toBe(200);
    // The test Worker's timer (15 s interval) may drain part of the queue first: same drain, so only
    // the end state is asserted.
    const d = await drain();
    expect(d).toMatchObject({ remaining: 0 });
    expect(await held()).toEqual([c4]);
    expect(
      await inOrg(org.org_id, (x) =>
        x.db.all<{ record_id: string }>("SELECT record_id FROM indexed_records").map((r) => r.record_id),
      ),
    ).toEqual([c4]);
    const v = await call("POST", "/v1/index/verify", { key: k, body: {} });
    expect(v.json.data).toMatchObject({ checked: 1, present: 1, missing: 0 });
    const r = await call("POST", "/v1/context/compile", { key: k, body: { query: "apples pears plums" } });
    expect(r.text).not.toMatch(new RegExp(`${c1}|${c2}|${c3}`));
  });

  it("a claim revoked while a drain awaited the model is queued again, so a later drain removes its vector", async () => {
    holdBackgroundDrain();
    const org = await newOrg();
    const c = await claimOk(org.api_key, "s", "a statement about kiwis");
    await inOrg(org.org_id, async (o) => {
      const { rt } = production(o.db, org.org_id);
      const a = await runDrain(o.db, rt, 50, NOW()); // drain A embedded c and has not committed yet
      expect(a.indexed).toEqual([c]);
      // Meanwhile c is revoked (its write queues a row) and drain B runs to the end: nothing to remove yet.
      o.db.run("UPDATE claims SET status = 'revoked' WHERE claim_id = ?", c);
      o.db.run("INSERT INTO outbox (topic, payload, created_at) VALUES ('index', ?, ?)", c, NOW());
      const b = await runDrain(o.db, rt, 50, NOW());
      applyDrain(o.db, b, NOW());
      applyDrain(o.db, a, NOW());
      expect(indexQueueSize(o.db)).toBe(1);
      const next = await runDrain(o.db, rt, 50, NOW());
      applyDrain(o.db, next, NOW());
      expect(next.removed).toEqual([c]);
      expect(indexQueueSize(o.db)).toBe(0);
      expect(o.db.first("SELECT record_id FROM indexed_records WHERE record_id = ?", c)).toBeFalsy();
    });
  });

  it("over HTTP with Workers AI and Vectorize fakes: 503 with meta.pending and retryable, queue untouched; compile degrades", async () => {
    holdBackgroundDrain();
    const org = await newOrg();
    await claimOk(org.api_key, "s", "a statement about figs");
    const ai = new FakeAi();
    const vectorize = new FakeVectorize();
    await inOrg(org.org_id, async (o) => {
      const bindings = { AI: ai, VECTORIZE: vectorize };
      o.deps = {
        ...o.deps,
        models: {
          config: readModelConfig({ EMBEDDING_PROVIDER: "workers-ai", VECTOR_INDEX: "vectorize", ...bindings }, NOW()),
          bindings,
        },
      };
    });
    const queued = () => inOrg(org.org_id, (o) => indexQueueSize(o.db));
    ai.failing = true;
    const r = await call("POST", "/v1/index/drain", { key: org.api_key, body: {} });
    expectError(r, 503, "UNAVAILABLE");
    expect(r.json.meta).toMatchObject({ pending: 2, retryable: true });
    expect(await queued()).toBe(2);
    ai.failing = false;
    vectorize.failing = true;
    expectError(await call("POST", "/v1/index/drain", { key: org.api_key, body: {} }), 503, "UNAVAILABLE");
    expect(await queued()).toBe(2);
    const degraded = await call("POST", "/v1/context/compile", { key: org.api_key, body: { query: "figs" } });
    expect(degraded.status).toBe(201);
    expect(degraded.json.meta.degraded.vectors).toBe(true);
    vectorize.failing = false;
    const ok = await call("POST", "/v1/index/drain", { key: org.api_key, body: {} });
    expect(ok.json.data).toMatchObject({
      drained: 2,
      indexed: 1,
      skipped: 1,
      remaining: 0,
      model: "@cf/baai/bge-small-en-v1.5",
      dimensions: 384,
    });
    vectorize.apply();
    const hybrid = await call("POST", "/v1/context/compile", { key: org.api_key, body: { query: "figs" } });
    expect(hybrid.json.meta.degraded.vectors).toBe(false);
    expect(
      vectorize.queries.every(
        (q) => q.namespace === org.org_id && q.topK === 100 && q.returnValues === false && q.returnMetadata === "none",
      ),
    ).toBe(true);
  });

  it("the background job drains the queue when the timer runs and vectors are configured", async () => {
    holdBackgroundDrain(); // the job runs below, by the test, not by an alarm of its own first
    const org = await newOrg();
    const id = await claimOk(org.api_key, "s", "a statement about dates");
    await inOrg(org.org_id, async (o) => {
      expect(jobDueAt(o.db, indexDrainJob.name)).not.toBeNull();
      const ctx = {
        db: o.db,
        storage: (o as unknown as { ctx: DurableObjectState }).ctx.storage,
        indexDb: undefined as never,
        orgId: org.org_id,
        deps: o.deps,
      };
      // No timer (interval 0): the job leaves the queue for POST /v1/index/drain.
      expect(await indexDrainJob.run({ ...ctx, maintenanceIntervalMs: 0 })).toBeNull();
      expect(indexQueueSize(o.db)).toBe(2);
      expect(await indexDrainJob.run({ ...ctx, maintenanceIntervalMs: 15_000 })).toBeNull();
      expect(indexQueueSize(o.db)).toBe(0);
      expect(o.db.first("SELECT 1 AS x FROM local_vectors WHERE record_id = ?", id)).toBeTruthy();
    });
  });
});
