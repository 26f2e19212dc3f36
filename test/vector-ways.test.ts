// Production vector queries on Vectorize, authorized way by way: an organization whose records are
// readable in every way the read rule knows (team outside workspaces, a workspace's team records for
// its members, its private ones for its admins, authorship, grants on a project, on unscoped memory,
// on a subject, on the organization), indexed through the real drain into the Vectorize fake (the
// mirror bounded so that Vectorize answers, as for a large organization). For every kind of caller the
// hits are exactly the claims it may retrieve, the same as the exact mirror's; none moves when another
// principal's private vectors crowd the query; and the metadata follows the claim through its life.
import { beforeAll, describe, expect, it } from "vitest";
import { sha256Hex } from "../src/auth/credentials";
import { clock } from "../src/http/clock";
import { retrievable } from "../src/access/retrieval";
import { loadCaller } from "../src/domains/identity/store";
import { claimMetadata, METADATA_INDEXES, NONE, subjectKey, wayFilters } from "../src/vector/metadata";
import { vectorHits } from "../src/domains/memory/vector-candidates";
import { applyDrain, runDrain } from "../src/domains/indexing/service";
import { readableWayConditions } from "../src/access/policy";
import type { Db } from "../src/sql/db";
import { readModelConfig } from "../src/vector/config";
import { LocalVectorIndex } from "../src/vector/local-index";
import type { VectorRuntime } from "../src/vector/runtime";
import { VectorizeIndexBackend } from "../src/vector/vectorize";
import { WorkersAiEmbedder } from "../src/vector/workers-ai";
import { FakeAi, FakeVectorize } from "./fakes/vector";
import { appendOk, call, consolidateOk, inOrg, mintKey, newOrg, obs, supports } from "./helpers";

/** In every statement, so every claim points the query's way (cosine above 0 with the fake model). */
const WORDS = "orchard ladder";

const post = async (key: string, path: string, body: unknown) => {
  const r = await call("POST", path, { key, body });
  expect(r.status, r.text).toBeLessThan(300);
  return r.json.data;
};

type Key = { key: string; principal_id: string };

interface Fixture {
  org: Awaited<ReturnType<typeof newOrg>>;
  callers: Record<string, Key>;
  claims: Record<string, string>;
}

async function claim(
  key: string,
  subject: string,
  words: string,
  opts: { project_id?: string; visibility?: string } = {},
  kind = "fact",
) {
  const o = await appendOk(key, obs(subject, `${WORDS} ${words}`, opts));
  const data = await post(key, "/v1/consolidations", {
    subject_id: subject,
    ...(opts.project_id ? { project_id: opts.project_id } : {}),
    claims: [
      {
        kind,
        statement: `${WORDS} ${words}`,
        sources: supports(o),
        ...(opts.visibility ? { visibility: opts.visibility } : {}),
      },
    ],
  });
  return data.claims[0].claim_id as string;
}

let f: Fixture;

beforeAll(async () => {
  const org = await newOrg();
  await quiet(org.org_id);
  const owner = org.api_key;
  const ownerId = (await call("GET", "/v1/principal", { key: owner })).json.data.principal_id;
  const alice = await mintKey(owner, { scopes: ["*"] });
  const bob = await mintKey(owner, { scopes: ["*"] });
  const carol = await mintKey(owner, { scopes: ["*"] });
  const dave = await mintKey(owner, { scopes: ["*"] });
  const erin = await mintKey(owner, { scopes: ["*"] });
  const w = (await post(owner, "/v1/workspaces", { name: "w" })).workspace_id;
  const x = (await post(owner, "/v1/workspaces", { name: "x" })).workspace_id;
  await post(owner, "/v1/memberships", { principal_id: alice.principal_id, role: "admin", workspace_id: w });
  await post(owner, "/v1/memberships", { principal_id: bob.principal_id, role: "member", workspace_id: w });
  const p1 = (await post(owner, "/v1/projects/resolve", { reference: "p1", create: true })).project_id;
  const pw = (await post(owner, "/v1/projects/resolve", { reference: "pw", create: true, workspace_id: w })).project_id;
  const px = (await post(owner, "/v1/projects/resolve", { reference: "px", create: true, workspace_id: x })).project_id;
  await post(owner, "/v1/grants", { principal_id: carol.principal_id, permissions: ["read"], project: p1 });
  await post(owner, "/v1/grants", { principal_id: carol.principal_id, permissions: ["read"], subject: "subj-g" });
  await post(owner, "/v1/grants", { principal_id: dave.principal_id, permissions: ["read"], organization: true });
  await post(owner, "/v1/grants", { principal_id: erin.principal_id, permissions: ["read"], project: null });
  const claims: Record<string, string> = {
    teamOutside: await claim(owner, "s", "team outside"),
    teamP1: await claim(bob.key, "s", "team in p1", { project_id: p1 }),
    bobPrivate: await claim(bob.key, "subj-b", "bob private", { visibility: "private" }),
    erinPrivateGranted: await claim(erin.key, "subj-g", "erin private on a granted subject", { visibility: "private" }),
    teamW: await claim(alice.key, "s", "team in w", { project_id: pw }),
    bobPrivateW: await claim(bob.key, "s", "bob private in w", { project_id: pw, visibility: "private" }),
    erinPrivateP1: await claim(erin.key, "s", "erin private in p1", { project_id: p1, visibility: "private" }),
    bobPrivateUnscoped: await claim(bob.key, "s2", "bob private unscoped", { visibility: "private" }),
    teamX: await claim(owner, "s", "team in x", { project_id: px }),
    decision: await claim(owner, "s", "a decision", {}, "decision"),
  };
  const revoked = await claim(owner, "s", "revoked before indexing");
  await post(owner, `/v1/claims/${revoked}/revoke`, {});
  f = { org, callers: { owner: { key: owner, principal_id: ownerId }, alice, bob, carol, dave, erin }, claims };
  // Indexed once through the real drain, into the Vectorize the cases read.
  await inOrg(org.org_id, (o) => drainAll(o.db, storageOf(o), production(o.db, org.org_id, INDEXED)));
});

/** The fixture's Vectorize index. */
const INDEXED = new FakeVectorize();

/** The production pair on fakes; `bound`: the mirror's bytes (1: none, so Vectorize answers every query). */
function production(
  db: Db,
  orgId: string,
  fake = new FakeVectorize(),
  bound = 1,
): VectorRuntime & { fake: FakeVectorize } {
  fake.autoApply = true;
  const env = { AI: new FakeAi(), VECTORIZE: fake };
  return {
    fake,
    config: readModelConfig(
      { EMBEDDING_PROVIDER: "workers-ai", VECTOR_INDEX: "vectorize", ...env },
      new Date().toISOString(),
    ),
    embedder: new WorkersAiEmbedder(env.AI),
    index: new VectorizeIndexBackend(fake, orgId, new LocalVectorIndex(db, { cacheBytes: bound })),
    extractor: null,
  };
}

async function drainAll(db: Db, storage: DurableObjectStorage, rt: VectorRuntime) {
  for (let i = 0; i < 100; i++) {
    const plan = await runDrain(db, rt, 100, new Date().toISOString());
    storage.transactionSync(() => applyDrain(db, plan, new Date().toISOString()));
    if (!plan.seqs.length) return;
  }
}

/**
 * The organization's object with vectors off for its own routes: its writes still queue index rows
 * (every write does), but no background drain takes them, so the tests' drains see every one.
 */
const quiet = (orgId: string) =>
  inOrg(orgId, (o) => {
    o.deps = {
      ...o.deps,
      models: {
        config: readModelConfig({ EMBEDDING_PROVIDER: "none", VECTOR_INDEX: "none" }, new Date().toISOString()),
        bindings: {},
      },
    };
  });

/** The object's storage (the test reaches into the Durable Object, as the other in-process tests do). */
const storageOf = (o: object): DurableObjectStorage => (o as unknown as { ctx: DurableObjectState }).ctx.storage;
const callerOf = (db: Db, key: string) => loadCaller(db, sha256Hex(key))!;
const hitIds = async (
  rt: VectorRuntime,
  db: Db,
  key: string,
  kinds?: string[],
  narrow: { subject_id?: string; project_id?: string } = {},
) =>
  [
    ...((await vectorHits(rt, db, callerOf(db, key), { query: WORDS, kinds, ...narrow }))?.similarities.keys() ?? []),
  ].sort();

describe("Vectorize answers by the caller's ways", () => {
  it("metadata indexes: one per property the ways filter on, within Vectorize's ten; a claim's metadata is one value per index", () => {
    expect(METADATA_INDEXES.map((m) => m.property)).toEqual([
      "visibility",
      "workspace_id",
      "author_id",
      "project_id",
      "subject_id",
      "kind",
    ]);
    expect(METADATA_INDEXES.length).toBeLessThanOrEqual(10);
    const m = claimMetadata({
      visibility: "team",
      workspace_id: null,
      author_id: "prn_a",
      project_id: null,
      subject_id: "x".repeat(200),
      kind: "fact",
    });
    expect(Object.keys(m)).toEqual(METADATA_INDEXES.map((i) => i.property));
    expect(m).toMatchObject({ workspace_id: NONE, project_id: NONE, subject_id: subjectKey("x".repeat(200)) });
    expect(new TextEncoder().encode(m.subject_id as string).length).toBe(64);
  });

  it("every kind of caller gets exactly the claims it may retrieve, the same as the exact mirror's", async () => {
    await inOrg(f.org.org_id, async (o) => {
      const rt = production(o.db, f.org.org_id, INDEXED);
      const mirror: VectorRuntime = { ...rt, index: new LocalVectorIndex(o.db) };
      const expected: Record<string, string[]> = {};
      for (const [name, k] of Object.entries(f.callers)) {
        const caller = callerOf(o.db, k.key);
        const [ok, ...args] = retrievable(caller, "c", { current: true });
        const retrievableIds = o.db
          .all<{ claim_id: string }>(`SELECT claim_id FROM claims c WHERE ${ok}`, ...args)
          .map((r) => r.claim_id)
          .sort();
        expected[name] = retrievableIds;
        expect(await hitIds(rt, o.db, k.key), name).toEqual(retrievableIds);
        expect(await hitIds(mirror, o.db, k.key), `${name} (mirror)`).toEqual(retrievableIds);
      }
      // The fixture reaches every way: each caller reads something another does not.
      const c = f.claims;
      expect(expected.carol).toEqual(
        [c.teamOutside, c.teamP1, c.erinPrivateGranted, c.erinPrivateP1, c.decision].sort(),
      );
      expect(expected.erin).toEqual(
        [
          c.teamOutside,
          c.teamP1,
          c.erinPrivateGranted,
          c.erinPrivateP1,
          c.bobPrivate,
          c.bobPrivateUnscoped,
          c.decision,
        ].sort(),
      );
      expect(expected.alice).toContain(c.bobPrivateW);
      expect(expected.bob).toContain(c.teamW);
      expect(expected.bob).not.toContain(c.teamX);
      expect(expected.owner).toContain(c.teamX);
      expect(expected.erin).not.toContain(c.bobPrivateW);
      expect(expected.dave.length).toBe(Object.keys(c).length);
      // One Vectorize query per way, each with its filter, in the organization's namespace.
      const carol = callerOf(o.db, f.callers.carol.key);
      rt.fake.queries.length = 0;
      await hitIds(rt, o.db, f.callers.carol.key);
      expect(wayFilters(readableWayConditions(carol)).length).toBe(4); // team outside workspaces, own, a project, a subject
      expect(rt.fake.queries.map((q) => q.namespace)).toEqual(Array(4).fill(f.org.org_id));
      expect(rt.fake.queries.slice(-wayFilters(readableWayConditions(carol)).length).map((q) => q.filter)).toEqual(
        wayFilters(readableWayConditions(carol)),
      );
    });
  });

  it("compile's kinds narrow each way's filter", async () => {
    await inOrg(f.org.org_id, async (o) => {
      const rt = production(o.db, f.org.org_id, INDEXED);
      expect(await hitIds(rt, o.db, f.callers.erin.key, ["decision"])).toEqual([f.claims.decision]);
      expect(rt.fake.queries.at(-1)!.filter).toMatchObject({ kind: { $in: ["decision"] } });
    });
  });

  it("compile's subject and project narrow each way: the hits are the retrievable claims of that subject or project", async () => {
    await inOrg(f.org.org_id, async (o) => {
      const rt = production(o.db, f.org.org_id, INDEXED);
      const p1 = o.db.first<{ project_id: string }>(
        "SELECT project_id FROM claims WHERE claim_id = ?",
        f.claims.teamP1,
      )!.project_id;
      for (const [name, k] of Object.entries(f.callers))
        for (const narrow of [
          { subject_id: "subj-g" },
          { subject_id: "s" },
          { project_id: p1 },
          { subject_id: "s", project_id: p1 },
        ]) {
          const caller = callerOf(o.db, k.key);
          const [ok, ...args] = retrievable(caller, "c", { current: true });
          const within = o.db
            .all<{ claim_id: string; subject_id: string; project_id: string | null }>(
              `SELECT claim_id, subject_id, project_id FROM claims c WHERE ${ok}`,
              ...args,
            )
            .filter(
              (c) =>
                (narrow.subject_id === undefined || c.subject_id === narrow.subject_id) &&
                (!("project_id" in narrow) || c.project_id === narrow.project_id),
            )
            .map((c) => c.claim_id)
            .sort();
          expect(await hitIds(rt, o.db, k.key, undefined, narrow), `${name} ${JSON.stringify(narrow)}`).toEqual(within);
        }
      // Carol's subject grant cannot reach subject "s": under that filter her query asks no subject-grant way.
      const carol = callerOf(o.db, f.callers.carol.key);
      rt.fake.queries.length = 0;
      await hitIds(rt, o.db, f.callers.carol.key, undefined, { subject_id: "s" });
      expect(rt.fake.queries.length).toBe(wayFilters(readableWayConditions(carol)).length - 1);
      expect(rt.fake.queries.every((q) => (q.filter as Record<string, unknown>).subject_id !== undefined)).toBe(true);
    });
  });

  it("a caller's hits are identical with and without another principal's private vectors nearest the query", async () => {
    const org = await newOrg();
    await quiet(org.org_id);
    const reader = await mintKey(org.api_key, { scopes: ["*"] });
    const other = await mintKey(org.api_key, { scopes: ["*"] });
    // More readable claims than a way's 100, so every way's answer is cut.
    const o1 = await appendOk(org.api_key, obs("s", WORDS));
    for (let b = 0; b < 3; b++)
      await consolidateOk(
        org.api_key,
        "s",
        Array.from({ length: 50 }, (_, i) => ({
          kind: "fact",
          statement: `${WORDS} note ${b} ${i} ${"word ".repeat(i % 7)}`,
          sources: supports(o1),
        })),
      );
    await inOrg(org.org_id, async (o) => {
      const rt = production(o.db, org.org_id);
      await drainAll(o.db, storageOf(o), rt);
      const caller = callerOf(o.db, reader.key);
      const before = await vectorHits(rt, o.db, caller, { query: WORDS });
      expect(before!.similarities.size).toBe(100);
      // Another principal's private claims, each exactly the query: nearer than anything the reader may read.
      const o2 = await appendOk(other.key, obs("s", WORDS, { visibility: "private" }));
      for (let b = 0; b < 3; b++)
        await consolidateOk(
          other.key,
          "s",
          Array.from({ length: 50 }, () => ({
            kind: "fact",
            statement: WORDS,
            visibility: "private",
            sources: supports(o2),
          })),
        );
      await drainAll(o.db, storageOf(o), rt);
      expect(rt.fake.ids(org.org_id).length).toBe(300);
      const after = await vectorHits(rt, o.db, caller, { query: WORDS });
      expect([...after!.similarities]).toEqual([...before!.similarities]);
    });
  });
});

describe("the metadata follows the claim", () => {
  it("a status change re-upserts the claim with its metadata; a claim no longer current leaves the index", async () => {
    const org = await newOrg();
    await quiet(org.org_id);
    const key = org.api_key;
    const id = await claim(key, "life", "first");
    const fake = new FakeVectorize();
    const row = () =>
      inOrg(org.org_id, (o) =>
        o.db.first<Parameters<typeof claimMetadata>[0] & { status: string }>(
          "SELECT visibility, workspace_id, author_id, project_id, subject_id, kind, status FROM claims WHERE claim_id = ?",
          id,
        )!,
      );
    const queuedForIndex = () =>
      inOrg(org.org_id, (o) => o.db.all("SELECT 1 FROM outbox WHERE topic = 'index' AND payload = ?", id).length);
    const drain = () => inOrg(org.org_id, (o) => drainAll(o.db, storageOf(o), production(o.db, org.org_id, fake)));
    await drain();
    const { status: _active, ...metadataColumns } = await row();
    expect(fake.metadataOf(id)).toEqual(claimMetadata(metadataColumns));
    expect(fake.upserted.filter((x) => x === id).length).toBe(1);
    // Disputed by a later consolidation: the write queues the claim in its own transaction, the drain upserts it again.
    const o2 = await appendOk(key, obs("life", `${WORDS} not so`));
    await consolidateOk(key, "life", [
      {
        kind: "fact",
        statement: `${WORDS} the opposite`,
        sources: [...supports(o2), { claim_id: id, relation: "contradicts" }],
      },
    ]);
    expect((await row()).status).toBe("disputed");
    expect(await queuedForIndex()).toBe(1);
    await drain();
    expect(fake.upserted.filter((x) => x === id).length).toBe(2);
    expect(fake.metadataOf(id)).toEqual(claimMetadata(metadataColumns));
    // Revoked: queued again, and the drain deletes its vector from Vectorize and the mirror.
    await post(key, `/v1/claims/${id}/revoke`, {});
    expect(await queuedForIndex()).toBe(1);
    await drain();
    expect(fake.ids(org.org_id)).not.toContain(id);
    expect(await inOrg(org.org_id, (o) => o.db.all("SELECT 1 FROM local_vectors WHERE record_id = ?", id))).toEqual([]);
  });

  it("every writer of a claim's status, validity or retention queues its index row in its own transaction", async () => {
    /**
     * `write` refused while the outbox refuses this claim's index row (a trigger): nothing of it stays
     * (the claim unchanged, no row queued). Allowed: the claim changes and its row is queued.
     */
    const queuesInItsTransaction = async (
      orgId: string,
      claimId: string,
      write: () => Promise<{ status: number; text: string }>,
    ) => {
      const state = () =>
        inOrg(orgId, (o) =>
          o.db.first("SELECT version, status, valid_to, retention_excluded_at FROM claims WHERE claim_id = ?", claimId),
        );
      const queued = () =>
        inOrg(orgId, (o) => o.db.all("SELECT 1 FROM outbox WHERE topic = 'index' AND payload = ?", claimId).length);
      const [before, queuedBefore] = [await state(), await queued()];
      await inOrg(orgId, (o) =>
        o.db.run(`CREATE TRIGGER refuse_index_row BEFORE INSERT ON outbox
        WHEN NEW.topic = 'index' AND NEW.payload = '${claimId}' BEGIN SELECT RAISE(ABORT, 'index row refused'); END`),
      );
      try {
        const refused = await write();
        expect(refused.status, refused.text).toBeGreaterThanOrEqual(500);
      } finally {
        await inOrg(orgId, (o) => o.db.run("DROP TRIGGER refuse_index_row"));
      }
      expect(await state()).toEqual(before);
      expect(await queued()).toBe(queuedBefore);
      const done = await write();
      expect(done.status, done.text).toBeLessThan(300);
      expect(await state()).not.toEqual(before);
      expect(await queued()).toBe(queuedBefore + 1);
    };

    const org = await newOrg();
    await quiet(org.org_id);
    const k = org.api_key;
    const [revoked, superseded, expired, disputed, by] = [
      await claim(k, "w1", "to revoke"),
      await claim(k, "w2", "to supersede"),
      await claim(k, "w3", "to expire"),
      await claim(k, "w4", "to dispute"),
      await claim(k, "w2", "the replacement"),
    ];
    await queuesInItsTransaction(org.org_id, revoked, () =>
      call("POST", `/v1/claims/${revoked}/revoke`, { key: k, body: {} }),
    );
    await queuesInItsTransaction(org.org_id, superseded, () =>
      call("POST", `/v1/claims/${superseded}/supersede`, { key: k, body: { superseded_by: by } }),
    );
    await queuesInItsTransaction(org.org_id, expired, () =>
      call("POST", `/v1/claims/${expired}/expire`, { key: k, body: {} }),
    );
    const o = await appendOk(k, obs("w4", `${WORDS} not so`));
    await queuesInItsTransaction(org.org_id, disputed, () =>
      call("POST", "/v1/consolidations", {
        key: k,
        body: {
          subject_id: "w4",
          claims: [
            {
              kind: "fact",
              statement: `${WORDS} the opposite`,
              sources: [...supports(o), { claim_id: disputed, relation: "contradicts" }],
            },
          ],
        },
      }),
    );
    expect(
      await inOrg(org.org_id, (x) => x.db.first("SELECT status FROM claims WHERE claim_id = ?", disputed)),
    ).toEqual({ status: "disputed" });

    // Retention excludes a claim and a legal hold restores it: both change what the read rule admits.
    const retained = await newOrg();
    await quiet(retained.org_id);
    const r = retained.api_key;
    const old = await claim(r, "w5", "grows old");
    clock.advance(400 * 86_400_000);
    await post(r, "/v1/policies", {
      type: "retention",
      name: "a year",
      status: "active",
      rules: { rules: [{ record_type: "claim", max_age_days: 365 }] },
    });
    await queuesInItsTransaction(retained.org_id, old, () => call("POST", "/v1/retention/apply", { key: r, body: {} }));
    expect(
      await inOrg(
        retained.org_id,
        (x) =>
          x.db.first<{ at: string | null }>("SELECT retention_excluded_at AS at FROM claims WHERE claim_id = ?", old)!
            .at,
      ),
    ).not.toBeNull();
    await queuesInItsTransaction(retained.org_id, old, () =>
      call("POST", "/v1/legal-holds", { key: r, body: { target_type: "claim", target_id: old, reason: "litigation" } }),
    );
    expect(
      await inOrg(retained.org_id, (x) =>
        x.db.first("SELECT retention_excluded_at AS at FROM claims WHERE claim_id = ?", old),
      ),
    ).toEqual({ at: null });
  });

  it("no writer changes what the metadata holds but by re-queueing the claim: every UPDATE of claims is changeClaim's", () => {
    const SOURCES = import.meta.glob("../src/**/*.ts", { query: "?raw", import: "default", eager: true }) as Record<
      string,
      string
    >;
    expect(Object.keys(SOURCES).length).toBeGreaterThan(50);
    const updates = Object.entries(SOURCES).flatMap(([path, text]) =>
      [...text.matchAll(/UPDATE\s+(claims|projects)\b/g)].map((m) => `${path}: ${m[0]}`),
    );
    // The migrations' history and changeClaim (records.ts), which returns the claim as changed: its
    // writer's commitWrite queues the index row in the same transaction (org/outbox.ts).
    expect(updates.filter((u) => !u.startsWith("../src/org/migrations.ts"))).toEqual([
      "../src/domains/memory/records.ts: UPDATE claims",
    ]);
    const records = SOURCES["../src/domains/memory/records.ts"];
    expect(records).toMatch(
      /export type ClaimChange = Partial<Pick<ClaimRow, "status" \| "valid_to" \| "superseded_by" \| "retention_excluded_at">>;/,
    );
    expect(records).toMatch(
      /UPDATE claims SET \$\{sets\.join\(", "\)\}, version = version \+ 1, updated_at = \? WHERE claim_id = \?`,[\s\S]{0,120}\n\s*return changed\(claimId\);/,
    );
  });
});
