import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { OrgStore } from "../src/org/OrgStore";
import type { RequestCtx } from "../src/org/request";
import { commitWrite } from "../src/org/write";
import { newOrg, inOrg } from "./helpers";

function fakeRequest(o: OrgStore, idempotencyKey: string | null): RequestCtx {
  return {
    orgId: "org_test", db: o.db, storage: (o as unknown as { ctx: DurableObjectState }).ctx.storage,
    caller: { principalId: "prn_test", keyId: "key_test", scopes: ["*"], maxTrust: "verified", role: "owner", grants: [] },
    requestId: "req_test", routeId: "POST /v1/test", params: {}, query: undefined, body: { n: 1 }, rawBody: null, idempotencyKey, env: undefined as never, headers: {},
    scheduleAlarm: () => {},
    eventsWritten: () => {},
  };
}

const counts = (o: OrgStore) => o.db.first<Record<string, number>>(
  `SELECT (SELECT count(*) FROM projects) AS projects, (SELECT count(*) FROM events) AS events,
          (SELECT count(*) FROM audit_log) AS audit, (SELECT count(*) FROM idempotency) AS replays`)!;

describe("commitWrite", () => {
  it("commits canonical rows, event, audit and replay record together", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, (o) => {
      const before = counts(o);
      const reply = commitWrite(fakeRequest(o, "idem-1"), (db) => {
        db.run("INSERT INTO projects (project_id, reference, created_by, created_at) VALUES ('prj_1', 'r1', 'p', 'now')");
        return { status: 201, data: { ok: true },
          events: [{ kind: "observation.appended", resourceType: "project", resourceId: "prj_1", payload: {} }],
          audit: { action: "test.write", resourceType: "project", resourceId: "prj_1" } };
      }, { idempotent: true });
      expect(reply).toMatchObject({ status: 201, meta: { replayed: false } });
      const after = counts(o);
      expect(after.projects - before.projects).toBe(1);
      expect(after.events - before.events).toBe(1);
      expect(after.audit - before.audit).toBe(1);
      expect(after.replays - before.replays).toBe(1);
    });
  });

  it("leaves no canonical row, event, audit or replay record when the write fails midway", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, (o) => {
      const before = counts(o);
      // Fails in the work itself, after a canonical row was written.
      expect(() => commitWrite(fakeRequest(o, "idem-2"), (db) => {
        db.run("INSERT INTO projects (project_id, reference, created_by, created_at) VALUES ('prj_2', 'r2', 'p', 'now')");
        throw new Error("boom");
      }, { idempotent: true })).toThrow("boom");
      // Fails while writing the audit entry, after the rows and the event were written.
      expect(() => commitWrite(fakeRequest(o, "idem-3"), (db) => {
        db.run("INSERT INTO projects (project_id, reference, created_by, created_at) VALUES ('prj_3', 'r3', 'p', 'now')");
        return { status: 201, data: {},
          events: [{ kind: "observation.appended", resourceType: "project", resourceId: "prj_3", payload: {} }],
          audit: { action: "test.write", resourceType: null as unknown as string } };
      }, { idempotent: true })).toThrow();
      expect(counts(o)).toEqual(before);
    });
  });

  it("chains audit entries so that tampering is detectable", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, (o) => {
      const rows = o.db.all<{ prev_hash: string; entry_hash: string }>("SELECT prev_hash, entry_hash FROM audit_log ORDER BY seq");
      expect(rows.length).toBeGreaterThan(1);
      expect(rows[0].prev_hash).toBe("0".repeat(64));
      for (let i = 1; i < rows.length; i++) expect(rows[i].prev_hash).toBe(rows[i - 1].entry_hash);
    });
  });
});
