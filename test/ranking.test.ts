// Ranking and search see only what the caller may read: no score, order or count depends on another
// principal's private claims, and search pages stay stable under writes.
import { describe, expect, it } from "vitest";
import { clock } from "../src/http/clock";
import { hashKey } from "../src/auth/credentials";
import { loadCaller } from "../src/domains/identity/store";
import { rankClaims } from "../src/domains/memory/compile";
import { LEXICAL_CANDIDATES, LEXICAL_READS, rankTexts } from "../src/domains/memory/ranking";
import { insertClaim } from "../src/domains/memory/records";
import { SNAPSHOT_TTL_MS } from "../src/domains/memory/search";
import { Sql } from "../src/sql/db";
import {
  appendOk,
  call,
  consolidateOk,
  expectError,
  inOrg,
  mintKey,
  newOrg,
  obs,
  orgWithTwoPrincipals,
  supports,
} from "./helpers";

/** The caller's own writes: team claims, and private ones (one word, "quokka", held by no team claim). */
const OWN_TEAM = [
  "the deploy pipeline for billing runs nightly checks",
  "billing invoices are published to staging after checks",
  "the staging cluster hosts the billing pipeline",
  "lunch is served at noon in the atrium",
  "nightly checks compare invoices with the ledger",
  "the ledger service owns invoices and refunds",
];
const OWN_PRIVATE = [
  "my billing notes mention the quokka ledger",
  "private reminder: staging checks for the quokka invoices",
];
/** Another principal's private claims: many, full of the query words. */
const OTHERS = (i: number) =>
  `billing billing invoices ledger quokka staging checks pipeline nightly ${i % 2 ? "refunds" : "deploy"} secret ${i}`;

const QUERIES = [
  { query: "billing invoices ledger", token_budget: 400 },
  { query: "quokka staging checks", token_budget: 400 },
  { query: "nightly pipeline refunds", token_budget: 60, subject_id: "s" },
];
const SEARCHES = ["billing", "checks invoices", "quokka", "ledger"];

/** Ids (by order of first appearance), timestamps and opaque cursors replaced: what is left must be equal. */
function normalized(value: unknown): string {
  const ids = new Map<string, string>();
  return JSON.stringify(value)
    .replace(/\b([a-z]+_)[0-9a-f]{32}\b/g, (id, prefix) => {
      if (!ids.has(id)) ids.set(id, `${prefix}${ids.size}`);
      return ids.get(id)!;
    })
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, "<time>")
    .replace(/"next_cursor":"[^"]+"/g, '"next_cursor":"<cursor>"')
    .replace(/"request_id":"[^"]+"/g, "");
}

/**
 * One organization: the caller writes its claims one by one; with `others`, other claims land between
 * them: another principal's private claims, team claims of a closed workspace, the caller's own private
 * claims that retention then excludes, or another principal's team claims that retention excludes. The vector index is filled at the end, so compile is hybrid (authorized kNN).
 */
async function organization(others: false | "private" | "workspace" | "retention" | "excluded") {
  const { org, first: me, second: other } = await orgWithTwoPrincipals();
  const mine = await appendOk(me.key, obs("s", "team evidence"));
  const minePrivate = await appendOk(me.key, obs("s", "private evidence", { visibility: "private" }));
  // "workspace": the other principal's claims are team claims of a workspace the caller is not in.
  let project: string | undefined;
  if (others === "workspace") {
    const ws = (await call("POST", "/v1/workspaces", { key: org.api_key, body: { name: "closed" } })).json.data
      .workspace_id;
    expect(
      (
        await call("POST", "/v1/memberships", {
          key: org.api_key,
          body: { principal_id: other.principal_id, role: "member", workspace_id: ws },
        })
      ).status,
    ).toBe(201);
    project = (
      await call("POST", "/v1/projects/resolve", {
        key: other.key,
        body: { reference: "closed", create: true, workspace_id: ws },
      })
    ).json.data.project_id;
    expect(project).toMatch(/^prj_/);
  }
  // "retention": the caller's own private preference claims (private: outside the shared statistics),
  // excluded by a retention policy on preferences once they are old.
  const writer = others === "retention" ? me : other;
  const theirs =
    others === "private"
      ? await appendOk(other.key, obs("s", "their evidence", { visibility: "private" }))
      : others === "workspace"
        ? await appendOk(other.key, obs("s", "their evidence", { project_id: project }))
        : others === "retention"
          ? await appendOk(me.key, obs("s", "old evidence", { visibility: "private" }))
          : others === "excluded"
            ? await appendOk(other.key, obs("s", "their evidence"))
            : null;
  const kind = others === "retention" ? "preference" : others === "excluded" ? "summary" : "fact";
  let n = 0;
  const interleave = async () => {
    if (!theirs) return;
    const r = await call("POST", "/v1/consolidations", {
      key: writer.key,
      body: {
        subject_id: "s",
        ...(project ? { project_id: project } : {}),
        claims: Array.from({ length: 12 }, () => ({
          kind,
          statement: OTHERS(n++),
          sources: supports(theirs),
          ...(others === "retention" ? { visibility: "private" } : {}),
        })),
      },
    });
    expect(r.status, r.text).toBe(201);
  };
  await interleave();
  for (const statement of OWN_TEAM) {
    await consolidateOk(me.key, "s", [{ kind: "fact", statement, sources: supports(mine) }]);
    await interleave();
  }
  for (const statement of OWN_PRIVATE) {
    await consolidateOk(me.key, "s", [
      { kind: "fact", statement, sources: supports(minePrivate), visibility: "private" },
    ]);
    await interleave();
  }
  if (others === "retention") {
    const p = await call("POST", "/v1/policies", {
      key: org.api_key,
      body: {
        type: "retention",
        name: "old preferences",
        status: "active",
        rules: { rules: [{ record_type: "claim", max_age_days: 365, kinds: ["preference"] }] },
      },
    });
    expect(p.status, p.text).toBe(201);
    clock.advance(400 * 86_400_000);
    const r = await call("POST", "/v1/retention/apply", { key: org.api_key, body: { limit: 500 } });
    expect(r.json.data, r.text).toMatchObject({
      excluded: 12 * (OWN_TEAM.length + OWN_PRIVATE.length + 1),
      done: true,
    });
  }
  if (others === "excluded") {
    // Retention excludes the other principal's team claims (kind summary): nobody may retrieve them now.
    clock.advance(400 * 86_400_000);
    const p = await call("POST", "/v1/policies", {
      key: org.api_key,
      body: {
        type: "retention",
        name: "old summaries",
        status: "active",
        rules: { rules: [{ record_type: "claim", max_age_days: 365, kinds: ["summary"] }] },
      },
    });
    expect(p.status, p.text).toBe(201);
    const r = await call("POST", "/v1/retention/apply", { key: org.api_key, body: { limit: 500 } });
    expect(r.status, r.text).toBe(200);
    expect(r.json.data).toMatchObject({ excluded: 12 * (OWN_TEAM.length + OWN_PRIVATE.length + 1), done: true });
  }
  await fillIndex(org.api_key);
  return { org, me };
}

/** Drain the vector index queue (compile then ranks vector hits too). */
async function fillIndex(key: string) {
  for (let i = 0; i < 100; i++) {
    const r = await call("POST", "/v1/index/drain", { key, body: { limit: 100 } });
    expect(r.status, r.text).toBe(200);
    if (r.json.data.remaining === 0) return;
  }
  throw new Error("the index queue never drained");
}

/** Everything the caller is told by compile and search (every page) for the fixed queries. */
async function answers(key: string) {
  const out: unknown[] = [];
  for (const body of QUERIES) {
    const r = await call("POST", "/v1/context/compile", { key, body });
    expect(r.status, r.text).toBe(201);
    out.push(r.json.data, r.json.meta.degraded);
  }
  for (const q of SEARCHES) {
    let url = `/v1/memories?q=${encodeURIComponent(q)}&limit=2`;
    for (;;) {
      const r = await call("GET", url, { key });
      expect(r.status, r.text).toBe(200);
      out.push(r.json.data);
      if (!r.json.data.has_more) break;
      url = `/v1/memories?q=${encodeURIComponent(q)}&limit=2&after=${r.json.data.next_cursor}`;
    }
  }
  return out;
}

describe("ranking sees only what the caller may read", () => {
  it("answers compile and search identically whether or not another principal holds private claims full of the query words", async () => {
    const alone = await organization(false);
    const crowded = await organization("private");
    // Recency moves with the clock; far in the future it is zero for both, so scores compare exactly.
    clock.advance(100 * 365 * 86_400_000);
    const a = await answers(alone.me.key);
    const b = await answers(crowded.me.key);
    // The answers are not trivial: compile packs the caller's private claims too, and search pages.
    expect(JSON.stringify(a)).toContain("quokka ledger");
    expect((a[0] as { items: unknown[] }).items.length).toBeGreaterThan(3);
    // ...and vector hits took part (meta.degraded.vectors false), so the kNN path is what is compared.
    expect(a[1]).toMatchObject({ vectors: false });
    expect(a.length).toBeGreaterThan(QUERIES.length + SEARCHES.length);
    expect(JSON.stringify(b)).not.toContain("secret");
    expect(JSON.parse(normalized(b))).toEqual(JSON.parse(normalized(a)));
  });

  it("answers identically whether or not a workspace the caller is not in holds team claims full of the query words", async () => {
    const alone = await organization(false);
    const walled = await organization("workspace");
    clock.advance(100 * 365 * 86_400_000);
    const a = await answers(alone.me.key);
    const b = await answers(walled.me.key);
    expect(JSON.stringify(b)).not.toContain("secret");
    expect(JSON.parse(normalized(b))).toEqual(JSON.parse(normalized(a)));
  });

  it("answers identically whether or not the caller's own claims full of the query words were excluded by retention", async () => {
    const alone = await organization(false);
    const retained = await organization("retention");
    clock.advance(100 * 365 * 86_400_000);
    const a = await answers(alone.me.key);
    const b = await answers(retained.me.key);
    expect(JSON.stringify(b)).not.toContain("secret");
    expect(JSON.parse(normalized(b))).toEqual(JSON.parse(normalized(a)));
  });

  it("answers identically whether or not retention excluded another principal's team claims full of the query words", async () => {
    const alone = await organization(false);
    const excluded = await organization("excluded");
    clock.advance(100 * 365 * 86_400_000);
    const a = await answers(alone.me.key);
    const b = await answers(excluded.me.key);
    expect(JSON.stringify(b)).not.toContain("secret");
    expect(JSON.parse(normalized(b))).toEqual(JSON.parse(normalized(a)));
  });

  it("takes retention-excluded claims out of the shared statistics and puts restored ones back", async () => {
    const { org } = await organization("excluded");
    const stats = () =>
      inOrg(org.org_id, (o) => ({
        corpus: o.db.first<{ claims: number }>("SELECT claims FROM claim_corpus")?.claims,
        secret: o.db.first<{ claims: number }>("SELECT claims FROM claim_terms WHERE term = 'secret'")?.claims ?? 0,
        billing: o.db.first<{ claims: number }>("SELECT claims FROM claim_terms WHERE term = 'bill'")?.claims,
      }));
    expect(await stats()).toEqual({ corpus: OWN_TEAM.length, secret: 0, billing: 3 });
    // A legal hold on one excluded claim brings it back into retrieval, and into the statistics.
    const held = await inOrg(
      org.org_id,
      (o) => o.db.first<{ claim_id: string }>("SELECT claim_id FROM claims WHERE kind = 'summary' LIMIT 1")!.claim_id,
    );
    const h = await call("POST", "/v1/legal-holds", {
      key: org.api_key,
      body: { target_type: "claim", target_id: held, reason: "litigation" },
    });
    expect(h.status, h.text).toBe(201);
    expect(await stats()).toEqual({ corpus: OWN_TEAM.length + 1, secret: 1, billing: 4 });
  });

  it("keeps the shared statistics over team claims only, in the writer's transaction", async () => {
    const { org } = await organization("private");
    const stats = await inOrg(org.org_id, (o) => {
      const db = o.db;
      return {
        corpus: db.first<{ claims: number }>("SELECT claims FROM claim_corpus"),
        secret: db.first<{ claims: number }>("SELECT claims FROM claim_terms WHERE term = 'secret'"),
        billing: db.first<{ claims: number }>("SELECT claims FROM claim_terms WHERE term = 'bill'"),
      };
    });
    expect(stats.corpus?.claims).toBe(OWN_TEAM.length);
    expect(stats.secret).toBeNull();
    expect(stats.billing?.claims).toBe(3);
  });
});

describe("memories search paging", () => {
  async function seeded() {
    const org = await newOrg();
    const o = await appendOk(org.api_key, obs("s", "x"));
    const ids = await consolidateOk(
      org.api_key,
      "s",
      Array.from({ length: 7 }, (_, i) => ({
        kind: "fact",
        statement: `walrus ${"tusk ".repeat(i)}fact ${i}`,
        sources: supports(o),
      })),
    );
    return { org, o, ids };
  }

  it("neither skips nor repeats when writes between pages would reorder the results", async () => {
    const { org, o, ids } = await seeded();
    const first = await call("GET", "/v1/memories?q=walrus&limit=3", { key: org.api_key });
    expect(first.json.data.has_more).toBe(true);
    const seen: string[] = first.json.data.items.map((c: { claim_id: string }) => c.claim_id);
    // New claims that rank above everything, and a change of the statistics every score depends on.
    await consolidateOk(
      org.api_key,
      "s",
      Array.from({ length: 6 }, () => ({ kind: "fact", statement: "walrus walrus walrus", sources: supports(o) })),
    );
    clock.advance(10 * 60_000);
    let cursor = first.json.data.next_cursor;
    while (cursor) {
      const r = await call("GET", `/v1/memories?q=walrus&limit=3&after=${cursor}`, { key: org.api_key });
      expect(r.status, r.text).toBe(200);
      seen.push(...r.json.data.items.map((c: { claim_id: string }) => c.claim_id));
      cursor = r.json.data.next_cursor;
    }
    expect(seen).toHaveLength(ids.length);
    expect([...seen].sort()).toEqual([...ids].sort());
  });

  it("leaves out an item that stopped matching the filters, without skipping the rest", async () => {
    const { org, ids } = await seeded();
    const first = await call("GET", "/v1/memories?q=walrus&limit=3", { key: org.api_key });
    const shown = first.json.data.items.map((c: { claim_id: string }) => c.claim_id);
    const later = ids.filter((id) => !shown.includes(id));
    expect((await call("POST", `/v1/claims/${later[0]}/revoke`, { key: org.api_key })).status).toBe(200);
    const rest: string[] = [];
    let cursor = first.json.data.next_cursor;
    while (cursor) {
      const r = await call("GET", `/v1/memories?q=walrus&limit=3&after=${cursor}`, { key: org.api_key });
      rest.push(...r.json.data.items.map((c: { claim_id: string }) => c.claim_id));
      cursor = r.json.data.next_cursor;
    }
    expect(rest.sort()).toEqual(later.slice(1).sort());
  });

  it("binds the cursor to its caller and its search, answers any other use like a forged cursor, and expires it", async () => {
    const { org } = await seeded();
    const other = await mintKey(org.api_key, { scopes: ["*"] });
    const first = await call("GET", "/v1/memories?q=walrus&limit=3", { key: org.api_key });
    const cursor: string = first.json.data.next_cursor;
    // Opaque: it carries no claim id, score or position of another record.
    expect(cursor).not.toMatch(/claim_/);
    expect(atob(cursor.replace(/-/g, "+").replace(/_/g, "/"))).not.toMatch(/claim_|walrus/);
    const forged = await call(
      "GET",
      "/v1/memories?q=walrus&limit=3&after=eyJzIjoiMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAiLCJvIjowfQ",
      { key: org.api_key },
    );
    expectError(forged, 400, "VALIDATION_ERROR");
    const stolen = await call("GET", `/v1/memories?q=walrus&limit=3&after=${cursor}`, { key: other.key });
    expectError(stolen, 400, "VALIDATION_ERROR");
    expect(stolen.json.error.message).toBe(forged.json.error.message);
    const otherSearch = await call("GET", `/v1/memories?q=tusk&limit=3&after=${cursor}`, { key: org.api_key });
    expectError(otherSearch, 400, "VALIDATION_ERROR");
    expect(otherSearch.json.error.message).toBe(forged.json.error.message);
    clock.advance(10 * 60_000);
    expect((await call("GET", `/v1/memories?q=walrus&limit=3&after=${cursor}`, { key: org.api_key })).status).toBe(200);
    clock.advance(SNAPSHOT_TTL_MS - 10 * 60_000 + 1);
    const expired = await call("GET", `/v1/memories?q=walrus&limit=3&after=${cursor}`, { key: org.api_key });
    expectError(expired, 400, "VALIDATION_ERROR");
    expect(expired.json.error.message).toBe(forged.json.error.message);
  });

  it("sweeps expired snapshots in the alarm's search snapshot job", async () => {
    const { org } = await seeded();
    await call("GET", "/v1/memories?q=walrus&limit=3", { key: org.api_key });
    const count = () =>
      inOrg(org.org_id, (o) => o.db.first<{ n: number }>("SELECT count(*) AS n FROM search_snapshots")!.n);
    expect(await count()).toBe(1);
    clock.advance(SNAPSHOT_TTL_MS + 1);
    await inOrg(org.org_id, (o) => o.alarm());
    expect(await count()).toBe(0);
  });
});

describe("rankTexts (channel compile's use of compile's scoring)", () => {
  const at = "2026-01-01T00:00:00.000Z";
  const text = (seq: number, statement: string, subject_id = "s1") => ({
    seq,
    statement,
    subject_id,
    project_id: null,
    trust: "verified",
    status: "active",
    created_at: at,
    feedback: null,
  });

  it("scores from the served texts alone: context counts served neighbours, not gaps left by other records", () => {
    const served = (laterSeq: number) =>
      rankTexts(
        [
          text(1, "the ferry leaves the harbour at noon"),
          text(laterSeq, "ferry tickets cost five euros"),
          text(laterSeq + 1, "the bus stops at the square", "s2"),
        ],
        { query: "ferry noon" },
        Date.parse(at),
      );
    const adjacent = served(2);
    // Releases of other channels (or records the gateway cannot see) written in between change nothing.
    const apart = served(40);
    expect(apart.map((r) => [r.candidate.statement, r.score])).toEqual(
      adjacent.map((r) => [r.candidate.statement, r.score]),
    );
    // The second ferry text holds a query word next to the best match, so it carries context (which
    // it would not about another subject): the neighbours above are really counted.
    const otherSubject = rankTexts(
      [
        text(1, "the ferry leaves the harbour at noon"),
        text(40, "ferry tickets cost five euros", "s3"),
        text(41, "the bus stops at the square", "s2"),
      ],
      { query: "ferry noon" },
      Date.parse(at),
    );
    expect(apart.find((r) => r.candidate.seq === 40)!.score).toBeGreaterThan(
      otherSubject.find((r) => r.candidate.seq === 40)!.score,
    );
    expect(adjacent.map((r) => r.candidate.statement)).not.toContain("the bus stops at the square");
  });

  it("reads each text's own time: context only within the window, and the newer of two equal texts first", () => {
    const written = (seq: number, statement: string, created_at: string) => ({ ...text(seq, statement), created_at });
    const now = Date.parse("2026-03-01T00:00:00.000Z");
    const second = (minutesLater: number) =>
      rankTexts(
        [
          written(1, "the ferry leaves the harbour at noon", at),
          written(2, "ferry tickets cost five euros", new Date(Date.parse(at) + minutesLater * 60_000).toISOString()),
        ],
        { query: "ferry noon" },
        now,
      ).find((r) => r.candidate.seq === 2)!.score;
    // Written half an hour after the best match it is its context; two hours after, it is not.
    expect(second(30) - second(120)).toBeGreaterThan(0.01);
    const equal = rankTexts(
      [written(1, "the ferry leaves at noon", "2026-02-28T00:00:00.000Z"), written(2, "the ferry leaves at noon", at)],
      { query: "ferry noon" },
      now,
    );
    // Equal texts: the newer (seq 1) wins on recency, though a tie would put the later seq first.
    expect(equal.map((r) => r.candidate.seq)).toEqual([1, 2]);
  });
});

describe("compile's bounded lexical reads", () => {
  /**
   * One organization: an old claim holding both query words, then `each` newer claims holding one of
   * them each, then filler holding neither (so both words are held by fewer than half the claims and
   * select candidates). Claims go straight through insertClaim, each a minute apart.
   */
  async function commonWords(each: number) {
    const org = await newOrg();
    const statements = [
      "alpha beta: the old answer",
      ...Array.from({ length: each }, (_, i) => [`alpha note ${i}`, `beta note ${i}`]).flat(),
      ...Array.from({ length: 2 * each + 2 }, (_, i) => `gamma filler ${i}`),
    ];
    await inOrg(org.org_id, (store) => {
      const author = loadCaller(store.db, hashKey(org.api_key))!.principalId;
      const start = Date.parse("2026-01-01T00:00:00.000Z");
      statements.forEach((statement, i) => {
        const at = new Date(start + i * 60_000).toISOString();
        insertClaim(
          store.db,
          {
            claim_id: `clm_${i.toString(16).padStart(32, "0")}`,
            subject_id: "s",
            project_id: null,
            kind: "fact",
            statement,
            status: "active",
            visibility: "team",
            trust: "medium",
            version: 1,
            valid_from: at,
            valid_to: null,
            superseded_by: null,
            disputes: "[]",
            author_id: author,
            created_at: at,
            updated_at: at,
          },
          [],
        );
      });
    });
    return org;
  }

  it("reads the claims holding every query word first, so an old one is not cut off by each word's newest matches", async () => {
    // Each word has more newer matches than its share of the reads: without the reads of claims that
    // hold both, the old claim would never be read (LoCoMo lost such a turn at 500 reads).
    const org = await commonWords(LEXICAL_READS);
    const out = await inOrg(org.org_id, (store) => {
      const caller = loadCaller(store.db, hashKey(org.api_key))!;
      let lexicalRows = 0;
      const db = new Proxy(store.db, {
        get(t, p) {
          const v = Reflect.get(t, p);
          if (p !== "all") return typeof v === "function" ? v.bind(t) : v;
          return (q: string | Sql, ...args: unknown[]) => {
            const rows = v.call(t, q, ...args);
            if ((q instanceof Sql ? q.text : q).includes("claims_fts MATCH")) lexicalRows += rows.length;
            return rows;
          };
        },
      });
      const ranked = rankClaims(db, caller, { query: "alpha beta" });
      return { ranked: ranked.map((r) => r.claim.claim_id), lexicalRows };
    });
    expect(out.ranked[0]).toBe(`clm_${"0".padStart(32, "0")}`);
    // Bounded whatever the organization holds: at most LEXICAL_READS matches read, the best LEXICAL_CANDIDATES ranked.
    expect(out.lexicalRows).toBe(LEXICAL_READS);
    expect(out.ranked).toHaveLength(LEXICAL_CANDIDATES);
  }, 60_000);

  it("reads every match while the words have fewer matches than the reads", async () => {
    const org = await commonWords(20);
    const ranked = await inOrg(org.org_id, (store) =>
      rankClaims(store.db, loadCaller(store.db, hashKey(org.api_key))!, { query: "alpha beta" }).map(
        (r) => r.claim.claim_id,
      ),
    );
    // The first 1 + 2 × 20 claims hold a query word: all read and ranked, the one holding both first.
    const id = (i: number) => `clm_${i.toString(16).padStart(32, "0")}`;
    expect([...ranked].sort()).toEqual(Array.from({ length: 41 }, (_, i) => id(i)).sort());
    expect(ranked[0]).toBe(id(0));
  });
});
