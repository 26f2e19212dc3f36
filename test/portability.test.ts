import { env, runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { claimLine, exportHeader, observationLine, projectLine } from "../src/domains/portability/schema";
import { contentHash } from "../src/domains/memory/store";
import { durableRegistry } from "../src/registry/client";
import {
  appendOk,
  call,
  consolidateOk,
  expectError,
  inOrg,
  mintKey,
  newOrg,
  obs,
  orgStub,
  registryOwners,
  supports,
  holdBackgroundDrain,
} from "./helpers";

type Org = Awaited<ReturnType<typeof newOrg>>;

const parseLines = (text: string) =>
  text
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));

async function exportPage(key: string, qs = "limit=2000") {
  const r = await call("GET", `/v1/export?${qs}`, { key });
  expect(r.status, r.text).toBe(200);
  const [headerLine, ...lines] = r.text.split("\n").filter(Boolean);
  return { r, header: exportHeader.parse(JSON.parse(headerLine)), lines };
}

/** Every record line of the organization as `key` sees it, following next_after. */
async function exportAll(key: string, qs = "limit=2000") {
  const lines: string[] = [];
  let after: string | null = null;
  let pages = 0;
  do {
    const page = await exportPage(key, qs + (after ? `&after=${after}` : ""));
    lines.push(...page.lines);
    after = page.header.next_after;
    expect(page.header.has_more).toBe(after !== null);
    pages++;
  } while (after);
  return { lines, pages };
}

const importNdjson = (key: string, raw: string) =>
  call("POST", "/v1/import", { key, raw, headers: { "content-type": "application/x-ndjson" } });

const resolveProject = async (key: string, reference: string): Promise<string> => {
  const r = await call("POST", "/v1/projects/resolve", { key, body: { reference, create: true } });
  expect(r.status, r.text).toBe(201);
  return r.json.data.project_id;
};

const principalOf = async (key: string): Promise<string> =>
  (await call("GET", "/v1/principal", { key })).json.data.principal_id;

/** Projects, observations (one private, one tombstoned) and claims in every status, plus an expired one. */
async function populate(org: Org) {
  const key = org.api_key;
  const p1 = await resolveProject(key, "repo:alpha");
  const p2 = await resolveProject(key, "repo:beta");
  const o1 = await appendOk(key, obs("alice", "alice likes tea", { project_id: p1, trust: "high" }));
  const o2 = await appendOk(key, obs("alice", "alice dislikes coffee", { source: { type: "chat" }, kind: "message" }));
  const o3 = await appendOk(key, obs("alice", "alice private note", { visibility: "private", trust: "verified" }));
  const o4 = await appendOk(key, obs("alice", "forget this zanzibar", { project_id: p2, trust: "low" }));
  const [liked, coffee, privateClaim, busy] = await consolidateOk(key, "alice", [
    { kind: "preference", statement: "Alice likes tea", sources: supports(o1) },
    {
      kind: "fact",
      statement: "Alice drinks coffee",
      sources: [
        { observation_id: o2, relation: "supports" },
        { observation_id: o4, relation: "qualifies" },
      ],
    },
    { kind: "decision", statement: "Alice uses vim", sources: supports(o3) },
    { kind: "summary", statement: "Alice is busy", sources: supports(o1) },
  ]);
  const [avoids] = await consolidateOk(key, "alice", [
    { kind: "fact", statement: "Alice avoids coffee", sources: supports(o2) },
  ]);
  expect((await call("POST", `/v1/claims/${coffee}/supersede`, { key, body: { superseded_by: avoids } })).status).toBe(
    200,
  );
  expect((await call("POST", `/v1/claims/${privateClaim}/revoke`, { key })).status).toBe(200);
  expect((await call("POST", `/v1/claims/${busy}/expire`, { key })).status).toBe(200);
  // Disputes `liked` (active -> disputed) and is itself born disputed.
  const [dislikes] = await consolidateOk(key, "alice", [
    {
      kind: "fact",
      statement: "Alice dislikes tea",
      sources: [
        { observation_id: o2, relation: "contradicts" },
        { claim_id: liked, relation: "contradicts" },
      ],
    },
  ]);
  expect((await call("DELETE", `/v1/observations/${o4}`, { key })).status).toBe(200);
  return {
    projects: [p1, p2],
    observations: [o1, o2, o3, o4],
    claims: { liked, coffee, privateClaim, busy, avoids, dislikes },
  };
}

/** Forget the exported ids of org in the ownership registry, as if the import target were another deployment. */
async function forgetOwnership(orgId: string, exportText: string) {
  await runDurableObjectAlarm(orgStub(orgId) as unknown as DurableObjectStub); // drain the outbox first
  await durableRegistry(env.ID_REGISTRY).release(orgId, recordIdsOf(exportText));
}

const recordIdsOf = (exportText: string): string[] =>
  parseLines(exportText)
    .slice(1)
    .map(
      (l: { project_id?: string; observation_id?: string; claim_id?: string; type: string }) =>
        (l.type === "project" ? l.project_id : l.type === "observation" ? l.observation_id : l.claim_id)!,
    );

describe("export", () => {
  it("streams a header and one readable record per line in import order; tombstones without content", async () => {
    const org = await newOrg();
    const ids = await populate(org);
    const other = await mintKey(org.api_key, { scopes: ["observations:write"] });
    const foreignPrivate = await appendOk(other.key, obs("bob", "bob's secret", { visibility: "private" }));
    const { r, header, lines } = await exportPage(org.api_key);
    expect(r.headers.get("content-type")).toContain("application/x-ndjson");
    expect(r.headers.get("cache-control")).toBe("no-store");
    expect(header).toMatchObject({
      type: "svc.export.header",
      format_version: 1,
      import_order: ["projects", "observations", "claims"],
      filters: { type: null, limit: 2000, after: null },
      records: 12,
      has_more: false,
      next_after: null,
    });
    const recs = lines.map((l) => JSON.parse(l));
    expect(recs.map((x) => x.type)).toEqual([
      ...Array(2).fill("project"),
      ...Array(4).fill("observation"),
      ...Array(6).fill("claim"),
    ]);
    // Every line matches its published schema.
    for (const x of recs)
      (({ project: projectLine, observation: observationLine, claim: claimLine }) as const)[x.type as "claim"].parse(x);
    expect(r.text).not.toContain(foreignPrivate);
    expect(r.text).not.toContain("zanzibar");
    const tomb = recs.find((x) => x.observation_id === ids.observations[3]);
    expect(tomb).toMatchObject({
      content: null,
      purged: true,
      content_hash: contentHash("forget this zanzibar"),
      source: { type: "test", ref: "r1" },
    });
    expect(tomb.purged_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(Date.parse(tomb.purged_at)).toBeGreaterThanOrEqual(Date.parse(tomb.created_at));
    const statuses = recs
      .filter((x) => x.type === "claim")
      .map((x) => x.status)
      .sort();
    expect(statuses).toEqual(["active", "active", "disputed", "disputed", "revoked", "superseded"]);
    expect(recs.find((x) => x.claim_id === ids.claims.busy).valid_to).toEqual(expect.any(String));
    expect(recs.find((x) => x.claim_id === ids.claims.dislikes).disputes).toEqual([ids.claims.liked]);
    const audit = await inOrg(org.org_id, (o) =>
      o.db.first<{ detail: string }>(
        "SELECT detail FROM audit_log WHERE action = 'export.read' ORDER BY seq DESC LIMIT 1",
      ),
    );
    expect(JSON.parse(audit!.detail)).toEqual({ type: null, limit: 2000, records: 12, has_more: false });
  });

  it("pages across types with next_after and filters by type", async () => {
    const org = await newOrg();
    await populate(org);
    const all = (await exportPage(org.api_key)).lines;
    const paged = await exportAll(org.api_key, "limit=5");
    expect(paged.pages).toBe(3);
    expect(paged.lines).toEqual(all);
    const first = await exportPage(org.api_key, "limit=2");
    expect(first.header).toMatchObject({ records: 2, has_more: true });
    // The cursor sits exactly at the end of the projects: the next page starts with observations.
    const second = await exportPage(org.api_key, `limit=1&after=${first.header.next_after}`);
    expect(JSON.parse(second.lines[0]).type).toBe("observation");

    const claims = await exportAll(org.api_key, "type=claims&limit=4");
    expect(claims.lines).toEqual(all.filter((l) => JSON.parse(l).type === "claim"));
    const claimPage = await exportPage(org.api_key, "type=claims&limit=1");
    expect(claimPage.header.filters.type).toBe("claims");
    // A claims cursor is not valid for another type filter.
    expectError(
      await call("GET", `/v1/export?type=projects&after=${claimPage.header.next_after}`, { key: org.api_key }),
      400,
      "VALIDATION_ERROR",
    );
    expectError(await call("GET", "/v1/export?after=bogus", { key: org.api_key }), 400, "VALIDATION_ERROR");
  });

  it("validates type and limit (1 to 2000, default 500) and needs export:read", async () => {
    const org = await newOrg();
    expect((await exportPage(org.api_key, "")).header.filters.limit).toBe(500);
    for (const qs of ["limit=0", "limit=2001", "limit=abc", "type=keys"])
      expectError(await call("GET", `/v1/export?${qs}`, { key: org.api_key }), 400, "VALIDATION_ERROR");
    const k = await mintKey(org.api_key, { scopes: ["observations:write"] });
    expectError(await call("GET", "/v1/export", { key: k.key }), 403, "FORBIDDEN");
  });

  it("streams a page of large records in full, and pages stop exactly at limit", async () => {
    const org = await newOrg();
    const big = "x".repeat(199_990);
    for (let i = 0; i < 25; i++) await appendOk(org.api_key, obs("s", `${i} ${big}`));
    // About 5 MB in one response: produced 50 rows per read, never held whole in the Durable Object.
    const whole = await exportPage(org.api_key, "type=observations&limit=2000");
    expect(whole.header).toMatchObject({ records: 25, has_more: false, next_after: null });
    expect(whole.lines).toHaveLength(25);
    expect(whole.lines.join("\n").length).toBeGreaterThan(4 * 1024 * 1024);
    const first = await exportPage(org.api_key, "type=observations&limit=10");
    expect(first.header).toMatchObject({ records: 10, has_more: true });
    expect(first.lines).toHaveLength(10);
    const all = await exportAll(org.api_key, "type=observations&limit=10");
    expect(all.lines).toHaveLength(25);
    expect(new Set(all.lines.map((l) => JSON.parse(l).observation_id)).size).toBe(25);
  });
});

describe("import", () => {
  it("round-trips an organization into a fresh one: identical record lines, no events, one audit entry", async () => {
    const a = await newOrg();
    const ids = await populate(a);
    const exported = await call("GET", "/v1/export?limit=2000", { key: a.api_key });
    const aLines = exported.text.split("\n").filter(Boolean).slice(1);
    await forgetOwnership(a.org_id, exported.text);

    const b = await newOrg();
    const eventsBefore = await inOrg(b.org_id, (o) => o.db.first<{ n: number }>("SELECT count(*) AS n FROM events")!.n);
    const r = await importNdjson(b.api_key, exported.text);
    expect(r.status, r.text).toBe(201);
    expect(r.json.data).toEqual({
      imported: { projects: 2, observations: 4, claims: 6 },
      skipped: { projects: 0, observations: 0, claims: 0 },
      principals_created: 1,
      workspaces_created: 0,
    });
    expect(await inOrg(b.org_id, (o) => o.db.first<{ n: number }>("SELECT count(*) AS n FROM events")!.n)).toBe(
      eventsBefore,
    );
    const audit = await inOrg(b.org_id, (o) =>
      o.db.all<{ action: string; detail: string }>(
        "SELECT action, detail FROM audit_log WHERE action = 'import.applied'",
      ),
    );
    expect(audit).toHaveLength(1);
    expect(JSON.parse(audit[0].detail)).toEqual(r.json.data);

    // The original author exists in B as a key-less principal; a key minted for it reads exactly what A's owner read.
    const aOwner = await principalOf(a.api_key);
    const restored = await mintKey(b.api_key, { principal_id: aOwner, scopes: ["export:read"] });
    expect(restored.principal_id).toBe(aOwner);
    expect((await exportAll(restored.key)).lines).toEqual(aLines);

    // B's own owner sees only what is readable to it: not A's owner's private records.
    const bView = (await exportAll(b.api_key)).lines.join("\n");
    expect(bView).not.toContain(ids.observations[2]);
    expect(bView).not.toContain(ids.claims.privateClaim);
    expect(bView).toContain(ids.claims.liked);

    // Claims are searchable (their FTS rows were written), with their statuses as exported.
    const search = await call("GET", "/v1/memories?q=tea", { key: b.api_key });
    expect(search.json.data.items.map((c: { claim_id: string }) => c.claim_id).sort()).toEqual(
      [ids.claims.liked, ids.claims.dislikes].sort(),
    );

    // B's owner cannot read A's owner's private records, so re-importing them answers as foreign ids
    // (never compared or skipped); the principal that reads them all re-imports idempotently, before
    // and after B's ids reach the ownership index.
    const hidden = await importNdjson(b.api_key, exported.text);
    expectError(hidden, 409, "CONFLICT");
    expect(hidden.json.error.message).toBe(
      `2 imported id(s) already belong to another organization: ${ids.observations[2]}, ${ids.claims.privateClaim}.`,
    );
    const author = await mintKey(b.api_key, { principal_id: aOwner, scopes: ["*"], max_trust: "verified" });
    const again = await importNdjson(author.key, exported.text);
    expect(again.status, again.text).toBe(200);
    expect(again.json.data).toMatchObject({
      imported: { projects: 0, observations: 0, claims: 0 },
      skipped: { projects: 2, observations: 4, claims: 6 },
    });
    await runDurableObjectAlarm(orgStub(b.org_id) as unknown as DurableObjectStub);
    const owners = await registryOwners(recordIdsOf(exported.text));
    expect(Object.values(owners)).toEqual(Array(12).fill(b.org_id));
    expect((await importNdjson(author.key, exported.text)).status).toBe(200);
  });

  it("refuses ids that belong to another organization (409) once its outbox reached the index, writing nothing", async () => {
    holdBackgroundDrain(); // the alarm below is the test's own, never one that already ran
    const a = await newOrg();
    const p = await resolveProject(a.api_key, "repo:x");
    const o = await appendOk(a.api_key, obs("s", "evidence", { project_id: p }));
    await consolidateOk(a.api_key, "s", [{ kind: "fact", statement: "a fact", sources: supports(o) }]);
    const exported = (await call("GET", "/v1/export", { key: a.api_key })).text;
    expect(await runDurableObjectAlarm(orgStub(a.org_id) as unknown as DurableObjectStub)).toBe(true);

    const b = await newOrg();
    const r = await importNdjson(b.api_key, exported);
    expectError(r, 409, "CONFLICT");
    expect(r.json.error.message).toContain(p);
    expect((await exportPage(b.api_key)).header.records).toBe(0);
    // The owning organization itself may re-import its own identical records.
    const own = await importNdjson(a.api_key, exported);
    expect(own.status, own.text).toBe(200);
    expect(own.json.data.skipped).toEqual({ projects: 1, observations: 1, claims: 1 });
  });

  it("409s an existing id with different fields, atomically", async () => {
    const org = await newOrg();
    const o = await appendOk(org.api_key, obs("s", "evidence"));
    const [c] = await consolidateOk(org.api_key, "s", [{ kind: "fact", statement: "a fact", sources: supports(o) }]);
    const lines = parseLines((await call("GET", "/v1/export", { key: org.api_key })).text).slice(1);
    const claim = lines.find((x) => x.claim_id === c);
    const newProject = {
      type: "project",
      project_id: "prj_" + "a".repeat(32),
      reference: "new",
      created_by: claim.author_id,
      created_at: claim.created_at,
    };
    const r = await importNdjson(
      org.api_key,
      [newProject, { ...claim, statement: "another fact" }].map((x) => JSON.stringify(x)).join("\n"),
    );
    expectError(r, 409, "CONFLICT");
    expect(r.json.error.message).toContain("Line 2");
    expect(r.json.error.message).not.toContain("another fact");
    expect(
      await inOrg(org.org_id, (x) => x.db.first("SELECT 1 FROM projects WHERE project_id = ?", newProject.project_id)),
    ).toBeNull();
    // A new project id whose reference another project already uses.
    await resolveProject(org.api_key, "taken");
    expectError(
      await importNdjson(org.api_key, JSON.stringify({ ...newProject, reference: "taken" })),
      409,
      "CONFLICT",
    );
  });

  it("answers UNRESOLVED_REFERENCE naming the type and up to three ids", async () => {
    const org = await newOrg();
    const who = await principalOf(org.api_key);
    const at = new Date().toISOString();
    const missing = ["1", "2", "3", "4"].map((d) => "obs_" + d.repeat(32));
    const claim = {
      type: "claim",
      claim_id: "claim_" + "c".repeat(32),
      subject_id: "s",
      project_id: null,
      kind: "fact",
      statement: "x",
      status: "active",
      visibility: "team",
      trust: "medium",
      version: 1,
      valid_from: at,
      valid_to: null,
      superseded_by: null,
      disputes: [],
      sources: missing.map((observation_id) => ({ observation_id, relation: "supports" })),
      created_at: at,
      updated_at: at,
      author_id: who,
    };
    const r = await importNdjson(org.api_key, JSON.stringify(claim));
    expectError(r, 400, "UNRESOLVED_REFERENCE");
    expect(r.json.error.message).toContain("observation");
    for (const id of missing.slice(0, 3)) expect(r.json.error.message).toContain(id);
    expect(r.json.error.message).not.toContain(missing[3]);

    const observation = {
      type: "observation",
      observation_id: "obs_" + "e".repeat(32),
      subject_id: "s",
      project_id: "prj_" + "f".repeat(32),
      kind: "note",
      content: "x",
      content_hash: contentHash("x"),
      source: { type: "test" },
      trust: "medium",
      visibility: "team",
      author_id: who,
      created_at: at,
      purged: false,
      purged_at: null,
    };
    const p = await importNdjson(org.api_key, JSON.stringify(observation));
    expectError(p, 400, "UNRESOLVED_REFERENCE");
    expect(p.json.error.message).toContain("project");
    // Within one request the order of lines does not matter: references resolve against the whole batch.
    const project = {
      type: "project",
      project_id: observation.project_id,
      reference: "r",
      created_by: who,
      created_at: at,
    };
    const ok = await importNdjson(org.api_key, [observation, project].map((x) => JSON.stringify(x)).join("\n"));
    expect(ok.status, ok.text).toBe(201);
    expect(ok.json.data.principals_created).toBe(0);
    // Another principal's private observation is as unresolved as a missing one.
    const writer = await mintKey(org.api_key, { scopes: ["observations:write"] });
    const hidden = await appendOk(writer.key, obs("s", "hidden", { visibility: "private" }));
    const hiddenRef = await importNdjson(
      org.api_key,
      JSON.stringify({ ...claim, sources: [{ observation_id: hidden, relation: "supports" }] }),
    );
    expectError(hiddenRef, 400, "UNRESOLVED_REFERENCE");
  });

  it("imports a superseded claim whose successor the exporter could not read (superseded_by null)", async () => {
    // The export never names a hidden claim, so such a line must still import (test/access.test.ts exports one).
    const org = await newOrg();
    const who = await principalOf(org.api_key);
    const at = new Date().toISOString();
    const hex = () => crypto.randomUUID().replace(/-/g, "");
    const observation = {
      type: "observation",
      observation_id: "obs_" + hex(),
      subject_id: "s",
      project_id: null,
      kind: "note",
      content: "evidence",
      content_hash: contentHash("evidence"),
      source: { type: "test" },
      trust: "medium",
      visibility: "team",
      author_id: who,
      created_at: at,
      purged: false,
      purged_at: null,
    };
    const claim = {
      type: "claim",
      claim_id: "claim_" + hex(),
      subject_id: "s",
      project_id: null,
      kind: "fact",
      statement: "x",
      status: "superseded",
      visibility: "team",
      trust: "medium",
      version: 2,
      valid_from: at,
      valid_to: null,
      superseded_by: null,
      disputes: [],
      sources: [{ observation_id: observation.observation_id, relation: "supports" }],
      created_at: at,
      updated_at: at,
      author_id: who,
    };
    const r = await importNdjson(org.api_key, [observation, claim].map((l) => JSON.stringify(l)).join("\n"));
    expect(r.status, r.text).toBe(201);
    const wrong = await importNdjson(
      org.api_key,
      JSON.stringify({ ...claim, claim_id: "claim_" + hex(), status: "active", superseded_by: claim.claim_id }),
    );
    expectError(wrong, 400, "VALIDATION_ERROR");
    expect(wrong.json.error.message).toContain("superseded_by");
  });

  it("verifies content hashes and line schemas, naming the line, without echoing content", async () => {
    const org = await newOrg();
    const who = await principalOf(org.api_key);
    const at = new Date().toISOString();
    const good = {
      type: "observation",
      observation_id: "obs_" + "a".repeat(32),
      subject_id: "s",
      project_id: null,
      kind: "note",
      content: "original words",
      content_hash: contentHash("original words"),
      source: { type: "test", ref: "r" },
      trust: "medium",
      visibility: "team",
      author_id: who,
      created_at: at,
      purged: false,
      purged_at: null,
    };
    const header = JSON.stringify({ type: "svc.export.header", format_version: 1 });
    const tampered = await importNdjson(
      org.api_key,
      [header, JSON.stringify({ ...good, content: "tampered words" })].join("\n"),
    );
    expectError(tampered, 400, "VALIDATION_ERROR");
    expect(tampered.json.error.message).toContain("Line 2");
    expect(tampered.json.error.message).toContain("content_hash");
    expect(tampered.json.error.message).not.toContain("tampered");

    const cases: [string, string][] = [
      [JSON.stringify({ ...good, org_id: "org_x" }), "Line 1"],
      [JSON.stringify(good) + "\n{not json", "Line 2"],
      [JSON.stringify({ ...good, type: "key" }), "type"],
      [JSON.stringify({ ...good, created_at: "2024-01-01" }), "created_at"],
      [JSON.stringify({ ...good, content: null }), "content"],
      [JSON.stringify({ ...good, observation_id: "obs_1" }), "observation_id"],
      [[good, good].map((x) => JSON.stringify(x)).join("\n"), "duplicate"],
      [
        JSON.stringify({ type: "svc.export.header", format_version: 2 }) + "\n" + JSON.stringify(good),
        "format_version",
      ],
      ["", "no record lines"],
      [header, "no record lines"],
    ];
    for (const [body, mention] of cases) {
      const r = await importNdjson(org.api_key, body);
      expectError(r, 400, "VALIDATION_ERROR");
      expect(r.json.error.message).toContain(mention);
    }
    // A tombstone carries its hash but no content; CRLF line ends are fine.
    const tomb = { ...good, observation_id: "obs_" + "b".repeat(32), content: null, purged: true, purged_at: at };
    const ok = await importNdjson(org.api_key, JSON.stringify(good) + "\r\n" + JSON.stringify(tomb) + "\r\n");
    expect(ok.status, ok.text).toBe(201);
    expect(ok.json.data.imported.observations).toBe(2);
  });

  it("refuses record times more than 5 minutes in the future, naming the line and field; an expiry may lie ahead", async () => {
    const org = await newOrg();
    const who = await principalOf(org.api_key);
    const now = new Date().toISOString();
    const future = "2099-01-01T00:00:00.000Z";
    const hex = (d: string) => d.repeat(32);
    const project = {
      type: "project",
      project_id: "prj_" + hex("1"),
      reference: "future",
      created_by: who,
      created_at: now,
    };
    const observation = {
      type: "observation",
      observation_id: "obs_" + hex("2"),
      subject_id: "s",
      project_id: null,
      kind: "note",
      content: "x",
      content_hash: contentHash("x"),
      source: { type: "test" },
      trust: "medium",
      visibility: "team",
      author_id: who,
      created_at: now,
      purged: false,
      purged_at: null,
    };
    const claim = {
      type: "claim",
      claim_id: "claim_" + hex("3"),
      subject_id: "s",
      project_id: null,
      kind: "fact",
      statement: "x",
      status: "active",
      visibility: "team",
      trust: "medium",
      version: 1,
      valid_from: now,
      valid_to: null,
      superseded_by: null,
      disputes: [],
      sources: [{ observation_id: observation.observation_id, relation: "supports" }],
      created_at: now,
      updated_at: now,
      author_id: who,
    };
    const tomb = { ...observation, content: null, purged: true, purged_at: now };
    const header = JSON.stringify({ type: "svc.export.header", format_version: 1 });
    const lines = (...records: object[]) => [header, ...records.map((r) => JSON.stringify(r))].join("\n");
    const cases: [string, string, string][] = [
      [lines({ ...project, created_at: future }), "Line 2", "created_at"],
      [lines(observation, { ...claim, created_at: future }), "Line 3", "created_at"],
      [lines(observation, { ...claim, updated_at: future }), "Line 3", "updated_at"],
      [lines(observation, { ...claim, valid_from: future }), "Line 3", "valid_from"],
      [lines(project, { ...observation, created_at: future }), "Line 3", "created_at"],
      [lines({ ...tomb, purged_at: future }), "Line 2", "purged_at"],
    ];
    for (const [body, line, field] of cases) {
      const r = await importNdjson(org.api_key, body);
      expectError(r, 400, "VALIDATION_ERROR");
      expect(r.json.error.message).toBe(
        `${line}: Invalid field "${field}": must not be more than 5 minutes in the future.`,
      );
    }
    // Nothing was written by the refused imports.
    expect((await call("GET", "/v1/export", { key: org.api_key })).text.trim().split("\n")).toHaveLength(1);
    // The allowance is 5 minutes of clock skew, measured on this server's clock.
    const at = (ms: number) => new Date(Date.now() + ms).toISOString();
    const late = await importNdjson(org.api_key, lines({ ...observation, created_at: at(6 * 60_000) }));
    expectError(late, 400, "VALIDATION_ERROR");
    const skewed = await importNdjson(
      org.api_key,
      lines({ ...observation, created_at: at(4 * 60_000) }, { ...claim, valid_to: future }),
    );
    expect(skewed.status, skewed.text).toBe(201);
    const restored = await call("GET", `/v1/claims/${claim.claim_id}/evidence`, { key: org.api_key });
    expect(restored.json.data.claim.valid_to).toBe(future);
  });

  it("accepts at most 2000 record lines (an export header is not counted) within the 1 MiB body limit", async () => {
    const org = await newOrg();
    const who = await principalOf(org.api_key);
    const at = new Date().toISOString();
    const projects = (n: number) =>
      Array.from({ length: n }, (_, i) =>
        JSON.stringify({
          type: "project",
          project_id: "prj_" + i.toString(16).padStart(32, "0"),
          reference: `ref-${i}`,
          created_by: who,
          created_at: at,
        }),
      );
    const header = JSON.stringify({ type: "svc.export.header", format_version: 1 });
    const tooMany = await importNdjson(org.api_key, projects(2001).join("\n"));
    expectError(tooMany, 400, "VALIDATION_ERROR");
    expect(tooMany.json.error.message).toContain("2000");
    const full = await importNdjson(org.api_key, [header, ...projects(2000)].join("\n"));
    expect(full.status, full.text).toBe(201);
    expect(full.json.data.imported.projects).toBe(2000);
    expectError(await importNdjson(org.api_key, "x".repeat(1_048_577)), 413, "PAYLOAD_TOO_LARGE");
  });

  it("needs import:write and applies the trust ceiling", async () => {
    const org = await newOrg();
    const who = await principalOf(org.api_key);
    const at = new Date().toISOString();
    const line = JSON.stringify({
      type: "observation",
      observation_id: "obs_" + "d".repeat(32),
      subject_id: "s",
      project_id: null,
      kind: "note",
      content: "x",
      content_hash: contentHash("x"),
      source: { type: "test" },
      trust: "verified",
      visibility: "team",
      author_id: who,
      created_at: at,
      purged: false,
      purged_at: null,
    });
    const noScope = await mintKey(org.api_key, { scopes: ["export:read"] });
    const r = await importNdjson(noScope.key, line);
    expectError(r, 403, "FORBIDDEN");
    expect(r.json.error.message).toContain('"import:write"');
    const capped = await mintKey(org.api_key, { scopes: ["import:write"], max_trust: "high" });
    const t = await importNdjson(capped.key, line);
    expectError(t, 403, "FORBIDDEN");
    expect(t.json.error.message).toContain('"verified"');
    expect((await importNdjson(org.api_key, line)).status).toBe(201);
  });
});

describe("a project's workspace across export and import", () => {
  it("exports it with its name; import restores it (creating it when missing), so the records stay scoped", async () => {
    const a = await newOrg();
    const ws = await call("POST", "/v1/workspaces", { key: a.api_key, body: { name: "legal-team" } });
    expect(ws.status, ws.text).toBe(201);
    const w = ws.json.data.workspace_id as string;
    const p = (
      await call("POST", "/v1/projects/resolve", {
        key: a.api_key,
        body: { reference: "repo:legal", create: true, workspace_id: w },
      })
    ).json.data.project_id;
    const o = await appendOk(a.api_key, obs("s", "pangolin scoped evidence", { project_id: p }));
    const made = await call("POST", "/v1/consolidations", {
      key: a.api_key,
      body: {
        subject_id: "s",
        project_id: p,
        claims: [{ kind: "fact", statement: "pangolin scoped claim", sources: supports(o) }],
      },
    });
    expect(made.status, made.text).toBe(201);
    const claimId = made.json.data.claims[0].claim_id as string;
    const exported = await call("GET", "/v1/export?limit=2000", { key: a.api_key });
    const projectLine = parseLines(exported.text).find((l) => l.type === "project");
    expect(projectLine).toMatchObject({ project_id: p, workspace_id: w, workspace_name: "legal-team" });
    await forgetOwnership(a.org_id, exported.text);

    // Into a fresh organization: a member may not create the workspace; the owner restores it under its id.
    const b = await newOrg();
    const member = await mintKey(b.api_key, { scopes: ["*"] });
    const refused = await importNdjson(member.key, exported.text);
    expectError(refused, 400, "UNRESOLVED_REFERENCE");
    expect(refused.json.error.message).toContain(w);
    const r = await importNdjson(b.api_key, exported.text);
    expect(r.status, r.text).toBe(201);
    expect(r.json.data).toMatchObject({ imported: { projects: 1, observations: 1, claims: 1 }, workspaces_created: 1 });
    const listed = (await call("GET", "/v1/workspaces", { key: b.api_key })).json.data.workspaces;
    expect(listed.map((x: { workspace_id: string; name: string }) => [x.workspace_id, x.name])).toEqual([
      [w, "legal-team"],
    ]);
    const resolved = await call("POST", "/v1/projects/resolve", { key: b.api_key, body: { reference: "repo:legal" } });
    expect(resolved.json.data).toMatchObject({ project_id: p, workspace_id: w });
    // The records are the workspace's again: an organization member outside it reads none of them.
    expect((await call("GET", "/v1/memories?q=pangolin", { key: b.api_key })).text).toContain(claimId);
    expect((await call("GET", "/v1/memories?q=pangolin", { key: member.key })).text).not.toContain(claimId);
    expectError(await call("GET", `/v1/claims/${claimId}/evidence`, { key: member.key }), 404, "NOT_FOUND");
    // Its lines export again exactly as they came in.
    expect(parseLines((await call("GET", "/v1/export?limit=2000", { key: b.api_key })).text).slice(1)).toEqual(
      parseLines(exported.text).slice(1),
    );

    // Re-import: identical, so skipped, even after the workspace was renamed; nothing created.
    await inOrg(b.org_id, (x) => x.db.run("UPDATE workspaces SET name = 'renamed' WHERE workspace_id = ?", w));
    const again = await importNdjson(b.api_key, exported.text);
    expect(again.status, again.text).toBe(200);
    expect(again.json.data).toMatchObject({
      skipped: { projects: 1, observations: 1, claims: 1 },
      workspaces_created: 0,
    });
    // A different workspace for an existing project is a different record.
    const moved = { ...projectLine, workspace_id: null, workspace_name: null };
    expectError(await importNdjson(b.api_key, JSON.stringify(moved)), 409, "CONFLICT");

    // Writing into the workspace's existing project by import takes a write there, like an append: a
    // workspace reader gets 403; a member outside the workspace cannot see the project at all, so it is
    // unresolved, like a missing one.
    const at = new Date().toISOString();
    const intruder = {
      type: "observation",
      observation_id: "obs_" + "9".repeat(32),
      subject_id: "s",
      project_id: p,
      kind: "note",
      content: "x",
      content_hash: contentHash("x"),
      source: { type: "test" },
      trust: "medium",
      visibility: "team",
      author_id: member.principal_id,
      created_at: at,
      purged: false,
      purged_at: null,
    };
    expectError(await importNdjson(member.key, JSON.stringify(intruder)), 400, "UNRESOLVED_REFERENCE");
    const wreader = await mintKey(b.api_key, { scopes: ["*"] });
    expect(
      (
        await call("POST", "/v1/memberships", {
          key: b.api_key,
          body: { principal_id: wreader.principal_id, role: "reader", workspace_id: w },
        })
      ).status,
    ).toBe(201);
    expectError(await importNdjson(wreader.key, JSON.stringify(intruder)), 403, "FORBIDDEN");
    expect((await importNdjson(b.api_key, JSON.stringify(intruder))).status).toBe(201);
    // A project line without the workspace fields (older files) has none.
    const plain = {
      type: "project",
      project_id: "prj_" + "7".repeat(32),
      reference: "repo:plain",
      created_by: member.principal_id,
      created_at: at,
    };
    expect((await importNdjson(member.key, JSON.stringify(plain))).status).toBe(201);
    expect(
      (await call("POST", "/v1/projects/resolve", { key: b.api_key, body: { reference: "repo:plain" } })).json.data
        .workspace_id,
    ).toBeNull();
    expectError(
      await importNdjson(
        b.api_key,
        JSON.stringify({ ...plain, project_id: "prj_" + "6".repeat(32), reference: "r6", workspace_name: "x" }),
      ),
      400,
      "VALIDATION_ERROR",
    );
  });
});

describe("export visibility of projects", () => {
  it("names only projects the caller created or can read a record of", async () => {
    const org = await newOrg();
    const alice = await mintKey(org.api_key, { scopes: ["*"] });
    const bob = await mintKey(org.api_key, { scopes: ["*"] });
    const secret = (
      await call("POST", "/v1/projects/resolve", {
        key: alice.key,
        body: { reference: "repo:secret-name", create: true },
      })
    ).json.data.project_id;
    const open = (
      await call("POST", "/v1/projects/resolve", {
        key: alice.key,
        body: { reference: "repo:open-name", create: true },
      })
    ).json.data.project_id;
    await appendOk(alice.key, obs("s", "x", { project_id: secret, visibility: "private" }));
    await appendOk(alice.key, obs("s", "y", { project_id: open }));
    const mine = (
      await call("POST", "/v1/projects/resolve", { key: bob.key, body: { reference: "repo:bobs-empty", create: true } })
    ).json.data.project_id;
    const exp = await call("GET", "/v1/export?type=projects", { key: bob.key });
    const ids = exp.text
      .split("\n")
      .filter(Boolean)
      .slice(1)
      .map((l) => JSON.parse(l).project_id);
    expect(ids.sort()).toEqual([open, mine].sort());
    expect(exp.text).not.toContain("secret-name");
    const all = await call("GET", "/v1/export?type=projects", { key: alice.key });
    expect(all.text).toContain("secret-name");
  });
});

describe("an import that fails gives back only the ids it alone claimed", () => {
  it("keeps the registration of an id this organization's own record holds (its registration was still on the way)", async () => {
    const org = await newOrg();
    const x = await appendOk(org.api_key, obs("s", "ours already"));
    // As if x's registration had not reached the registry yet when the import claimed it.
    await runDurableObjectAlarm(orgStub(org.org_id) as unknown as DurableObjectStub);
    await durableRegistry(env.ID_REGISTRY).release(org.org_id, [x]);
    const line = (await call("GET", "/v1/export?type=observations", { key: org.api_key })).text
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l))
      .find((l) => l.observation_id === x);
    const at = new Date().toISOString();
    const failing = {
      type: "claim",
      claim_id: "claim_" + "d".repeat(32),
      subject_id: "s",
      project_id: null,
      kind: "fact",
      statement: "cites nothing",
      status: "active",
      visibility: "team",
      trust: "medium",
      version: 1,
      valid_from: at,
      valid_to: null,
      superseded_by: null,
      disputes: [],
      sources: [{ observation_id: "obs_" + "9".repeat(32), relation: "supports" }],
      created_at: at,
      updated_at: at,
      author_id: line.author_id,
    };
    const r = await importNdjson(org.api_key, [line, failing].map((l) => JSON.stringify(l)).join("\n"));
    expectError(r, 400, "UNRESOLVED_REFERENCE");
    expect(await registryOwners([x, failing.claim_id])).toEqual({ [x]: org.org_id });
  });
});
