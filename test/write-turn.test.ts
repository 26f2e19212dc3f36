// Writes that reach the organization's object together share one turn, hence one commit
// (src/org/write-turn.ts), and each still stands or falls alone.
import { describe, expect, it } from "vitest";
import { hashKey } from "../src/auth/credentials";
import { verifyChain } from "../src/domains/audit/verify";
import type { DispatchInput } from "../src/env";
import { WriteTurn } from "../src/org/write-turn";
import { call, holdBackgroundDrain, inOrg, newOrg, obs } from "./helpers";

describe("WriteTurn", () => {
  it("lets every caller that asked before the next turn began go together, and later ones in another turn", async () => {
    const deferred: (() => void)[] = [];
    const turn = new WriteTurn((run) => deferred.push(run));
    const order: string[] = [];
    const first = turn.wait().then(() => order.push("a"));
    const second = turn.wait().then(() => order.push("b"));
    expect(deferred.length).toBe(1); // one turn asked for both
    deferred[0]();
    await Promise.all([first, second]);
    expect(order).toEqual(["a", "b"]);
    const third = turn.wait().then(() => order.push("c"));
    expect(deferred.length).toBe(2); // the first turn began: a new one
    deferred[1]();
    await third;
    expect(order).toEqual(["a", "b", "c"]);
  });
});

describe("writes in one turn", () => {
  const appendInput = (orgId: string, key: string, body: unknown): DispatchInput => ({
    orgId,
    routeId: "POST /v1/observations",
    params: {},
    query: {},
    bodyText: JSON.stringify(body),
    idempotencyKey: null,
    keyHash: hashKey(key),
    requestId: "req_turn",
    headers: { "content-type": "application/json" },
  });
  const counts = (db: { first: <T>(q: string) => T | null }) =>
    db.first<{ obs: number; events: number; audit: number; outbox: number }>(
      `SELECT (SELECT count(*) FROM observations) AS obs, (SELECT count(*) FROM events) AS events,
            (SELECT count(*) FROM audit_log) AS audit, (SELECT count(*) FROM outbox) AS outbox`,
    )!;

  it("wait for the turn, are all written before any answers, and a write that fails midway rolls back alone", async () => {
    holdBackgroundDrain(); // the outbox rows counted below stay until the test has counted them
    const org = await newOrg();
    const result = await inOrg(org.org_id, async (o) => {
      // The second write fails after its observation row is in (at its event).
      o.db.run(`CREATE TRIGGER turn_test_fail BEFORE INSERT ON events WHEN NEW.payload LIKE '%"subject_id":"fail-me"%'
                BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`);
      const before = counts(o.db);
      const writes = ["ok-1", "fail-me", "ok-2"].map((subject) =>
        o.dispatch(appendInput(org.org_id, org.api_key, obs(subject, `content of ${subject}`))),
      );
      const atCall = counts(o.db);
      let atFirstAnswer: ReturnType<typeof counts> | null = null;
      const answers = await Promise.all(
        writes.map((w, i) =>
          i === 0
            ? w.then((r) => {
                atFirstAnswer = counts(o.db);
                return r;
              })
            : w,
        ),
      );
      o.db.run("DROP TRIGGER turn_test_fail");
      return { before, atCall, atFirstAnswer: atFirstAnswer!, after: counts(o.db), answers };
    });
    expect(result.atCall).toEqual(result.before); // nothing ran before the turn
    expect(result.answers.map((a) => a.ok)).toEqual([true, false, true]);
    const two = {
      obs: result.before.obs + 2,
      events: result.before.events + 2,
      audit: result.before.audit + 2,
      outbox: result.before.outbox + 2,
    };
    expect(result.atFirstAnswer).toEqual(two); // the turn's writes are in before the first answer
    expect(result.after).toEqual(two); // the failed write left nothing
    const entries = (await call("GET", "/v1/audit", { key: org.api_key })).json.data.entries.reverse();
    expect(verifyChain(entries)).toMatchObject({ ok: true });
  });

  it("reads the key row after the wait: a key revoked meanwhile is refused", async () => {
    const org = await newOrg();
    const answer = await inOrg(org.org_id, async (o) => {
      const pending = o.dispatch(appendInput(org.org_id, org.api_key, obs("s", "written after the revocation")));
      o.db.run("UPDATE api_keys SET status = 'revoked' WHERE key_hash = ?", hashKey(org.api_key));
      return pending;
    });
    expect(answer).toEqual({ ok: false, error: expect.objectContaining({ code: "UNAUTHENTICATED" }) });
  });
});
