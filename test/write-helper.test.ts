import { describe, expect, it } from "vitest";
import type { OrgStore } from "../src/OrgStore";
import type { RequestCtx } from "../src/org/request";
import type { Db } from "../src/sql/db";
import { ApiError } from "../src/http/errors";
import { commitWrite, type WriteOutcome } from "../src/org/write";
import { newRecordId } from "../src/domains/memory/records";
import type { AuditRow } from "../src/domains/audit/store";
import { verifyChain } from "../src/domains/audit/verify";
import { appendOk, call, inOrg, newOrg, obs, readmeAuditHash } from "./helpers";

/** A request context wired to the object's own job bookkeeping (due times are stored like a route's). */
function fakeRequest(o: OrgStore, idempotencyKey: string | null): RequestCtx {
  const store = o as unknown as {
    ctx: DurableObjectState;
    env: never;
    jobDue: RequestCtx["jobDue"];
    eventsWritten: () => void;
    indexRowsQueued: () => void;
  };
  return {
    orgId: "org_test",
    db: o.db,
    storage: store.ctx.storage,
    caller: {
      principalId: "prn_test",
      keyId: "key_test",
      scopes: ["*"],
      maxTrust: "verified",
      role: "owner",
      grants: [],
      workspaces: {},
    },
    requestId: "req_test",
    routeId: "POST /v1/test",
    params: {},
    query: undefined,
    body: { n: 1 },
    rawBody: null,
    idempotent: true,
    idempotencyKey,
    env: store.env,
    headers: {},
    deps: o.deps,
    jobDue: store.jobDue.bind(o),
    eventsWritten: store.eventsWritten.bind(o),
    indexRowsQueued: store.indexRowsQueued.bind(o),
    recordsCreated: () => undefined,
  };
}

const counts = (o: OrgStore) =>
  o.db.first<Record<string, number | string | null>>(
    `SELECT (SELECT count(*) FROM projects) AS projects, (SELECT count(*) FROM events) AS events,
          (SELECT count(*) FROM audit_log) AS audit, (SELECT count(*) FROM idempotency) AS replays,
          (SELECT count(*) FROM outbox) AS outbox,
          (SELECT value FROM org_meta WHERE name = 'job_due:webhook_delivery') AS webhook_due,
          (SELECT value FROM org_meta WHERE name = 'job_due:record_owners') AS outbox_due`,
  )!;

describe("commitWrite", () => {
  it("commits canonical rows, event, audit and replay record together", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, (o) => {
      const before = counts(o);
      const reply = commitWrite(fakeRequest(o, "idem-1"), (db) => {
        db.run(
          "INSERT INTO projects (project_id, reference, created_by, created_at) VALUES ('prj_1', 'r1', 'p', 'now')",
        );
        return {
          status: 201,
          data: { ok: true },
          events: [{ kind: "observation.appended", resourceType: "project", resourceId: "prj_1", payload: {} }],
          audit: { action: "test.write", resourceType: "project", resourceId: "prj_1" },
        };
      });
      expect(reply).toMatchObject({ status: 201, meta: { replayed: false } });
      const after = counts(o);
      expect(Number(after.projects) - Number(before.projects)).toBe(1);
      expect(Number(after.events) - Number(before.events)).toBe(1);
      expect(Number(after.audit) - Number(before.audit)).toBe(1);
      expect(Number(after.replays) - Number(before.replays)).toBe(1);
    });
  });

  it("leaves no canonical row, event, audit, outbox row, job due time or replay record when the write fails midway", async () => {
    const org = await newOrg();
    // An active webhook: committed events would make background delivery due.
    const hook = await call("POST", "/v1/webhooks", {
      key: org.api_key,
      body: { url: "https://hooks.example.com/in", secret: "s3cret-s3cret-s3cret", events: ["*"] },
    });
    expect(hook.status, hook.text).toBe(201);
    await inOrg(org.org_id, (o) => {
      const before = counts(o);
      expect(before).toMatchObject({ outbox: 0, webhook_due: null, outbox_due: null });
      // Fails in the work itself, after a canonical row was written.
      expect(() =>
        commitWrite(fakeRequest(o, "idem-2"), (db) => {
          db.run(
            "INSERT INTO projects (project_id, reference, created_by, created_at) VALUES ('prj_2', 'r2', 'p', 'now')",
          );
          throw new Error("boom");
        }),
      ).toThrow("boom");
      // Fails while writing the audit entry, after the rows and the event were written.
      expect(() =>
        commitWrite(fakeRequest(o, "idem-3"), (db) => {
          db.run(
            "INSERT INTO projects (project_id, reference, created_by, created_at) VALUES ('prj_3', 'r3', 'p', 'now')",
          );
          return {
            status: 201,
            data: {},
            events: [{ kind: "observation.appended", resourceType: "project", resourceId: "prj_3", payload: {} }],
            audit: { action: "test.write", resourceType: null as unknown as string },
          };
        }),
      ).toThrow();
      // Fails at the very last step (the replay record cannot serialize the response), after the
      // event made webhook delivery due and the outbox row and its due time were written.
      expect(() =>
        commitWrite(fakeRequest(o, "idem-4"), (db) => {
          db.run(
            "INSERT INTO projects (project_id, reference, created_by, created_at) VALUES ('prj_4', 'r4', 'p', 'now')",
          );
          return {
            status: 201,
            data: { n: 1n },
            events: [{ kind: "observation.appended", resourceType: "project", resourceId: "prj_4", payload: {} }],
            audit: { action: "test.write", resourceType: "project", resourceId: "prj_4" },
            touched: { created: ["prj_4"], changed: [] },
          };
        }),
      ).toThrow(/BigInt/);
      expect(counts(o)).toEqual(before);
      // The same write without the failure does leave all of them: the comparison above can fail.
      commitWrite(fakeRequest(o, "idem-5"), () => ({
        status: 201,
        data: {},
        events: [{ kind: "observation.appended", resourceType: "project", resourceId: "prj_5", payload: {} }],
        audit: { action: "test.write", resourceType: "project", resourceId: "prj_5" },
        touched: { created: ["prj_5"], changed: [] },
      }));
      expect(counts(o)).toMatchObject({ outbox: 1, webhook_due: expect.any(String), outbox_due: expect.any(String) });
    });
  });

  it("commits a refused write's rows and audit, then throws its error without a replay record", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, (o) => {
      const before = counts(o);
      const refused = new ApiError("VALIDATION_ERROR", "refused on purpose");
      const rc = fakeRequest(o, "idem-refused");
      const attempt = () =>
        commitWrite(rc, (db) => {
          db.run(
            "INSERT INTO projects (project_id, reference, created_by, created_at) VALUES ('prj_refused', 'refused', 'p', 'now')",
          );
          return { refused, audit: { action: "test.refused", resourceType: "project", resourceId: "prj_refused" } };
        });
      expect(attempt).toThrow(refused);
      const after = counts(o);
      expect(Number(after.projects) - Number(before.projects)).toBe(1);
      expect(Number(after.audit) - Number(before.audit)).toBe(1);
      expect(after.replays).toBe(before.replays);
      expect(after.events).toBe(before.events);
      expect(o.db.first<{ action: string }>("SELECT action FROM audit_log ORDER BY seq DESC LIMIT 1")?.action).toBe(
        "test.refused",
      );
    });
  });

  it("keeps a write's note of the ids it took from the reserve to that write: a rolled-back take reaches no later write", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, (o) => {
      const reserve = () =>
        o.db
          .all<{ record_id: string }>("SELECT record_id FROM reserved_record_ids WHERE prefix = 'prj_'")
          .map((r) => r.record_id);
      const queuedForRegistry = (id: string) =>
        o.db.all("SELECT 1 FROM outbox WHERE topic = 'record_owner' AND payload = ?", id).length;
      const project = (db: Db, id: string, reference: string): WriteOutcome => {
        db.run(
          "INSERT INTO projects (project_id, reference, created_by, created_at) VALUES (?, ?, 'p', 'now')",
          id,
          reference,
        );
        return {
          status: 201,
          data: {},
          audit: { action: "test.write", resourceType: "project", resourceId: id },
          touched: { created: [id], changed: [] },
        };
      };
      o.db.run("DELETE FROM reserved_record_ids WHERE prefix = 'prj_'");
      o.db.run("INSERT INTO reserved_record_ids (record_id, prefix) VALUES ('prj_reserved_a', 'prj_')");
      // A write takes the reserved id, then fails: the rollback puts the id back into the reserve.
      expect(() =>
        commitWrite(fakeRequest(o, null), (db, write) => {
          expect(newRecordId(db, write, "prj_")).toBe("prj_reserved_a");
          throw new Error("boom");
        }),
      ).toThrow("boom");
      expect(reserve()).toEqual(["prj_reserved_a"]);
      // A later write creating that id without taking it (as a restore keeps its ids) has taken nothing
      // from the reserve, so its id is queued for the registry like any fresh id.
      commitWrite(fakeRequest(o, null), (db) => project(db, "prj_reserved_a", "restored"));
      expect(queuedForRegistry("prj_reserved_a")).toBe(1);
      // A write that takes a reserved id and commits queues nothing for it (registered already).
      o.db.run("INSERT INTO reserved_record_ids (record_id, prefix) VALUES ('prj_reserved_b', 'prj_')");
      o.db.run("DELETE FROM reserved_record_ids WHERE record_id = 'prj_reserved_a'");
      commitWrite(fakeRequest(o, null), (db, write) => project(db, newRecordId(db, write, "prj_"), "taken"));
      expect(reserve()).toEqual([]);
      expect(queuedForRegistry("prj_reserved_b")).toBe(0);
      // Nor does that note carry over: the same id created again by the next write is queued.
      o.db.run("DELETE FROM projects WHERE project_id = 'prj_reserved_b'");
      commitWrite(fakeRequest(o, null), (db) => project(db, "prj_reserved_b", "again"));
      expect(queuedForRegistry("prj_reserved_b")).toBe(1);
    });
  });

  it("hashes the request's route and params: the same key and body on another route is 409", async () => {
    const org = await newOrg();
    await inOrg(org.org_id, (o) => {
      const write = (rc: RequestCtx) =>
        commitWrite(rc, () => ({
          status: 201,
          data: { route: rc.routeId },
          audit: { action: "test.write", resourceType: "test" },
        }));
      expect(write(fakeRequest(o, "idem-route")).status).toBe(201);
      expect(write(fakeRequest(o, "idem-route"))).toMatchObject({ status: 200, meta: { replayed: true } });
      expect(() => write({ ...fakeRequest(o, "idem-route"), routeId: "POST /v1/other" })).toThrow(/Idempotency-Key/);
      expect(() => write({ ...fakeRequest(o, "idem-route"), params: { id: "x" } })).toThrow(/Idempotency-Key/);
    });
  });

  it("chains audit entries by the documented formula, so that tampering is detectable", async () => {
    const org = await newOrg();
    await appendOk(org.api_key, obs("s", "x"));
    const stored = () => inOrg(org.org_id, (o) => o.db.all<AuditRow>("SELECT * FROM audit_log ORDER BY seq"));
    const rows = await stored();
    expect(rows.length).toBe(3);
    let prev = "0".repeat(64);
    for (const r of rows) {
      expect(r.prev_hash).toBe(prev);
      expect(r.entry_hash).toBe(await readmeAuditHash(prev, { ...r, id: r.audit_id, metadataJson: r.detail }));
      prev = r.entry_hash;
    }
    // The list is newest first; in commit order it is the chain.
    const listed = async () => (await call("GET", "/v1/audit", { key: org.api_key })).json.data.entries.reverse();
    expect(verifyChain(await listed())).toMatchObject({ ok: true, checked: 3 });
    // Tamper with a stored row: the chain check reports exactly that entry.
    await inOrg(org.org_id, (o) =>
      o.db.run("UPDATE audit_log SET actor_id = 'prn_forged' WHERE audit_id = ?", rows[1].audit_id),
    );
    expect(verifyChain(await listed())).toEqual({ ok: false, index: 1, id: rows[1].audit_id, reason: "entry_hash" });
  });
});
