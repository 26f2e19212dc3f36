// src/domains/memory/records.ts is the only module with SQL on the memory tables: retention, vectors
// and workspace roles rely on every read going through its one predicate and every write reporting
// what it touched. This scans the source text, so a new statement anywhere else fails here.
import { describe, expect, it } from "vitest";
import { hashKey } from "../src/auth/credentials";
import { loadCaller } from "../src/domains/identity/store";
import { changeClaim, getClaim, insertClaim, insertProject, rankingDrift, readableNeighbours, readableWithin, tombstone } from "../src/domains/memory/records";
import { queueTouched } from "../src/org/outbox";
import { appendOk, consolidateOk, countingDb, inOrg, mintKey, newOrg, obs, orgWithTwoPrincipals, supports } from "./helpers";

declare global {
  /** Vite's compile-time glob import (vitest transforms it; typed here rather than pulling in vite/client). */
  interface ImportMeta {
    glob(pattern: string, opts: { query: string; import: string; eager: true }): Record<string, unknown>;
  }
}

const SOURCES = import.meta.glob("../src/**/*.ts", { query: "?raw", import: "default", eager: true }) as Record<string, string>;

const MEMORY_TABLES = ["projects", "observations", "claims", "claim_sources", "claims_fts", "claim_ranking"];
/** Where SQL on them may appear: their owner, and the append-only schema history. */
const OWNERS = ["../src/domains/memory/records.ts", "../src/org/migrations.ts"];

// SQL keywords are written upper case in this codebase; prose ("turn observations into claims") is not.
const STATEMENT = new RegExp(`\\b(?:FROM|INTO|UPDATE|JOIN)\\s+(${MEMORY_TABLES.join("|")})\\b`, "g");

/** [file, table, line] for every statement naming a memory table outside its owners. */
function strayMemorySql(sources: Record<string, string>): [string, string, number][] {
  const found: [string, string, number][] = [];
  for (const [file, text] of Object.entries(sources)) {
    if (OWNERS.includes(file)) continue;
    for (const m of text.matchAll(STATEMENT)) found.push([file, m[1], text.slice(0, m.index).split("\n").length]);
  }
  return found;
}

describe("memory record ownership", () => {
  it("scans the whole source tree", () => {
    const files = Object.keys(SOURCES);
    expect(files).toContain("../src/domains/memory/records.ts");
    expect(files).toContain("../src/domains/memory/claims.ts");
    expect(files.length).toBeGreaterThan(40);
    // The owner really holds the statements the scan looks for (so the pattern is not blind).
    expect(strayMemorySql({ "../src/x.ts": SOURCES["../src/domains/memory/records.ts"] }).map(([, t]) => t).sort())
      .toEqual(expect.arrayContaining(MEMORY_TABLES));
  });

  it("keeps SQL on projects, observations, claims, claim_sources, claims_fts and claim_ranking in memory/records.ts", () => {
    expect(strayMemorySql(SOURCES)).toEqual([]);
  });

  it("catches a statement written outside the owner, across lines, but not prose", () => {
    expect(strayMemorySql({ "../src/domains/other/memory-sql.ts": 'db.all(`SELECT o.* FROM\n  observations o JOIN claim_sources s ON 1`) // turn observations into claims' }))
      .toEqual([["../src/domains/other/memory-sql.ts", "observations", 1], ["../src/domains/other/memory-sql.ts", "claim_sources", 2]]);
  });
});

describe("memory record writers", () => {
  it("report what they touched; a claim change bumps its version; the outbox carries created ids per topic", async () => {
    const org = await newOrg();
    const o = await appendOk(org.api_key, obs("s", "x"));
    const [claim] = await consolidateOk(org.api_key, "s", [{ kind: "fact", statement: "writers report", sources: supports(o) }]);
    const out = await inOrg(org.org_id, (store) => {
      const changed = changeClaim(store.db, claim, { status: "revoked" });
      const purged = tombstone(store.db, o);
      const before = store.db.first<{ n: number }>("SELECT count(*) AS n FROM outbox")!.n;
      const queued = queueTouched(store.db, { created: ["obs_new", "obs_new"], changed: [claim] }, "2026-01-01T00:00:00.000Z", new Set());
      const rows = store.db.all<{ topic: string; payload: string }>("SELECT topic, payload FROM outbox ORDER BY seq DESC LIMIT ?", queued.rows);
      return { changed, purged, version: getClaim(store.db, claim)!.version, added: store.db.first<{ n: number }>("SELECT count(*) AS n FROM outbox")!.n - before, queued, rows };
    });
    expect(out.changed).toEqual({ created: [], changed: [claim] });
    expect(out.purged).toEqual({ created: [], changed: [o] });
    expect(out.version).toBe(2);
    // record_owner carries created ids; index carries created and changed observations and claims.
    expect(out).toMatchObject({ queued: { rows: 3, ownerIds: ["obs_new"] }, added: 3 });
    expect(out.rows.map((r) => `${r.topic} ${r.payload}`).sort()).toEqual([`index ${claim}`, "index obs_new", "record_owner obs_new"].sort());
  });

  it("keep claim_ranking's copy of the claim columns in step with claims through every kind of claim write", async () => {
    const org = await newOrg();
    const me = await mintKey(org.api_key, { scopes: ["*"] });
    const o = await appendOk(me.key, obs("s", "x"));
    const [team, priv, multi] = await consolidateOk(me.key, "s", [
      { kind: "fact", statement: "team claim about billing", sources: supports(o) },
      { kind: "preference", statement: "private claim about billing", visibility: "private", sources: supports(o) },
      { kind: "fact", statement: "Café naïve résumés in Ελλάδα 🎉", sources: supports(o) },
    ]);
    const inWs = "clm_00000000000000000000000000000001";
    const drift = await inOrg(org.org_id, (store) => {
      // A claim of a workspace's project (insertClaim copies the project's workspace).
      store.db.run("INSERT INTO workspaces (workspace_id, name, created_by, created_at) VALUES ('wks_ranked', 'ranked', 'prn_x', 't')");
      insertProject(store.db, { project_id: "prj_ranked", reference: "ranked", created_by: "prn_x", created_at: "2026-01-01T00:00:00.000Z", workspace_id: "wks_ranked" });
      insertClaim(store.db, { claim_id: inWs, subject_id: "s", project_id: "prj_ranked", kind: "fact", statement: "workspace claim", status: "active",
        visibility: "team", trust: "medium", version: 1, valid_from: "2026-01-01T00:00:00.000Z", valid_to: null, superseded_by: null, disputes: "[]",
        author_id: "prn_x", created_at: "2026-01-01T00:00:00.000Z", updated_at: "2026-01-01T00:00:00.000Z" }, []);
      const after: Record<string, unknown[]> = { inserted: rankingDrift(store.db),
        workspace: store.db.all("SELECT workspace_id, bytes FROM claim_ranking WHERE claim_id IN (?, ?) ORDER BY seq", multi, inWs) };
      changeClaim(store.db, team, { status: "disputed" });
      changeClaim(store.db, priv, { status: "superseded", superseded_by: team });
      changeClaim(store.db, multi, { valid_to: "2026-01-01T00:00:00.000Z" });
      changeClaim(store.db, inWs, { retention_excluded_at: "2026-01-02T00:00:00.000Z" });
      after.changed = rankingDrift(store.db);
      changeClaim(store.db, inWs, { retention_excluded_at: null });
      changeClaim(store.db, team, { status: "revoked" });
      after.restored = rankingDrift(store.db);
      // Any statement on claims, not only the two writers, moves the copy (the triggers of 0022): a bulk
      // exclusion, a visibility change no route makes today, a delete.
      store.db.run("UPDATE claims SET retention_excluded_at = 't' WHERE claim_id IN (SELECT value FROM json_each(?))", JSON.stringify([team, priv]));
      store.db.run("UPDATE claims SET visibility = 'private', subject_id = 'moved' WHERE claim_id = ?", multi);
      store.db.run("DELETE FROM claims WHERE claim_id = ?", inWs);
      after.raw = rankingDrift(store.db);
      // A copy that parted from claims would show: the check is not blind.
      store.db.run("UPDATE claim_ranking SET status = 'active' WHERE claim_id = ?", team);
      after.forgotten = rankingDrift(store.db);
      return after;
    });
    expect(drift.inserted).toEqual([]);
    expect(drift.workspace).toEqual([{ workspace_id: null, bytes: new TextEncoder().encode("Café naïve résumés in Ελλάδα 🎉").length },
      { workspace_id: "wks_ranked", bytes: 15 }]);
    expect(drift.changed).toEqual([]);
    expect(drift.restored).toEqual([]);
    expect(drift.raw).toEqual([]);
    expect(drift.forgotten).toEqual([expect.objectContaining({ side: "claims", claim_id: team, status: "revoked" }),
      expect.objectContaining({ side: "claim_ranking", claim_id: team, status: "active" })]);
  });
});

/** Two principals of one organization, each with an observation: mine (team) and theirs (private to them). */
async function meAndOther() {
  const { org, first: me, second: other } = await orgWithTwoPrincipals();
  const mine = await appendOk(me.key, obs("s", "x"));
  const theirs = await appendOk(other.key, obs("s", "y", { visibility: "private" }));
  return { org, me, other, mine, theirs };
}

describe("memory record readers", () => {
  it("count the readable claims between two matches without walking past the second (claims the caller cannot read after it cost nothing)", async () => {
    const { org, me, other, mine, theirs } = await meAndOther();
    const [a] = await consolidateOk(me.key, "s", [{ kind: "fact", statement: "ferry noon a", sources: supports(mine) }]);
    await consolidateOk(other.key, "s", [{ kind: "fact", statement: "hidden between", sources: supports(theirs), visibility: "private" }]);
    const [b] = await consolidateOk(me.key, "s", [{ kind: "fact", statement: "ferry noon b", sources: supports(mine) }]);
    const read = await inOrg(org.org_id, (store) => {
      const at = new Date().toISOString();
      const otherId = loadCaller(store.db, hashKey(other.key))!.principalId;
      for (let i = 0; i < 2000; i++)
        insertClaim(store.db, { claim_id: `claim_${i.toString(16).padStart(32, "0")}`, subject_id: "s", project_id: null, kind: "fact", statement: `later ${i}`,
          status: "active", visibility: "private", trust: "medium", version: 1, valid_from: at, valid_to: null, superseded_by: null,
          disputes: "[]", author_id: otherId, created_at: at, updated_at: at }, supports(theirs));
      const seq = (id: string) => store.db.first<{ seq: number }>("SELECT seq FROM claims WHERE claim_id = ?", id)!.seq;
      const caller = loadCaller(store.db, hashKey(me.key))!;
      const counting = countingDb(store.db);
      const within = readableWithin(counting.db, caller, [[seq(a), seq(b)]], 2);
      return { within: within.get(seq(a)), rowsRead: counting.rowsRead() };
    });
    expect(read.rowsRead, `rows read ${read.rowsRead}`).toBeLessThan(20);
    expect(read.within).toEqual([]);
  }, 60_000);

  it("walk write order as the caller sees it: neighbours and spans skip claims it may not read, spans stop at their end", async () => {
    const { org, me, other, mine, theirs } = await meAndOther();
    const ids: string[] = [];
    // Mine and another principal's private claims, interleaved: m0 t t m1 t t m2 m3.
    for (const [key, src, vis] of [[me.key, mine, "team"], [other.key, theirs, "private"], [other.key, theirs, "private"], [me.key, mine, "team"],
      [other.key, theirs, "private"], [other.key, theirs, "private"], [me.key, mine, "team"], [me.key, mine, "team"]] as const)
      ids.push(...await consolidateOk(key, "s", [{ kind: "fact", statement: `claim ${ids.length}`, sources: supports(src), visibility: vis }]));
    const out = await inOrg(org.org_id, (store) => {
      const caller = loadCaller(store.db, hashKey(me.key))!;
      const seqs = store.db.all<{ claim_id: string; seq: number }>("SELECT claim_id, seq FROM claim_ranking ORDER BY seq");
      const seq = new Map(seqs.map((r) => [r.claim_id, r.seq]));
      const name = (s: number) => ids[seqs.findIndex((r) => r.seq === s)];
      const names = (m: Map<number, { before: number[]; after: number[] }>) =>
        Object.fromEntries([...m].map(([s, n]) => [name(s), { before: n.before.map(name), after: n.after.map(name) }]));
      const asked = [ids[0], ids[3], ids[6]].map((id) => seq.get(id)!);
      const within = readableWithin(store.db, caller, [[asked[0], asked[2]], [asked[1], asked[2]], [asked[2], seq.get(ids[7])! + 1]], 2);
      return { both: names(readableNeighbours(store.db, caller, asked, 2)),
        within: Object.fromEntries([...within].map(([s, list]) => [name(s), list.map(name)])) };
    });
    const [m0, , , m1, , , m2, m3] = ids;
    expect(out.both).toEqual({ [m0]: { before: [], after: [m1, m2] }, [m1]: { before: [m0], after: [m2, m3] }, [m2]: { before: [m1, m0], after: [m3] } });
    // Strictly between: m0..m2 holds m1 only; m1..m2 nothing readable; m2..(past m3) m3.
    expect(out.within).toEqual({ [m0]: [m1], [m1]: [], [m2]: [m3] });
  });
});
