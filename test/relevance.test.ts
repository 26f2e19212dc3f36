// Compile packs only what is relevant (DESIGN part 3): subject_id, project_id and kinds filter compile,
// channel compile and svc_recall exactly as they filter GET /v1/memories; with a query, the relevance
// floor keeps only claims that hold a query word or reach the embedder's similarity floor, and meta
// counts what it removed; observations and claims carry event time (occurred_at) through every view,
// export and import.
import { env, runDurableObjectAlarm } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { rankRelevant } from "../src/domains/memory/compile";
import { scoreCandidates, WEIGHTS } from "../src/domains/memory/ranking";
import { stemsOf, storedTerm } from "../src/domains/memory/fts";
import { changeClaim, sharedTermStats } from "../src/domains/memory/records";
import type { Db } from "../src/sql/db";
import { loadCaller } from "../src/domains/identity/store";
import { hashKey } from "../src/auth/credentials";
import { clock } from "../src/http/clock";
import { migrate } from "../src/org/migrate";
import { ORG_MIGRATIONS } from "../src/org/migrations";
import type { OrgStore } from "../src/OrgStore";
import { durableRegistry } from "../src/registry/client";
import { readModelConfig } from "../src/vector/config";
import { LOCAL_EMBEDDER_INFO } from "../src/vector/local-embedder";
import {
  append,
  appendOk,
  call,
  consolidateOk,
  expectError,
  inOrg,
  mintKey,
  newOrg,
  obs,
  orgStub,
  supports,
  holdBackgroundDrain,
} from "./helpers";

afterEach(() => clock.reset());

const ids = (r: { json: any }) => r.json.data.items.map((i: { claim_id: string }) => i.claim_id);
const compile = (key: string, body: Record<string, unknown>) => call("POST", "/v1/context/compile", { key, body });

async function claim(
  key: string,
  subject: string,
  statement: string,
  extra: Record<string, unknown> = {},
  kind = "fact",
) {
  const o = await appendOk(key, obs(subject, statement, extra));
  return (await consolidateOk(key, subject, [{ kind, statement, sources: supports(o) }]))[0];
}

/** Consolidate with a project (consolidateOk takes none). */
async function claimIn(key: string, subject: string, projectId: string, statement: string, kind = "fact") {
  const o = await appendOk(key, obs(subject, statement, { project_id: projectId }));
  const r = await call("POST", "/v1/consolidations", {
    key,
    body: { subject_id: subject, project_id: projectId, claims: [{ kind, statement, sources: supports(o) }] },
  });
  expect(r.status, r.text).toBe(201);
  return r.json.data.claims[0].claim_id as string;
}

/** Verify (queue what the index lacks), then drain until the queue is empty. */
async function indexAll(key: string) {
  expect((await call("POST", "/v1/index/verify", { key, body: {} })).status).toBe(200);
  for (let i = 0; i < 20; i++) {
    const d = await call("POST", "/v1/index/drain", { key, body: { limit: 100 } });
    expect(d.status, d.text).toBe(200);
    if (d.json.data.remaining === 0) return;
  }
  throw new Error("queue never drained");
}

describe("compile's filters are GET /v1/memories' filters", () => {
  async function seeded() {
    const org = await newOrg();
    const project = (
      await call("POST", "/v1/projects/resolve", { key: org.api_key, body: { reference: "repo:tea", create: true } })
    ).json.data.project_id;
    const c = {
      u7: await claim(org.api_key, "user-7", "prefers green tea in the morning"),
      u7decision: await claim(org.api_key, "user-7", "decided to order tea online", {}, "decision"),
      u99: await claim(org.api_key, "user-99", "prefers black tea in the morning"),
      u42: await claim(org.api_key, "user-42", "drinks tea every morning"),
      u7project: await claimIn(org.api_key, "user-7", project, "tea supplier for the project is in Darjeeling"),
      u42project: await claimIn(org.api_key, "user-42", project, "the project's tea budget is small", "decision"),
    };
    // More about user-7, so that "tea" is a telling word among user-7's claims too (ranking weighs words by
    // the filtered subject's claims: one that half of them hold selects no candidates on its own).
    const rest7: string[] = [];
    for (const statement of ["likes jazz records", "lives in Porto", "plays chess on sundays", "owns a red bicycle"])
      rest7.push(await claim(org.api_key, "user-7", statement));
    return { org, project, c, rest7 };
  }

  it("packs only claims about the subject, in the project, of the kinds: with and without a query", async () => {
    holdBackgroundDrain();
    const { org, project, c, rest7 } = await seeded();
    const q = (body: Record<string, unknown>) => compile(org.api_key, { token_budget: 5000, ...body });
    expect((await q({ query: "tea morning", subject_id: "user-7" })).status).toBe(201);
    expect(ids(await q({ query: "tea morning", subject_id: "user-7" })).sort()).toEqual(
      [c.u7, c.u7decision, c.u7project].sort(),
    );
    expect(ids(await q({ subject_id: "user-7" })).sort()).toEqual([c.u7, c.u7decision, c.u7project, ...rest7].sort());
    expect(ids(await q({ query: "tea", project_id: project })).sort()).toEqual([c.u7project, c.u42project].sort());
    expect(ids(await q({ query: "tea", subject_id: "user-42", project_id: project }))).toEqual([c.u42project]);
    expect(ids(await q({ query: "tea", kinds: ["decision"] })).sort()).toEqual([c.u7decision, c.u42project].sort());
    expect(ids(await q({ query: "tea", subject_id: "user-7", kinds: ["decision", "summary"] }))).toEqual([
      c.u7decision,
    ]);
    // A subject or project nobody wrote about packs nothing (no fallback to other claims).
    expect(ids(await q({ query: "tea", subject_id: "user-8" }))).toEqual([]);
    expect(ids(await q({ project_id: `prj_${"0".repeat(32)}` }))).toEqual([]);
  });

  it("selects the same claims as the memories list under the same filters", async () => {
    const { org, project, c, rest7 } = await seeded();
    const filters: Record<string, string>[] = [
      { subject_id: "user-7" },
      { project_id: project },
      { subject_id: "user-42", project_id: project },
      { kind: "decision" },
      { subject_id: "user-7", kind: "fact" },
      { project_id: "~" },
      { subject_id: "" },
    ];
    for (const f of filters) {
      const list = await call("GET", `/v1/memories?limit=100&${new URLSearchParams(f)}`, { key: org.api_key });
      expect(list.status, list.text).toBe(200);
      const { kind, ...rest } = f;
      const body = { ...rest, ...(kind ? { kinds: [kind] } : {}), token_budget: 32_000, max_items: 200 };
      if (f.subject_id === "") {
        // The list accepts an empty subject (it matches no claim); compile refuses it as a malformed id.
        expect(list.json.data.items).toEqual([]);
        expectError(await compile(org.api_key, body), 400, "VALIDATION_ERROR");
        continue;
      }
      const packed = await compile(org.api_key, body);
      expect(ids(packed).sort(), JSON.stringify(f)).toEqual(
        list.json.data.items.map((i: { claim_id: string }) => i.claim_id).sort(),
      );
    }
    expect(Object.values(c)).toHaveLength(6);
    expect(rest7).toHaveLength(4);
  });

  it("filters vector hits too: a claim of another subject near the query never enters", async () => {
    const org = await newOrg();
    const mine = await claim(org.api_key, "user-7", "enjoys hiking in the mountains");
    const theirs = await claim(org.api_key, "user-99", "enjoys hiking in the mountains on weekends");
    await indexAll(org.api_key);
    const r = await compile(org.api_key, { query: "mountain hiking trips", subject_id: "user-7" });
    expect(ids(r)).toEqual([mine]);
    expect(ids(r)).not.toContain(theirs);
    expect(r.json.meta.degraded.vectors).toBe(false);
  });
});

describe("channel compile and svc_recall follow compile's filters", () => {
  it("channel compile serves only the released snapshots that pass subject_id, project_id and kinds", async () => {
    const org = await newOrg();
    const gw = await mintKey(org.api_key, { scopes: ["channel:compile"] });
    const ch = (
      await call("POST", "/v1/channels", {
        key: org.api_key,
        body: { name: "c", audiences: ["public"], min_trust: "medium", gateway_principal_id: gw.principal_id },
      })
    ).json.data.channel_id;
    const project = (
      await call("POST", "/v1/projects/resolve", { key: org.api_key, body: { reference: "repo:ferry", create: true } })
    ).json.data.project_id;
    const verified = async (subject: string, statement: string, kind: string, projectId?: string) => {
      const o = await appendOk(
        org.api_key,
        obs(subject, statement, { trust: "verified", ...(projectId ? { project_id: projectId } : {}) }),
      );
      const r = await call("POST", "/v1/consolidations", {
        key: org.api_key,
        body: {
          subject_id: subject,
          ...(projectId ? { project_id: projectId } : {}),
          claims: [{ kind, statement, sources: supports(o) }],
        },
      });
      const id = r.json.data.claims[0].claim_id;
      const rel = await call("POST", "/v1/knowledge-releases", {
        key: org.api_key,
        body: { claim_id: id, channel_id: ch },
      });
      for (const a of ["approve", "activate"])
        expect(
          (
            await call("POST", `/v1/knowledge-releases/${rel.json.data.release_id}/${a}`, {
              key: org.api_key,
              body: {},
            })
          ).status,
        ).toBe(200);
      return id;
    };
    const harbour = await verified("harbour", "the ferry leaves the harbour at noon", "fact");
    const island = await verified("island", "the ferry reaches the island at two", "fact", project);
    const rule = await verified("harbour", "ferry tickets are bought before boarding", "instruction", project);
    const served = async (body: Record<string, unknown>) => {
      const r = await call("POST", `/v1/channels/${ch}/context/compile`, { key: gw.key, body });
      expect(r.status, r.text).toBe(200);
      return ids(r).sort();
    };
    expect(await served({ query: "ferry" })).toEqual([harbour, island, rule].sort());
    expect(await served({ query: "ferry", subject_id: "harbour" })).toEqual([harbour, rule].sort());
    expect(await served({ subject_id: "island" })).toEqual([island]);
    expect(await served({ query: "ferry", project_id: project })).toEqual([island, rule].sort());
    expect(await served({ query: "ferry", kinds: ["instruction"] })).toEqual([rule]);
    expect(await served({ query: "ferry", subject_id: "harbour", project_id: project, kinds: ["fact"] })).toEqual([]);
    // The floor: an unrelated query serves nothing, and meta counts the served snapshots it left out.
    const none = await call("POST", `/v1/channels/${ch}/context/compile`, {
      key: gw.key,
      body: { query: "xylophone quantum", subject_id: "harbour" },
    });
    expect(ids(none)).toEqual([]);
    expect(none.json.meta.floor_removed).toBe(2);
    expectError(
      await call("POST", `/v1/channels/${ch}/context/compile`, { key: gw.key, body: { kinds: ["opinion"] } }),
      400,
      "VALIDATION_ERROR",
    );
  });

  it("svc_recall recalls only the subject's claims, and nothing for an unrelated query", async () => {
    holdBackgroundDrain();
    const org = await newOrg();
    const mine = await claim(org.api_key, "user-7", "prefers tea in the morning");
    await claim(org.api_key, "user-99", "prefers tea in the evening");
    const tool = async (args: Record<string, unknown>) => {
      const r = await call("POST", "/mcp", {
        key: org.api_key,
        raw: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "tools/call",
          params: { name: "svc_recall", arguments: args },
        }),
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2025-06-18",
        },
      });
      expect(r.status, r.text).toBe(200);
      expect(r.json.result.isError, r.text).toBe(false);
      return r.json.result.structuredContent;
    };
    const recalled = await tool({ query: "tea", subject_id: "user-7" });
    expect(recalled.items.map((i: { claim_id: string }) => i.claim_id)).toEqual([mine]);
    expect(recalled.context_text).not.toContain("evening");
    const unrelated = await tool({ query: "xylophone quantum" });
    expect(unrelated.items).toEqual([]);
    expect(unrelated.context_text).toContain("No relevant memory");
  });
});

describe("the relevance floor", () => {
  it("an unrelated query packs nothing, a related one still finds its claim, and meta counts what the floor removed", async () => {
    const org = await newOrg();
    const tea = await claim(org.api_key, "user-7", "Prefers tea in the morning");
    await claim(org.api_key, "user-7", "Works from the Lisbon office on Tuesdays");
    await indexAll(org.api_key);
    const unrelated = await compile(org.api_key, { query: "xylophone quantum" });
    expect(unrelated.status, unrelated.text).toBe(201);
    expect(unrelated.json.data.items).toEqual([]);
    expect(unrelated.json.data.tokens_used).toBe(0);
    // The vector hits the floor kept out (the embedder knows "quantum"): counted, never packed.
    expect(unrelated.json.meta.floor_removed).toBeGreaterThan(0);
    const related = await compile(org.api_key, { query: "what does she drink in the morning, tea?" });
    expect(ids(related)).toEqual([tea]);
    expect(related.json.meta.floor_removed).toBeGreaterThanOrEqual(0);
    // Without a query the floor does nothing: ranking is as before.
    const all = await compile(org.api_key, { subject_id: "user-7" });
    expect(ids(all)).toHaveLength(2);
    expect(all.json.meta.floor_removed).toBe(0);
  });

  it("admits a vector hit at or above the floor, removes one below it, and counts only candidates the caller may read", async () => {
    const org = await newOrg();
    const member = await mintKey(org.api_key, { scopes: ["*"] });
    const near = await claim(org.api_key, "s", "the cat sleeps on the sofa");
    const edge = await claim(org.api_key, "s", "a dog barks at the mailman");
    const far = await claim(org.api_key, "s", "quarterly tax filing is due");
    const secret = await claim(org.api_key, "s", "the owner's private diary entry", { visibility: "private" });
    await inOrg(org.org_id, (o) => {
      const similarities = new Map([
        [near, 0.9],
        [edge, 0.5],
        [far, 0.49],
        [secret, 0.1],
      ]);
      const rank = (key: string, floor: number | null) =>
        rankRelevant(o.db, loadCaller(o.db, hashKey(key))!, { query: "pets" }, undefined, { similarities, floor });
      const forMember = rank(member.key, 0.5);
      expect(forMember.ranked.map((r) => r.claim.claim_id)).toEqual([near, edge]);
      // far (0.49) is removed; the owner's private claim is no candidate of the member's at all.
      expect(forMember.floorRemoved).toBe(1);
      const forOwner = rank(org.api_key, 0.5);
      expect(forOwner.floorRemoved).toBe(2);
      // No floor (a model whose floor is not measured): vectors alone admit nothing.
      expect(rank(member.key, null).ranked).toEqual([]);
      expect(rank(member.key, null).floorRemoved).toBe(3);
    });
  });

  it("admits a vector hit below the floor that holds a query word too common to select candidates", async () => {
    const org = await newOrg();
    // "caroline" is held by every claim (it selects nothing); "pottery" by one. `paints` is too far from
    // the pottery claim to come in as its neighbour: only the vector query brings it in.
    const paints = await claim(org.api_key, "s", "Caroline paints sunsets");
    for (const statement of ["Caroline runs", "Caroline reads", "Caroline cooks"])
      await claim(org.api_key, "s", statement);
    const pottery = await claim(org.api_key, "s", "Caroline went to a pottery class");
    const tax = await claim(org.api_key, "t", "quarterly tax filing is due");
    await inOrg(org.org_id, (o) => {
      const similarities = new Map([
        [paints, 0.1],
        [tax, 0.1],
      ]);
      const r = rankRelevant(o.db, loadCaller(o.db, hashKey(org.api_key))!, { query: "caroline pottery" }, undefined, {
        similarities,
        floor: 0.5,
      });
      const ranked = r.ranked.map((x) => x.claim.claim_id);
      expect(ranked[0]).toBe(pottery);
      expect(ranked).toContain(paints);
      expect(ranked).not.toContain(tax);
      expect(r.floorRemoved).toBe(1);
    });
  });

  it("the local embedder's floor is in the model configuration, and EMBEDDING_SIMILARITY_FLOOR replaces it", async () => {
    const org = await newOrg();
    const r = await call("GET", "/v1/models/config", { key: org.api_key });
    expect(r.json.data.embedding.similarity_floor).toBe(LOCAL_EMBEDDER_INFO.similarityFloor);
    const at = clock.nowIso();
    expect(readModelConfig({ EMBEDDING_SIMILARITY_FLOOR: "0.8" }, at).embedding).toMatchObject({
      similarity_floor: 0.8,
      status: "enabled",
    });
    expect(readModelConfig({ EMBEDDING_PROVIDER: "workers-ai", AI: {} }, at).embedding.similarity_floor).toBeNull();
    const bad = readModelConfig({ EMBEDDING_SIMILARITY_FLOOR: "high" }, at).embedding;
    expect(bad).toMatchObject({ status: "partial" });
    expect(bad.problems.join()).toContain("EMBEDDING_SIMILARITY_FLOOR");
  });
});

describe("event time (occurred_at)", () => {
  it("observations take it (normalized to UTC), default to created_at, and refuse more than 5 minutes ahead", async () => {
    const org = await newOrg();
    const now = clock.nowMs();
    const given = await append(
      org.api_key,
      obs("s", "the launch slipped", { occurred_at: "2023-05-08T13:56:00+02:00" }),
    );
    expect(given.status, given.text).toBe(201);
    expect(given.json.data.occurred_at).toBe("2023-05-08T11:56:00.000Z");
    const plain = await append(org.api_key, obs("s", "written now"));
    expect(plain.json.data.occurred_at).toBe(plain.json.data.created_at);
    expect(
      (await append(org.api_key, obs("s", "skew", { occurred_at: new Date(now + 4 * 60_000 + 50_000).toISOString() })))
        .status,
    ).toBe(201);
    const ahead = await append(
      org.api_key,
      obs("s", "future", { occurred_at: new Date(now + 5 * 60_000 + 10_000).toISOString() }),
    );
    expectError(ahead, 400, "VALIDATION_ERROR");
    expect(ahead.json.error.message).toContain("occurred_at");
    expectError(await append(org.api_key, obs("s", "bad", { occurred_at: "last tuesday" })), 400, "VALIDATION_ERROR");
    // The evidence view shows it.
    const [c] = await consolidateOk(org.api_key, "s", [
      { kind: "fact", statement: "the launch slipped", sources: supports(given.json.data.observation_id) },
    ]);
    const ev = await call("GET", `/v1/claims/${c}/evidence`, { key: org.api_key });
    expect(ev.json.data.supporting[0].occurred_at).toBe("2023-05-08T11:56:00.000Z");
  });

  it("a claim reports the latest of its sources' occurred_at in every view", async () => {
    const org = await newOrg();
    const early = await appendOk(org.api_key, obs("s", "met in may", { occurred_at: "2023-05-08T10:00:00.000Z" }));
    const late = await appendOk(
      org.api_key,
      obs("s", "met again in june", { occurred_at: "2023-06-01T10:00:00.000Z" }),
    );
    const r = await call("POST", "/v1/consolidations", {
      key: org.api_key,
      body: {
        subject_id: "s",
        claims: [
          {
            kind: "fact",
            statement: "they met twice",
            sources: [
              { observation_id: early, relation: "supports" },
              { observation_id: late, relation: "qualifies" },
            ],
          },
          { kind: "fact", statement: "they met in may", sources: supports(early) },
        ],
      },
    });
    expect(r.json.data.claims.map((x: { occurred_at: string }) => x.occurred_at)).toEqual([
      "2023-06-01T10:00:00.000Z",
      "2023-05-08T10:00:00.000Z",
    ]);
    const list = await call("GET", "/v1/memories?subject_id=s", { key: org.api_key });
    expect(list.json.data.items.map((x: { occurred_at: string }) => x.occurred_at).sort()).toEqual([
      "2023-05-08T10:00:00.000Z",
      "2023-06-01T10:00:00.000Z",
    ]);
  });

  it("round-trips through export and import; a line without it imports as its created_at; a future one is refused", async () => {
    const a = await newOrg();
    const o = await appendOk(a.api_key, obs("s", "the ferry strike", { occurred_at: "2022-01-21T19:31:00.000Z" }));
    const [c] = await consolidateOk(a.api_key, "s", [
      { kind: "fact", statement: "there was a ferry strike", sources: supports(o) },
    ]);
    const exported = await call("GET", "/v1/export?limit=2000", { key: a.api_key });
    const lines = exported.text
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(lines.find((l) => l.observation_id === o).occurred_at).toBe("2022-01-21T19:31:00.000Z");
    expect(lines.find((l) => l.claim_id === c).occurred_at).toBe("2022-01-21T19:31:00.000Z");
    // Another deployment: forget the ids' ownership, import into a fresh organization, export again.
    await runDurableObjectAlarm(orgStub(a.org_id) as unknown as DurableObjectStub);
    await durableRegistry(env.ID_REGISTRY).release(a.org_id, [o, c]);
    const b = await newOrg();
    const imported = await call("POST", "/v1/import", {
      key: b.api_key,
      raw: exported.text,
      headers: { "content-type": "application/x-ndjson" },
    });
    expect(imported.status, imported.text).toBe(201);
    const again = (await call("GET", "/v1/export?limit=2000", { key: b.api_key })).text
      .split("\n")
      .filter(Boolean)
      .slice(1);
    expect(again).toEqual(exported.text.split("\n").filter(Boolean).slice(1));
    const ev = await call("GET", `/v1/claims/${c}/evidence`, { key: b.api_key });
    expect(ev.json.data.claim.occurred_at).toBe("2022-01-21T19:31:00.000Z");
    expect(ev.json.data.supporting[0].occurred_at).toBe("2022-01-21T19:31:00.000Z");

    // A file written before event time existed: no occurred_at, read as created_at (re-importing it is idempotent).
    const c2 = await newOrg();
    const older = lines.slice(1).map(({ occurred_at: _drop, ...rest }) => rest);
    await runDurableObjectAlarm(orgStub(b.org_id) as unknown as DurableObjectStub);
    await durableRegistry(env.ID_REGISTRY).release(b.org_id, [o, c]);
    const raw = older.map((l) => JSON.stringify(l)).join("\n");
    expect(
      (await call("POST", "/v1/import", { key: c2.api_key, raw, headers: { "content-type": "application/x-ndjson" } }))
        .status,
    ).toBe(201);
    const restored = (await call("GET", "/v1/export?limit=2000", { key: c2.api_key })).text
      .split("\n")
      .filter(Boolean)
      .slice(1)
      .map((l) => JSON.parse(l));
    for (const l of restored) expect(l.occurred_at).toBe(l.created_at);
    const repeat = await call("POST", "/v1/import", {
      key: c2.api_key,
      raw,
      headers: { "content-type": "application/x-ndjson" },
    });
    expect(repeat.status, repeat.text).toBe(200);

    const future = JSON.stringify({
      ...older[0],
      observation_id: `obs_${"f".repeat(32)}`,
      occurred_at: new Date(Date.now() + 3_600_000).toISOString(),
    });
    const refused = await call("POST", "/v1/import", {
      key: c2.api_key,
      raw: future,
      headers: { "content-type": "application/x-ndjson" },
    });
    expectError(refused, 400, "VALIDATION_ERROR");
    expect(refused.json.error.message).toMatch(
      /^Line 1: Invalid field "occurred_at": must not be more than 5 minutes in the future/,
    );
  });

  it("0034_event_time gives existing observations their created_at, claims the latest of their sources' (else created_at)", async () => {
    await inOrg(`migration-test-${crypto.randomUUID()}`, async (o: OrgStore) => {
      const storage = (o as unknown as { ctx: DurableObjectState }).ctx.storage;
      await storage.deleteAll();
      const upTo = ORG_MIGRATIONS.findIndex((m) => m.name === "0034_event_time");
      migrate(o.db, storage, ORG_MIGRATIONS.slice(0, upTo));
      o.db
        .run(`INSERT INTO observations (observation_id, subject_id, project_id, kind, content, content_hash, source_type, source_ref, trust,
          visibility, author_id, created_at, purged_at) VALUES ('obs_1', 's', NULL, 'note', 'x', 'h', 't', NULL, 'medium', 'team', 'prn_a', '2024-01-02T00:00:00.000Z', NULL)`);
      o.db
        .run(`INSERT INTO claims (claim_id, subject_id, project_id, kind, statement, status, visibility, trust, version, valid_from,
          valid_to, superseded_by, disputes, author_id, created_at, updated_at) VALUES ('claim_1', 's', NULL, 'fact', 'x', 'active', 'team',
          'medium', 1, 't', NULL, NULL, '[]', 'prn_a', '2024-03-01T00:00:00.000Z', 't'),
          ('claim_2', 's', NULL, 'fact', 'y', 'active', 'team', 'medium', 1, 't', NULL, NULL, '[]', 'prn_a',
          '2024-01-03T00:00:00.000Z', 't')`);
      o.db.run(
        "INSERT INTO claim_sources (claim_id, position, observation_id, relation) VALUES ('claim_1', 0, 'obs_1', 'supports')",
      );
      migrate(o.db, storage, ORG_MIGRATIONS.slice(0, upTo + 1));
      expect(o.db.first("SELECT occurred_at FROM observations")).toEqual({ occurred_at: "2024-01-02T00:00:00.000Z" });
      expect(o.db.all("SELECT claim_id, occurred_at FROM claims ORDER BY claim_id")).toEqual([
        { claim_id: "claim_1", occurred_at: "2024-01-02T00:00:00.000Z" },
        { claim_id: "claim_2", occurred_at: "2024-01-03T00:00:00.000Z" },
      ]);
      expect(o.db.all("SELECT claim_id, occurred_at FROM claim_ranking ORDER BY claim_id")).toEqual([
        { claim_id: "claim_1", occurred_at: "2024-01-02T00:00:00.000Z" },
        { claim_id: "claim_2", occurred_at: "2024-01-03T00:00:00.000Z" },
      ]);
    });
  });
});

/** The per-subject statistics recomputed from the claims themselves: shared claims (team, no workspace, not excluded) only. */
function recomputedSubjectStats(db: Db) {
  const terms = new Map<string, number>();
  const corpus = new Map<string, { claims: number; tokens: number }>();
  for (const c of db.all<{ subject_id: string; statement: string }>(
    "SELECT subject_id, statement FROM claims WHERE visibility = 'team' AND workspace_id IS NULL AND retention_excluded_at IS NULL",
  )) {
    const stems = stemsOf(c.statement).map(storedTerm);
    const k = corpus.get(c.subject_id) ?? { claims: 0, tokens: 0 };
    corpus.set(c.subject_id, { claims: k.claims + 1, tokens: k.tokens + stems.length });
    for (const t of new Set(stems)) terms.set(`${c.subject_id}|${t}`, (terms.get(`${c.subject_id}|${t}`) ?? 0) + 1);
  }
  return { terms: Object.fromEntries([...terms].sort()), corpus: Object.fromEntries([...corpus].sort()) };
}
const storedSubjectStats = (db: Db) => ({
  terms: Object.fromEntries(
    db
      .all<{ k: string; claims: number }>(
        "SELECT subject_id || '|' || term AS k, claims FROM claim_subject_terms WHERE claims > 0 ORDER BY k",
      )
      .map((r) => [r.k, r.claims]),
  ),
  corpus: Object.fromEntries(
    db
      .all<{ subject_id: string; claims: number; tokens: number }>(
        "SELECT subject_id, claims, tokens FROM claim_subject_corpus WHERE claims > 0 ORDER BY subject_id",
      )
      .map((r) => [r.subject_id, { claims: r.claims, tokens: r.tokens }]),
  ),
});

describe("per-subject ranking statistics", () => {
  it("count each subject's shared claims in the writer's transaction: team only, out with retention, back when restored", async () => {
    const org = await newOrg();
    await claim(org.api_key, "user-7", "Caroline went to the pottery class with Caroline's sister");
    await claim(org.api_key, "user-7", "Caroline paints sunsets");
    const excluded = await claim(org.api_key, "user-7", "Caroline adopted a dog");
    await claim(org.api_key, "user-7", "Caroline keeps a private journal", { visibility: "private" });
    await claim(org.api_key, "user-99", "Jon opened a dance studio");
    await inOrg(org.org_id, (o) => {
      expect(storedSubjectStats(o.db)).toEqual(recomputedSubjectStats(o.db));
      (o as unknown as { ctx: DurableObjectState }).ctx.storage.transactionSync(() =>
        changeClaim(o.db, excluded, { retention_excluded_at: clock.nowIso() }),
      );
      expect(storedSubjectStats(o.db)).toEqual(recomputedSubjectStats(o.db));
      expect(storedSubjectStats(o.db).corpus["user-7"].claims).toBe(2);
      (o as unknown as { ctx: DurableObjectState }).ctx.storage.transactionSync(() =>
        changeClaim(o.db, excluded, { retention_excluded_at: null }),
      );
      expect(storedSubjectStats(o.db)).toEqual(recomputedSubjectStats(o.db));
      // A compile filtered to user-7 weighs "caroline" by user-7's claims (held by all: common), not the organization's (rare).
      const subject = sharedTermStats(o.db, ["carolin"], "user-7");
      const whole = sharedTermStats(o.db, ["carolin"]);
      expect([subject.rows, subject.held("carolin")]).toEqual([3, 3]);
      expect([whole.rows, whole.held("carolin")]).toEqual([4, 3]);
      // A subject without shared claims ranks by the organization's statistics.
      expect(sharedTermStats(o.db, ["carolin"], "nobody").rows).toBe(4);
    });
  });

  it("compile filtered to a subject weighs words by that subject's claims: a word all of them hold selects nothing", async () => {
    holdBackgroundDrain();
    const org = await newOrg();
    const others = async () => {
      for (const statement of [
        "ships the parcel on monday",
        "reviews the quarterly report",
        "waters the office plants",
      ])
        await claim(org.api_key, "user-99", statement);
    };
    const paints = await claim(org.api_key, "user-7", "Caroline paints sunsets");
    await others();
    const swims = await claim(org.api_key, "user-7", "Caroline swims at dawn");
    await others();
    const pottery = await claim(org.api_key, "user-7", "Caroline went to a pottery class");
    // Across the organization "caroline" is rare (3 of 9 claims): it selects, and every claim holding it is packed.
    expect(ids(await compile(org.api_key, { query: "caroline pottery" })).sort()).toEqual(
      [paints, swims, pottery].sort(),
    );
    // Among user-7's claims every one holds it, so it tells nothing there: only the pottery claim is relevant.
    expect(ids(await compile(org.api_key, { query: "caroline pottery", subject_id: "user-7" }))).toEqual([pottery]);
  });

  it("0035_subject_statistics backfills them from the index", async () => {
    await inOrg(`migration-test-${crypto.randomUUID()}`, async (o: OrgStore) => {
      const storage = (o as unknown as { ctx: DurableObjectState }).ctx.storage;
      await storage.deleteAll();
      const at = ORG_MIGRATIONS.findIndex((m) => m.name === "0035_subject_statistics");
      migrate(o.db, storage, ORG_MIGRATIONS.slice(0, at));
      const rows: [string, string, string, string | null][] = [
        ["s1", "billing invoices billing", "team", null],
        ["s1", "the invoices are late", "team", null],
        ["s2", "invoices for s2", "team", null],
        ["s1", "a private invoices note", "private", null],
        ["s2", "excluded invoices", "team", "2026-01-01T00:00:00.000Z"],
      ];
      rows.forEach(([subject, statement, visibility, excludedAt], i) => {
        o.db.run(
          `INSERT INTO claims (claim_id, subject_id, project_id, kind, statement, status, visibility, trust, version, valid_from,
            valid_to, superseded_by, disputes, author_id, created_at, updated_at, retention_excluded_at, occurred_at)
          VALUES (?, ?, NULL, 'fact', ?, 'active', ?, 'medium', 1, 't', NULL, NULL, '[]', 'prn_a', 't', 't', ?, 't')`,
          `claim_${i}`,
          subject,
          statement,
          visibility,
          excludedAt,
        );
        o.db.run(
          "INSERT INTO claims_fts (rowid, statement) SELECT seq, statement FROM claims WHERE claim_id = ?",
          `claim_${i}`,
        );
      });
      migrate(o.db, storage, ORG_MIGRATIONS.slice(0, at + 1));
      expect(storedSubjectStats(o.db)).toEqual(recomputedSubjectStats(o.db));
      expect(storedSubjectStats(o.db).corpus).toEqual({ s1: { claims: 2, tokens: 7 }, s2: { claims: 1, tokens: 3 } });
    });
  });
});

describe("thread: a session scores by its best-matching turn", () => {
  const at = "2026-01-01T00:00:00.000Z";
  const cand = (seq: number, subject: string, occurred: string | null) => ({
    seq,
    subject_id: subject,
    project_id: null,
    trust: "medium",
    status: "active",
    created_at: at,
    occurred_at: occurred,
    feedback: null,
  });

  it("lifts a match by the best lexical score of another match of its subject whose event lies within the window", () => {
    const best = cand(1, "s", "2023-06-20T10:00:00.000Z");
    const inThread = cand(2, "s", "2023-06-20T10:10:00.000Z");
    const later = cand(3, "s", "2023-06-20T11:15:00.000Z");
    const otherSubject = cand(4, "t", "2023-06-20T10:00:00.000Z");
    const noEventTime = cand(5, "s", null);
    const all = [best, inThread, later, otherSubject, noEventTime];
    const lexical = new Map([
      [1, 1],
      [2, 0.2],
      [3, 0.2],
      [4, 0.2],
      [5, 0.2],
    ]);
    const scores = new Map(
      scoreCandidates(all, lexical, all, new Map(), { query: "q" }, Date.parse(at), () => 1).map((r) => [
        r.candidate.seq,
        r.score,
      ]),
    );
    expect(scores.get(2)! - scores.get(3)!).toBeCloseTo(WEIGHTS.thread * 1, 6);
    // 65 minutes after both matches: outside; the same minute for another subject, or no event time: nothing.
    expect(scores.get(3)).toBe(scores.get(4));
    expect(scores.get(3)).toBe(scores.get(5));
    // A candidate holding no query word (only a vector hit above the floor can be one) gets none.
    const vectorOnly = cand(6, "s", "2023-06-20T10:01:00.000Z");
    const withIt = scoreCandidates(
      [best, vectorOnly],
      new Map([[1, 1]]),
      [best],
      new Map(),
      { query: "q" },
      Date.parse(at),
      () => 1,
    );
    const withoutBest = scoreCandidates(
      [vectorOnly],
      new Map(),
      [],
      new Map(),
      { query: "q" },
      Date.parse(at),
      () => 1,
    );
    expect(withIt.find((r) => r.candidate.seq === 6)!.score).toBe(withoutBest[0].score);
  });

  it("compile reads event times for it: of two equal matches the one in the best match's session ranks higher", async () => {
    const org = await newOrg();
    const said = async (statement: string, occurred_at: string) => {
      const o = await appendOk(org.api_key, obs("s", statement, { occurred_at }));
      return (await consolidateOk(org.api_key, "s", [{ kind: "fact", statement, sources: supports(o) }]))[0];
    };
    // Filler between them, so that no two matches are context of each other (written next to each other).
    const filler = async () => {
      for (const f of ["the bus was late", "rain all week", "new shoes"]) await said(f, "2023-01-01T00:00:00.000Z");
    };
    await said("the pottery class made clay bowls", "2023-06-20T10:00:00.000Z");
    await filler();
    const sameSession = await said("she bought clay", "2023-06-20T10:05:00.000Z");
    await filler();
    const otherSession = await said("she bought clay", "2023-09-02T10:00:00.000Z");
    const r = await compile(org.api_key, { query: "pottery clay bowls", subject_id: "s" });
    const score = (id: string) => r.json.data.items.find((i: { claim_id: string }) => i.claim_id === id).score;
    expect(score(sameSession) - score(otherSession)).toBeCloseTo(WEIGHTS.thread * 1, 2);
  });
});
