// Every read of the memory record tables applies a read rule of src/access/retrieval.ts (retention,
// vectors and workspace roles rely on it), and the writers report what they touched. The first block
// scans the source text, so a new query anywhere that applies no rule fails here.
import { describe, expect, it } from "vitest";
import { hashKey } from "../src/auth/credentials";
import { loadCaller } from "../src/domains/identity/store";
import { type HeldGrant, type Permission } from "../src/access/caller";
import { VISIBILITIES } from "../src/access/visibility";
import { ROLES } from "../src/auth/roles";
import { canRetrieve } from "../src/access/retrieval";
import { readableNeighbours, readableWithin } from "../src/domains/memory/compile";
import {
  changeClaim,
  type ClaimRow,
  getClaim,
  insertClaim,
  insertProject,
  rankingDrift,
  tombstone,
} from "../src/domains/memory/records";
import { CLAIM_STATUSES } from "../src/domains/memory/schema";
import { Db } from "../src/sql/db";
import { queueTouched } from "../src/org/outbox";
import type { Caller } from "../src/org/request";
import {
  appendOk,
  consolidateOk,
  countingDb,
  inOrg,
  mintKey,
  newOrg,
  obs,
  orgWithTwoPrincipals,
  prng,
  supports,
} from "./helpers";

declare global {
  /** Vite's compile-time glob import (vitest transforms it; typed here rather than pulling in vite/client). */
  interface ImportMeta {
    glob(pattern: string, opts: { query: string; import: string; eager: true }): Record<string, unknown>;
  }
}

const SOURCES = import.meta.glob("../src/**/*.ts", { query: "?raw", import: "default", eager: true }) as Record<
  string,
  string
>;

const RECORD_TABLES = ["projects", "observations", "claims", "claim_sources", "claims_fts", "claim_ranking"];
/** The rule module itself, and the append-only schema history: the only files not scanned. */
const UNSCANNED = ["../src/access/retrieval.ts", "../src/org/migrations.ts"];
/** The rules, SQL and JS forms: a statement builder that calls one (or a function of its file that does) applies the rule. */
const RULES = [
  "retrievable",
  "retrievableWays",
  "recordRetrievable",
  "projectVisibleWhere",
  "sharedWhere",
  "heldOrDelegated",
  "governedJoin",
  "canRetrieve",
  "projectNameable",
  "notShared",
  "isShared",
  "governedVisible",
];

/**
 * Declarations that read the record tables without a rule, each for its reason. Writers and by-id
 * lookups (their readers authorize the row in JS); background and administrative readers that act on
 * records whoever may read them and hand out no content.
 */
const ALLOWED: Record<string, string> = {
  "memory/records.ts getProject": "by-id lookup; a reader checks projectNameable or names only what it may",
  "memory/records.ts projectByReference": "by-reference lookup; resolve checks projectNameable before answering",
  "memory/records.ts projectWorkspace": "a project's workspace, for a write target or an event",
  "memory/records.ts getObservation": "by-id lookup; readers authorize the row with canRetrieve",
  "memory/records.ts observationsByIds": "by-id lookup; consolidation authorizes each source with canRetrieve",
  "memory/records.ts getClaim": "by-id lookup; readers authorize the row with canRetrieve",
  "memory/records.ts insertObservation": "writer (copies its project's workspace)",
  "memory/records.ts rankingDrift": "writers' consistency check of claim_ranking against claims",
  "memory/compile.ts storedTermsCols":
    "a column of claim_ranking rows the candidate statements select through retrievable",
  "governance/eligibility.ts claimFacts":
    "release eligibility judges the claim itself (notShared in ineligibility), never returns it",
  "governance/claim-reads.ts claimSourceHashes":
    "a release snapshot pins every source's hash; its views drop what the caller cannot read",
  "portability/import.ts allSourcesOf":
    "import compares an existing claim with an imported line, answering only same or not",
  "portability/import.ts existingRecordIds":
    "which ids name a record here, to give back the registry claims of the others",
  "indexing/enrichment.ts observationsAfter":
    "background enrichment drain; proposals are shown only through retrievable",
  "indexing/enrichment.ts observationsAfterCount": "the drain's remaining count (owner/admin routes)",
  "indexing/enrichment.ts purgedAmong": "drops proposals of observations purged while the model ran",
  "retention/store.ts sourceLinks": "legal-hold coverage follows every source link",
  "retention/store.ts retentionCandidates": "retention apply's sweep of the whole organization (owner/admin)",
  "retention/store.ts excludedAmong": "a new hold restores every covered record retention excluded",
};

// SQL keywords are written upper case in this codebase; prose ("turn observations into claims") is not.
// A table named by interpolation (`FROM ${t.table}`) may be one of them: it counts as a read too.
const READS = new RegExp(`\\b(?:FROM|JOIN)\\s+(?:(?:${RECORD_TABLES.join("|")})\\b|\\$\\{)`);
const DECLARATION = /^(?:export\s+)?(?:async\s+)?(?:function\*?|const|let|class|interface|type)\s+([A-Za-z_$][\w$]*)/;

/** A file's top-level declarations, name and text (a declaration runs to the next one). */
function declarations(text: string): { name: string; text: string }[] {
  const out: { name: string; text: string }[] = [];
  for (const line of text.split("\n")) {
    const m = DECLARATION.exec(line);
    if (m) out.push({ name: m[1], text: "" });
    if (out.length) out[out.length - 1].text += line + "\n";
  }
  return out;
}

const calls = (text: string, names: Iterable<string>) =>
  [...names].some((n) => new RegExp(`\\b${n.replace("$", "\\$")}\\(`).test(text));

/**
 * "file name" of every declaration that reads a record table and applies no rule: it calls none of
 * RULES, nor a declaration of its own file that (directly or through another) does.
 */
function unruledReads(sources: Record<string, string>, rules = RULES): string[] {
  const found: string[] = [];
  for (const [file, text] of Object.entries(sources)) {
    if (UNSCANNED.includes(file)) continue;
    const decls = declarations(text);
    const ruled = new Set<string>(rules);
    for (let grew = true; grew;) {
      grew = false;
      for (const d of decls)
        if (!ruled.has(d.name) && calls(d.text, ruled)) {
          ruled.add(d.name);
          grew = true;
        }
    }
    for (const d of decls)
      if (READS.test(d.text) && !ruled.has(d.name))
        found.push(`${file.replace("../src/domains/", "").replace("../src/", "")} ${d.name}`);
  }
  return found;
}

describe("every read of the record tables applies a read rule", () => {
  it("scans the whole source tree, and the rules it looks for are the rule module's", async () => {
    const files = Object.keys(SOURCES);
    expect(files).toContain("../src/domains/memory/records.ts");
    expect(files).toContain("../src/domains/atlas/store.ts");
    expect(files.length).toBeGreaterThan(40);
    const rules = await import("../src/access/retrieval");
    for (const name of RULES) expect(typeof (rules as Record<string, unknown>)[name], name).toBe("function");
    // The rule module's own statements are reads the scan sees (so the pattern is not blind).
    expect(unruledReads({ "../src/x.ts": SOURCES["../src/access/retrieval.ts"] }, [])).toEqual(
      expect.arrayContaining(["x.ts projectVisibleWhere", "x.ts projectNameable", "x.ts governedJoin"]),
    );
  });

  it("finds none outside the rule module but the allowed ones, and every allowed one still exists", () => {
    const unruled = unruledReads(SOURCES);
    expect(unruled.filter((d) => !(d in ALLOWED))).toEqual([]);
    expect(Object.keys(ALLOWED).filter((d) => !unruled.includes(d))).toEqual([]);
  });

  it("catches a read that applies no rule, across lines, but not prose, a writer's UPDATE, or a read through a ruled helper", () => {
    expect(
      unruledReads({
        "../src/domains/other/reads.ts": [
          "export function leaky(db: Db) {",
          "  return db.all(`SELECT o.* FROM",
          "    observations o JOIN claim_sources s ON 1`); // turn observations into claims",
          "}",
          'const where = (caller: Caller) => retrievable(caller, "c");',
          "export function guarded(db: Db, caller: Caller) {",
          "  const [ok, ...args] = where(caller);",
          "  return db.all(`SELECT c.* FROM claims c WHERE ${ok}`, ...args);",
          "}",
          'export const filtered = (db: Db, caller: Caller) => db.all("SELECT * FROM claims").filter((c) => canRetrieve(caller, c));',
          "export const write = (db: Db) => db.run(\"UPDATE claims SET status = 'revoked'\");",
        ].join("\n"),
      }),
    ).toEqual(["other/reads.ts leaky"]);
  });
});

describe("memory record writers", () => {
  it("report what they touched; a claim change bumps its version; the outbox carries created ids per topic", async () => {
    const org = await newOrg();
    const o = await appendOk(org.api_key, obs("s", "x"));
    const [claim] = await consolidateOk(org.api_key, "s", [
      { kind: "fact", statement: "writers report", sources: supports(o) },
    ]);
    const out = await inOrg(org.org_id, (store) => {
      const changed = changeClaim(store.db, claim, { status: "revoked" });
      const purged = tombstone(store.db, o);
      const before = store.db.first<{ n: number }>("SELECT count(*) AS n FROM outbox")!.n;
      const queued = queueTouched(
        store.db,
        { created: ["obs_new", "obs_new"], changed: [claim] },
        "2026-01-01T00:00:00.000Z",
        new Set(),
      );
      const rows = store.db.all<{ topic: string; payload: string }>(
        "SELECT topic, payload FROM outbox ORDER BY seq DESC LIMIT ?",
        queued.rows,
      );
      return {
        changed,
        purged,
        version: getClaim(store.db, claim)!.version,
        added: store.db.first<{ n: number }>("SELECT count(*) AS n FROM outbox")!.n - before,
        queued,
        rows,
      };
    });
    expect(out.changed).toEqual({ created: [], changed: [claim] });
    expect(out.purged).toEqual({ created: [], changed: [o] });
    expect(out.version).toBe(2);
    // record_owner carries created ids; index carries created and changed observations and claims.
    expect(out).toMatchObject({ queued: { rows: 3, indexRows: 2, ownerIds: ["obs_new"] }, added: 3 });
    expect(out.rows.map((r) => `${r.topic} ${r.payload}`).sort()).toEqual(
      [`index ${claim}`, "index obs_new", "record_owner obs_new"].sort(),
    );
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
      store.db.run(
        "INSERT INTO workspaces (workspace_id, name, created_by, created_at) VALUES ('wks_ranked', 'ranked', 'prn_x', 't')",
      );
      insertProject(store.db, {
        project_id: "prj_ranked",
        reference: "ranked",
        created_by: "prn_x",
        created_at: "2026-01-01T00:00:00.000Z",
        workspace_id: "wks_ranked",
      });
      insertClaim(
        store.db,
        {
          claim_id: inWs,
          subject_id: "s",
          project_id: "prj_ranked",
          kind: "fact",
          statement: "workspace claim",
          status: "active",
          visibility: "team",
          trust: "medium",
          version: 1,
          valid_from: "2026-01-01T00:00:00.000Z",
          valid_to: null,
          superseded_by: null,
          disputes: "[]",
          author_id: "prn_x",
          created_at: "2026-01-01T00:00:00.000Z",
          updated_at: "2026-01-01T00:00:00.000Z",
        },
        [],
      );
      const after: Record<string, unknown[]> = {
        inserted: rankingDrift(store.db),
        workspace: store.db.all(
          "SELECT workspace_id, bytes FROM claim_ranking WHERE claim_id IN (?, ?) ORDER BY seq",
          multi,
          inWs,
        ),
      };
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
      store.db.run(
        "UPDATE claims SET retention_excluded_at = 't' WHERE claim_id IN (SELECT value FROM json_each(?))",
        JSON.stringify([team, priv]),
      );
      store.db.run("UPDATE claims SET visibility = 'private', subject_id = 'moved' WHERE claim_id = ?", multi);
      store.db.run("DELETE FROM claims WHERE claim_id = ?", inWs);
      after.raw = rankingDrift(store.db);
      // A copy that parted from claims would show: the check is not blind.
      store.db.run("UPDATE claim_ranking SET status = 'active' WHERE claim_id = ?", team);
      after.forgotten = rankingDrift(store.db);
      return after;
    });
    expect(drift.inserted).toEqual([]);
    expect(drift.workspace).toEqual([
      { workspace_id: null, bytes: new TextEncoder().encode("Café naïve résumés in Ελλάδα 🎉").length },
      { workspace_id: "wks_ranked", bytes: 15 },
    ]);
    expect(drift.changed).toEqual([]);
    expect(drift.restored).toEqual([]);
    expect(drift.raw).toEqual([]);
    expect(drift.forgotten).toEqual([
      expect.objectContaining({ side: "claims", claim_id: team, status: "revoked" }),
      expect.objectContaining({ side: "claim_ranking", claim_id: team, status: "active" }),
    ]);
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
    const [a] = await consolidateOk(me.key, "s", [
      { kind: "fact", statement: "ferry noon a", sources: supports(mine) },
    ]);
    await consolidateOk(other.key, "s", [
      { kind: "fact", statement: "hidden between", sources: supports(theirs), visibility: "private" },
    ]);
    const [b] = await consolidateOk(me.key, "s", [
      { kind: "fact", statement: "ferry noon b", sources: supports(mine) },
    ]);
    const read = await inOrg(org.org_id, (store) => {
      const at = new Date().toISOString();
      const otherId = loadCaller(store.db, hashKey(other.key))!.principalId;
      for (let i = 0; i < 2000; i++)
        insertClaim(
          store.db,
          {
            claim_id: `claim_${i.toString(16).padStart(32, "0")}`,
            subject_id: "s",
            project_id: null,
            kind: "fact",
            statement: `later ${i}`,
            status: "active",
            visibility: "private",
            trust: "medium",
            version: 1,
            valid_from: at,
            valid_to: null,
            superseded_by: null,
            disputes: "[]",
            author_id: otherId,
            created_at: at,
            updated_at: at,
          },
          supports(theirs),
        );
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
    for (const [key, src, vis] of [
      [me.key, mine, "team"],
      [other.key, theirs, "private"],
      [other.key, theirs, "private"],
      [me.key, mine, "team"],
      [other.key, theirs, "private"],
      [other.key, theirs, "private"],
      [me.key, mine, "team"],
      [me.key, mine, "team"],
    ] as const)
      ids.push(
        ...(await consolidateOk(key, "s", [
          { kind: "fact", statement: `claim ${ids.length}`, sources: supports(src), visibility: vis },
        ])),
      );
    const out = await inOrg(org.org_id, (store) => {
      const caller = loadCaller(store.db, hashKey(me.key))!;
      const seqs = store.db.all<{ claim_id: string; seq: number }>(
        "SELECT claim_id, seq FROM claim_ranking ORDER BY seq",
      );
      const seq = new Map(seqs.map((r) => [r.claim_id, r.seq]));
      const name = (s: number) => ids[seqs.findIndex((r) => r.seq === s)];
      const names = (m: Map<number, { before: number[]; after: number[] }>) =>
        Object.fromEntries([...m].map(([s, n]) => [name(s), { before: n.before.map(name), after: n.after.map(name) }]));
      const asked = [ids[0], ids[3], ids[6]].map((id) => seq.get(id)!);
      const within = readableWithin(
        store.db,
        caller,
        [
          [asked[0], asked[2]],
          [asked[1], asked[2]],
          [asked[2], seq.get(ids[7])! + 1],
        ],
        2,
      );
      return {
        both: names(readableNeighbours(store.db, caller, asked, 2)),
        within: Object.fromEntries([...within].map(([s, list]) => [name(s), list.map(name)])),
      };
    });
    const [m0, , , m1, , , m2, m3] = ids;
    expect(out.both).toEqual({
      [m0]: { before: [], after: [m1, m2] },
      [m1]: { before: [m0], after: [m2, m3] },
      [m2]: { before: [m1, m0], after: [m3] },
    });
    // Strictly between: m0..m2 holds m1 only; m1..m2 nothing readable; m2..(past m3) m3.
    expect(out.within).toEqual({ [m0]: [m1], [m1]: [], [m2]: [m3] });
  });
});

// ---- the neighbour walks: one per way of reading -----------------------------------------------------

const AT = "2026-01-01T00:00:00.000Z";

/** A claim straight through insertClaim (its workspace comes from its project), as consolidation writes it. */
function putClaim(
  db: Db,
  c: {
    id: string;
    author: string;
    project: string | null;
    subject: string;
    visibility: string;
    status?: string;
    validTo?: string | null;
  },
) {
  insertClaim(
    db,
    {
      claim_id: c.id,
      subject_id: c.subject,
      project_id: c.project,
      kind: "fact",
      statement: `claim ${c.id}`,
      status: c.status ?? "active",
      visibility: c.visibility,
      trust: "medium",
      version: 1,
      valid_from: AT,
      valid_to: c.validTo ?? null,
      superseded_by: null,
      disputes: "[]",
      author_id: c.author,
      created_at: AT,
      updated_at: AT,
    },
    [],
  );
}

/** Workspaces and projects: prj_w<i> in workspace wks_<i>, prj_n<i> in none. */
function workspacesAndProjects(db: Db, workspaces: number, loose: number) {
  const projects: (string | null)[] = [null];
  for (let i = 0; i < workspaces; i++) {
    db.run(
      "INSERT INTO workspaces (workspace_id, name, created_by, created_at) VALUES (?, ?, 'prn_0', ?)",
      `wks_${i}`,
      `w${i}`,
      AT,
    );
    insertProject(db, {
      project_id: `prj_w${i}`,
      reference: `w${i}`,
      created_by: "prn_0",
      created_at: AT,
      workspace_id: `wks_${i}`,
    });
    projects.push(`prj_w${i}`);
  }
  for (let i = 0; i < loose; i++) {
    insertProject(db, { project_id: `prj_n${i}`, reference: `n${i}`, created_by: "prn_0", created_at: AT });
    projects.push(`prj_n${i}`);
  }
  return projects;
}

const callerOf = (
  principalId: string,
  role: Caller["role"],
  workspaces: Caller["workspaces"] = {},
  grants: HeldGrant[] = [],
): Caller => ({ principalId, keyId: "key_x", scopes: ["*"], maxTrust: "verified", role, grants, workspaces });
const grant = (type: HeldGrant["type"], id: string | null, permissions: Permission[] = ["read"]): HeldGrant => ({
  grantId: `grt_${type}_${id}`,
  type,
  id,
  permissions,
});

/** What one walk of every claim in write order, stopping at the n-th the caller may retrieve, answers. */
function referenceWalks(rows: ClaimRow[], caller: Caller, seqs: number[], spans: [number, number][], n: number) {
  const readable = rows.filter((r) => canRetrieve(caller, r)).map((r) => r.seq);
  return {
    neighbours: [
      ...new Map(
        seqs.map((s) => [
          s,
          {
            before: readable
              .filter((x) => x < s)
              .reverse()
              .slice(0, n),
            after: readable.filter((x) => x > s).slice(0, n),
          },
        ]),
      ),
    ],
    within: [...new Map(spans.map(([a, b]) => [a, readable.filter((x) => x > a && x < b).slice(0, n)]))],
  };
}

describe("neighbour walks (readableNeighbours, readableWithin)", () => {
  it("answer exactly what one walk of every claim with canRetrieve answers, for callers of every shape (seeded)", async () => {
    const org = await newOrg();
    const out = await inOrg(org.org_id, (store) => {
      const db = store.db;
      const rand = prng(2026);
      const pick = <T>(xs: readonly T[]) => xs[Math.floor(rand() * xs.length)];
      const projects = workspacesAndProjects(db, 3, 2);
      const principals = ["prn_0", "prn_1", "prn_2", "prn_3", "prn_4"];
      const subjects = ["s0", "s1", "s2", "s3", "s4"];
      for (let i = 0; i < 700; i++) {
        const id = `clm_${i.toString(16).padStart(32, "0")}`;
        putClaim(db, {
          id,
          author: pick(principals),
          project: pick(projects),
          subject: pick(subjects),
          visibility: pick(VISIBILITIES),
          status: pick(CLAIM_STATUSES),
          validTo: pick([null, "2020-01-01T00:00:00.000Z", "2099-01-01T00:00:00.000Z"]),
        });
        if (rand() < 0.1) changeClaim(db, id, { retention_excluded_at: AT });
      }
      const wsIds = ["wks_0", "wks_1", "wks_2"];
      const randomGrant = () => {
        const permissions: Permission[] = rand() < 0.8 ? ["read"] : ["write"];
        const r = rand();
        if (r < 0.08) return grant("organization", null, permissions);
        if (r < 0.55) return grant("project", pick(projects), permissions);
        return grant("subject", pick(subjects), permissions);
      };
      const callers: Caller[] = [
        // Every way of reading at least once, alone.
        callerOf("prn_0", "member"),
        callerOf("prn_new", "reader"),
        callerOf("prn_1", "owner"),
        callerOf("prn_2", "admin", { wks_1: "member" }),
        callerOf("prn_new", "member", { wks_0: "member", wks_2: "reader" }),
        callerOf("prn_new", "reader", { wks_1: "admin" }),
        callerOf("prn_3", "member", { wks_0: "owner", wks_1: "member" }),
        callerOf("prn_new", "reader", {}, [grant("organization", null)]),
        callerOf("prn_new", "reader", {}, [grant("project", "prj_w2"), grant("project", "prj_n1")]),
        callerOf("prn_new", "reader", {}, [grant("project", null)]),
        callerOf("prn_new", "reader", {}, [grant("subject", "s3")]),
        callerOf("prn_4", "member", {}, [
          grant("subject", "s1", ["write"]),
          grant("project", "prj_w0", ["write", "approve"]),
        ]),
        // More ways than one statement binds (100 parameters): the walks split across statements.
        callerOf(
          "prn_4",
          "member",
          { wks_2: "admin" },
          Array.from({ length: 40 }, (_, i) => grant(i % 2 ? "subject" : "project", `x${i}`)).concat([
            grant("subject", "s2"),
            grant("project", "prj_n0"),
          ]),
        ),
        // And random ones.
        ...Array.from({ length: 24 }, (_, i) =>
          callerOf(
            pick([...principals, "prn_new"]),
            pick(ROLES),
            Object.fromEntries(wsIds.filter(() => rand() < 0.4).map((w) => [w, pick(ROLES)])),
            Array.from({ length: Math.floor(rand() * 4) }, randomGrant).map((g, k) => ({
              ...g,
              grantId: `grt_${i}_${k}`,
            })),
          ),
        ),
      ];
      const rows = db.all<ClaimRow>("SELECT * FROM claims ORDER BY seq");
      const last = rows.at(-1)!.seq;
      const results = callers.flatMap((caller) =>
        [1, 2, 3].map((n) => {
          const seqs = [0, last + 1, ...Array.from({ length: 12 }, () => 1 + Math.floor(rand() * last))];
          const spans = Array.from({ length: 10 }, (): [number, number] => {
            const a = Math.floor(rand() * last);
            return [a, rand() < 0.2 ? last + 5 : a + 1 + Math.floor(rand() * 60)];
          });
          return {
            got: {
              neighbours: [...readableNeighbours(db, caller, seqs, n)],
              within: [...readableWithin(db, caller, spans, n)],
            },
            want: referenceWalks(rows, caller, seqs, spans, n),
          };
        }),
      );
      return {
        results,
        readable: callers.map((c) => rows.filter((r) => canRetrieve(c, r)).length),
        total: rows.length,
      };
    });
    // The callers read very different shares of the organization (a fifth of it, or all but the excluded).
    expect(Math.min(...out.readable)).toBeLessThan(out.total * 0.3);
    expect(Math.max(...out.readable)).toBeGreaterThan(out.total * 0.8);
    for (const [i, r] of out.results.entries())
      expect(r.got, `caller ${Math.floor(i / 3)}, n ${1 + (i % 3)}`).toEqual(r.want);
  }, 120_000);

  /**
   * An organization where the caller (prn_me, a member of no workspace) may retrieve three claims, its
   * own private ones, between `hidden` claims it may not: other principals' private claims, team claims
   * of a workspace it is not in, its own claims retention excluded.
   */
  async function sparseReader(hidden: number) {
    const org = await newOrg();
    return inOrg(org.org_id, (store) => {
      const db = store.db;
      workspacesAndProjects(db, 1, 0);
      const mine: number[] = [];
      for (let i = 0; i < 3 * hidden + 3; i++) {
        const id = `clm_${i.toString(16).padStart(32, "0")}`;
        const kind = i % (hidden + 1) === hidden / 2 ? "mine" : ["private", "workspace", "excluded"][i % 3];
        putClaim(db, {
          id,
          subject: "s",
          author: kind === "mine" || kind === "excluded" ? "prn_me" : "prn_other",
          project: kind === "workspace" ? "prj_w0" : null,
          visibility: kind === "workspace" ? "team" : "private",
        });
        if (kind === "excluded") changeClaim(db, id, { retention_excluded_at: AT });
        if (kind === "mine") mine.push(getClaim(db, id)!.seq);
      }
      const caller = callerOf("prn_me", "member");
      const neighbours = countingDb(db);
      const around = readableNeighbours(neighbours.db, caller, [...mine, mine[0] + 1, mine[2] + 1], 2);
      const within = countingDb(db);
      const spans = readableWithin(
        within.db,
        caller,
        [
          [mine[0], mine[2]],
          [0, mine[0] + 1],
          [mine[1] + 1, mine[2] + 7],
        ],
        2,
      );
      return {
        mine,
        around: [...around],
        spans: [...spans],
        rowsRead: { neighbours: neighbours.rowsRead(), within: within.rowsRead() },
      };
    });
  }

  it("read no more rows for a caller with three readable claims among 3,000 it cannot read than among 300", async () => {
    const few = await sparseReader(100);
    const many = await sparseReader(1000);
    for (const {
      mine: [a, b, c],
      around,
      spans,
    } of [few, many]) {
      expect(around).toEqual([
        [a, { before: [], after: [b, c] }],
        [b, { before: [a], after: [c] }],
        [c, { before: [b, a], after: [] }],
        [a + 1, { before: [a], after: [b, c] }],
        [c + 1, { before: [c, b], after: [] }],
      ]);
      expect(spans).toEqual([
        [a, [b]],
        [0, [a]],
        [b + 1, [c]],
      ]);
    }
    expect(many.rowsRead, JSON.stringify([few.rowsRead, many.rowsRead])).toEqual(few.rowsRead);
    expect(many.rowsRead.neighbours + many.rowsRead.within).toBeLessThan(60);
  }, 120_000);

  it("walk each way of reading on its own index, in write order, both directions and within spans (no scan, no sort)", async () => {
    const org = await newOrg();
    const plans = await inOrg(org.org_id, (store) => {
      workspacesAndProjects(store.db, 2, 1);
      const ran: [string, unknown[]][] = [];
      const db = new (class extends Db {
        override all<T>(query: string, ...args: unknown[]): T[] {
          ran.push([query, args]);
          return super.all<T>(query, ...args);
        }
      })(store.db.sql);
      const callers = [
        // team outside workspaces, team of a workspace, a workspace's private and team claims, its own, every grant target
        callerOf("prn_me", "member", { wks_0: "member", wks_1: "admin" }, [
          grant("project", "prj_n0"),
          grant("project", null),
          grant("subject", "s"),
        ]),
        callerOf("prn_me", "admin"),
        callerOf("prn_me", "reader", {}, [grant("organization", null)]),
      ];
      return callers.map((caller) => {
        ran.length = 0;
        readableNeighbours(db, caller, [1, 5], 2);
        readableWithin(db, caller, [[1, 9]], 2);
        return ran.map(([sql, args]) =>
          store.db.all<{ detail: string }>(`EXPLAIN QUERY PLAN ${sql}`, ...args).map((r) => r.detail),
        );
      });
    });
    const walks = plans.flat(2).filter((d) => /\bc\b/.test(d));
    for (const [caller, statements] of plans.entries()) {
      const [neighbours, within] = statements.map((details) => details.filter((d) => /\bc\b/.test(d)).join("\n"));
      // One walk per way and direction, each a range of an index that holds every column it reads.
      expect(neighbours, `caller ${caller}`).toMatch(/seq<\?\)/);
      expect(neighbours, `caller ${caller}`).toMatch(/seq>\?\)/);
      expect(within, `caller ${caller}`).toMatch(/seq>\? AND seq<\?\)/);
    }
    for (const d of walks)
      expect(d).toMatch(
        /^SEARCH c USING COVERING INDEX claim_ranking_by_\w+ \(.*retention_excluded_at=\? AND seq[<>]\?( AND seq<\?)?\)$/,
      );
    expect(new Set(walks.map((d) => d.split(" ")[5]))).toEqual(
      new Set([
        "claim_ranking_by_workspace",
        "claim_ranking_by_author",
        "claim_ranking_by_project",
        "claim_ranking_by_subject",
        "claim_ranking_by_visibility",
      ]),
    );
    expect(plans.flat(2).join("\n")).not.toMatch(/TEMP B-TREE|SCAN c\b/);
    // The first caller: eight ways (team outside, team of wks_0, team and private of wks_1, own, prj_n0, no project, s) × 2 directions.
    expect(plans[0][0].filter((d) => /\bc\b/.test(d))).toHaveLength(16);
  }, 60_000);
});
