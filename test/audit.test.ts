import { describe, expect, it } from "vitest";
import { auditEntry, auditEntryLine, auditHeader } from "../src/domains/audit/schema";
import { type AuditEntry, entryHash, verifyChain } from "../src/domains/audit/verify";
import { clock } from "../src/http/clock";
import { insertAudit } from "../src/org/write";
import { appendOk, call, expectError, inOrg, mintKey, newOrg, obs, readmeAuditHash } from "./helpers";

async function auditExport(key: string, qs = "") {
  const r = await call("GET", `/v1/audit/export${qs ? `?${qs}` : ""}`, { key });
  expect(r.status, r.text).toBe(200);
  const [headerLine, ...lines] = r.text.split("\n").filter(Boolean);
  const header = auditHeader.parse(JSON.parse(headerLine));
  const entries: AuditEntry[] = lines.map((l) => {
    const { type: _type, ...entry } = auditEntryLine.parse(JSON.parse(l));
    return entry;
  });
  return { r, header, entries };
}

/** Adds n audit rows straight through the write helper's insertAudit (setup for paging tests). */
const addEntries = (orgId: string, n: number, action = "test.filler") =>
  inOrg(orgId, (o) =>
    (o as unknown as { ctx: DurableObjectState }).ctx.storage.transactionSync(() => {
      for (let i = 0; i < n; i++)
        insertAudit(
          o.db,
          { actorId: "prn_test", keyId: null, requestId: null },
          { action, resourceType: "test", detail: { i } },
          clock.nowIso(),
        );
    }),
  );

describe("GET /v1/audit", () => {
  it("lists metadata-only entries newest first, never content", async () => {
    const org = await newOrg();
    const id = await appendOk(org.api_key, obs("s", "secret zebra content"));
    const r = await call("GET", "/v1/audit", { key: org.api_key });
    expect(r.status, r.text).toBe(200);
    expect(r.text).not.toContain("zebra");
    const entries = r.json.data.entries;
    expect(entries.map((e: { action: string }) => e.action)).toEqual([
      "observation.appended",
      "key.created",
      "organization.bootstrapped",
    ]);
    for (const e of entries) auditEntry.parse(e);
    const appended = entries[0];
    expect(appended).toMatchObject({ resource_type: "observation", resource_id: id, metadata: {} });
    expect(appended.request_id).toMatch(/^req_[0-9a-f]{32}$/);
    expect(appended.key_id).toBe((await call("GET", "/v1/principal", { key: org.api_key })).json.data.key_id);
    expect(r.json.data).toMatchObject({ has_more: false, cursor: entries[2].id });
    // Reversed, a page is a stretch of the chain.
    expect(verifyChain([...entries].reverse())).toMatchObject({ ok: true, checked: 3 });
  });

  it("pages with after (an audit id), filters by action, and bounds limit 1 to 500 (default 50)", async () => {
    const org = await newOrg();
    await addEntries(org.org_id, 60);
    const first = await call("GET", "/v1/audit", { key: org.api_key });
    expect(first.json.data.entries).toHaveLength(50);
    expect(first.json.data.has_more).toBe(true);
    // The newest first: the last filler written opens the first page.
    expect(first.json.data.entries[0].metadata).toEqual({ i: 59 });
    const rest = await call("GET", `/v1/audit?after=${first.json.data.cursor}&limit=500`, { key: org.api_key });
    expect(rest.json.data.entries).toHaveLength(12);
    expect(rest.json.data.has_more).toBe(false);
    // The two pages are the whole trail, newest to oldest: the export's commit order reversed.
    const exported = (await call("GET", "/v1/audit/export", { key: org.api_key })).text
      .trim()
      .split("\n")
      .slice(1)
      .map((l) => JSON.parse(l).id);
    expect([...first.json.data.entries, ...rest.json.data.entries].map((e: { id: string }) => e.id)).toEqual(
      [...exported].reverse(),
    );
    // Nothing older: the cursor stays where it was.
    const last = rest.json.data.cursor;
    expect((await call("GET", `/v1/audit?after=${last}`, { key: org.api_key })).json.data).toEqual({
      entries: [],
      has_more: false,
      cursor: last,
    });
    const keys = await call("GET", "/v1/audit?action=key.created", { key: org.api_key });
    expect(keys.json.data.entries.map((e: { action: string }) => e.action)).toEqual(["key.created"]);
    expectError(await call("GET", `/v1/audit?after=aud_${"0".repeat(32)}`, { key: org.api_key }), 404, "NOT_FOUND");
    for (const qs of ["limit=0", "limit=501", "limit=x"])
      expectError(await call("GET", `/v1/audit?${qs}`, { key: org.api_key }), 400, "VALIDATION_ERROR");
  });

  it("needs audit:read / audit:export and the owner or admin role", async () => {
    const org = await newOrg();
    const member = await mintKey(org.api_key, { scopes: ["audit:read", "audit:export"] });
    for (const path of ["/v1/audit", "/v1/audit/export"]) {
      const r = await call("GET", path, { key: member.key });
      expectError(r, 403, "FORBIDDEN");
      expect(r.json.error.message).toContain("owner or admin");
    }
    const owner = (await call("GET", "/v1/principal", { key: org.api_key })).json.data.principal_id;
    const ownerNoScope = await mintKey(org.api_key, { principal_id: owner, scopes: ["events:read"] });
    expectError(await call("GET", "/v1/audit", { key: ownerNoScope.key }), 403, "FORBIDDEN");
    expectError(await call("GET", "/v1/audit/export", { key: ownerNoScope.key }), 403, "FORBIDDEN");
    const ownerScoped = await mintKey(org.api_key, { principal_id: owner, scopes: ["audit:read"] });
    expect((await call("GET", "/v1/audit", { key: ownerScoped.key })).status).toBe(200);
    expectError(await call("GET", "/v1/audit/export", { key: ownerScoped.key }), 403, "FORBIDDEN");
  });
});

describe("GET /v1/audit/export", () => {
  it("streams a svc.audit.header explaining the chain, then entries that verify", async () => {
    const org = await newOrg();
    await appendOk(org.api_key, obs("s", "x"));
    const { r, header, entries } = await auditExport(org.api_key);
    expect(r.headers.get("content-type")).toContain("application/x-ndjson");
    expect(header).toMatchObject({
      type: "svc.audit.header",
      format_version: 1,
      filters: { after: null, limit: 1000 },
      entries: entries.length,
      has_more: false,
      next_after: null,
      chain: { algorithm: "sha256", genesis_prev_hash: "0".repeat(64), start_prev_hash: "0".repeat(64) },
    });
    expect(entries[0].prev_hash).toBe("0".repeat(64));
    expect(verifyChain(entries, header.chain.start_prev_hash)).toMatchObject({ ok: true, checked: entries.length });
    // Every entry's hash is the formula of docs/api-guide.md ("Audit"), computed here independently of the product code.
    for (const e of entries)
      expect(e.entry_hash).toBe(await readmeAuditHash(e.prev_hash, { ...e, metadataJson: JSON.stringify(e.metadata) }));
  });

  it("pages with after; each page verifies from the header's start_prev_hash; limit 1 to 5000", async () => {
    const org = await newOrg();
    await addEntries(org.org_id, 1005);
    const p1 = await auditExport(org.api_key);
    expect(p1.entries).toHaveLength(1000);
    expect(p1.header).toMatchObject({ has_more: true, next_after: p1.entries[999].id });
    const p2 = await auditExport(org.api_key, `after=${p1.header.next_after}&limit=5000`);
    expect(p2.entries).toHaveLength(7);
    expect(p2.header.chain.start_prev_hash).toBe(p1.entries[999].entry_hash);
    expect(verifyChain(p1.entries).ok).toBe(true);
    expect(verifyChain(p2.entries, p2.header.chain.start_prev_hash).ok).toBe(true);
    expect(verifyChain(p2.entries).ok).toBe(false); // a page is not the start of the log
    for (const qs of ["limit=0", "limit=5001"])
      expectError(await call("GET", `/v1/audit/export?${qs}`, { key: org.api_key }), 400, "VALIDATION_ERROR");
    expectError(
      await call("GET", `/v1/audit/export?after=aud_${"f".repeat(32)}`, { key: org.api_key }),
      404,
      "NOT_FOUND",
    );
  });

  it("detects a modified entry, and a modified entry whose own hash was recomputed", async () => {
    const org = await newOrg();
    await appendOk(org.api_key, obs("s", "x"));
    await appendOk(org.api_key, obs("s", "y"));
    const before = await auditExport(org.api_key);
    expect(verifyChain(before.entries).ok).toBe(true);
    const target = before.entries[2];

    await inOrg(org.org_id, (o) =>
      o.db.run("UPDATE audit_log SET detail = ? WHERE audit_id = ?", JSON.stringify({ forged: true }), target.id),
    );
    const edited = await auditExport(org.api_key);
    expect(edited.entries[2].metadata).toEqual({ forged: true });
    expect(verifyChain(edited.entries)).toEqual({ ok: false, index: 2, id: target.id, reason: "entry_hash" });

    // Re-hashing the forged entry moves the break to the next entry's prev_hash.
    const rehashed = entryHash(target.prev_hash, edited.entries[2]);
    await inOrg(org.org_id, (o) =>
      o.db.run("UPDATE audit_log SET entry_hash = ? WHERE audit_id = ?", rehashed, target.id),
    );
    const forged = await auditExport(org.api_key);
    expect(verifyChain(forged.entries)).toEqual({ ok: false, index: 3, id: before.entries[3].id, reason: "prev_hash" });

    // Removing an entry is caught the same way.
    const intact = await newOrg();
    await appendOk(intact.api_key, obs("s", "x"));
    const all = (await auditExport(intact.api_key)).entries;
    expect(verifyChain([all[0], ...all.slice(2)])).toMatchObject({ ok: false, index: 1, reason: "prev_hash" });
  });

  it("records imports and exports with counts only", async () => {
    const org = await newOrg();
    await appendOk(org.api_key, obs("s", "private words"));
    const exported = await call("GET", "/v1/export", { key: org.api_key });
    expect((await call("POST", "/v1/import", { key: org.api_key, raw: exported.text })).status).toBe(200);
    const { entries } = await auditExport(org.api_key);
    const byAction = Object.fromEntries(entries.map((e) => [e.action, e]));
    expect(byAction["export.read"].metadata).toEqual({ type: null, limit: 500, records: 1, has_more: false });
    expect(byAction["import.applied"]).toMatchObject({
      resource_type: "organization",
      resource_id: org.org_id,
      metadata: {
        imported: { projects: 0, observations: 0, claims: 0 },
        skipped: { projects: 0, observations: 1, claims: 0 },
        principals_created: 0,
      },
    });
    expect(JSON.stringify(entries)).not.toContain("private words");
  });
});
