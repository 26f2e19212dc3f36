// The credential lookup reads the nearest D1 replica (Sessions API), falls back to the primary on a
// miss, and never caches a miss; writes stay on the primary.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { addCredential, orgForCredential, removeCredential } from "../src/index-db";
import { call, newOrg } from "./helpers";

/** env.INDEX_DB, recording which constraint each session was opened with and which queries ran where. */
function recordingIndex(sessionRows: "real" | "empty") {
  const log: string[] = [];
  const db = {
    withSession(constraint?: string) {
      log.push(`session:${constraint}`);
      const session = env.INDEX_DB.withSession(constraint as D1SessionConstraint);
      // "empty": a replica that has not caught up with a new credential yet.
      if (sessionRows === "empty")
        return {
          prepare: (q: string) => env.INDEX_DB.prepare(q.replace("WHERE key_hash = ?", "WHERE key_hash = ? AND 0")),
        } as unknown as D1DatabaseSession;
      return session;
    },
    prepare(query: string) {
      log.push("primary");
      return env.INDEX_DB.prepare(query);
    },
  };
  return { db, log };
}

const hash = () => crypto.randomUUID().replace(/-/g, "").repeat(2);

describe("credential lookup on the nearest replica", () => {
  it("reads through a first-unconstrained D1 session, and the session answers from the index", async () => {
    const org = await newOrg();
    const h = hash();
    await addCredential(env.INDEX_DB, h, org.org_id, "api_key", new Date().toISOString());
    const { db, log } = recordingIndex("real");
    expect(await orgForCredential(db, h)).toBe(org.org_id);
    expect(log).toEqual(["session:first-unconstrained"]);
    // Served by the real D1 session API too (not only by the recording wrapper).
    const row = await env.INDEX_DB.withSession("first-unconstrained")
      .prepare("SELECT org_id FROM credentials WHERE key_hash = ?")
      .bind(h)
      .first();
    expect(row).toEqual({ org_id: org.org_id });
  });

  it("asks the primary when the replica does not know the key yet, so a new key works at once", async () => {
    const org = await newOrg();
    const h = hash();
    await addCredential(env.INDEX_DB, h, org.org_id, "api_key", new Date().toISOString());
    const { db, log } = recordingIndex("empty");
    expect(await orgForCredential(db, h)).toBe(org.org_id);
    expect(log).toEqual(["session:first-unconstrained", "primary"]);
  });

  it("never caches a miss: a credential added after a failed lookup routes on the next one", async () => {
    const org = await newOrg();
    const h = hash();
    expect(await orgForCredential(env.INDEX_DB, h)).toBeNull();
    await addCredential(env.INDEX_DB, h, org.org_id, "api_key", new Date().toISOString());
    expect(await orgForCredential(env.INDEX_DB, h)).toBe(org.org_id);
    await removeCredential(env.INDEX_DB, h);
  });

  it("serves real requests through the worker with the session path", async () => {
    const org = await newOrg();
    expect((await call("GET", "/v1/principal", { key: org.api_key })).status).toBe(200);
  });
});
