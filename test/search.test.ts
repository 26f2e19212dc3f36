// Memories search (src/domains/memory/search.ts): matches are scored
// over their stored terms as strings (storedBm25, equal to bm25 over the split terms), and the rest of
// a search's order is kept as claim seqs; later pages still re-check every item for the caller now.
import { describe, expect, it } from "vitest";
import {
  bm25,
  phraseStems,
  storedBm25,
  storedStems,
  stemsOf,
  storedTerm,
  type TermStats,
} from "../src/domains/memory/fts";
import { searchMemories } from "../src/domains/memory/search";
import { clock } from "../src/http/clock";
import { encodeCursor } from "../src/http/cursor";
import { ApiError } from "../src/http/errors";
import { migrate } from "../src/org/migrate";
import { ORG_MIGRATIONS } from "../src/org/migrations";
import type { OrgStore } from "../src/OrgStore";
import type { Caller } from "../src/org/request";
import {
  appendOk,
  call,
  consolidateOk,
  expectError,
  inOrg,
  obs,
  orgWithTwoPrincipals,
  prng,
  supports,
} from "./helpers";

describe("storedBm25", () => {
  it("scores a stored term string exactly as bm25 over its split terms, for ASCII and other text, phrases and repeats", () => {
    const rand = prng(23);
    const words = ["walrus", "tusks", "running", "runner", "ice", "floe", "a", "naïve", "Ελλάδα", "café", "x1", "wal"];
    const pick = () => words[Math.floor(rand() * words.length)];
    const stats: TermStats = { rows: 40, tokens: 400, held: (stem) => (stem.length * 7) % 11 };
    const queries = [
      "walrus",
      "walrus tusks",
      "run",
      "ice-floe",
      "naïve café",
      "Ελλάδα",
      "wal walrus",
      "floe floe",
      "a",
      "x1 ice floe",
    ];
    let compared = 0;
    for (let n = 0; n < 300; n++) {
      const text = Array.from({ length: Math.floor(rand() * 12) }, pick).join(rand() < 0.2 ? "-" : " ");
      const stored = stemsOf(text).map(storedTerm).join(" ");
      for (const q of queries) {
        const phrases = q.split(" ").map(phraseStems);
        for (const s of [stats, { rows: 0, tokens: 0, held: () => 0 }]) {
          expect(storedBm25(phrases, s)(stored), `${q} in "${stored}"`).toBe(bm25(storedStems(stored), phrases, s));
          compared++;
        }
      }
    }
    // Not trivially zero: the texts hold the query words, as one word and as phrases of adjacent terms.
    const terms = (text: string) => stemsOf(text).map(storedTerm).join(" ");
    const phrase = [phraseStems("ice-floe")];
    expect(storedBm25(phrase, stats)(terms("ice floe ice floe floe"))).toBeGreaterThan(
      storedBm25(phrase, stats)(terms("ice floe floe floe floe")),
    );
    expect(storedBm25(phrase, stats)(terms("ice floe floe floe floe"))).toBeGreaterThan(0);
    expect(storedBm25(phrase, stats)(terms("floe ice"))).toBe(0);
    expect(storedBm25([phraseStems("wal")], stats)(terms("walrus"))).toBe(0);
    expect(compared).toBe(6000);
  });
});

describe("search snapshots of claim seqs", () => {
  /** Alice's team claims and her private ones in subject "alpha", which bob reads through a grant. */
  async function world() {
    const { org, first: alice, second: bob } = await orgWithTwoPrincipals();
    const team = await appendOk(alice.key, obs("open", "walrus notes"));
    const secret = await appendOk(alice.key, obs("alpha", "walrus secret", { visibility: "private" }));
    // Different term counts, so the order is not write order.
    const teamIds = await consolidateOk(
      alice.key,
      "open",
      Array.from({ length: 4 }, (_, i) => ({
        kind: "fact",
        statement: `walrus ${"tusk ".repeat(i)}team ${i}`,
        sources: supports(team),
      })),
    );
    const privateIds = await consolidateOk(
      alice.key,
      "alpha",
      Array.from({ length: 3 }, (_, i) => ({
        kind: "fact",
        statement: `walrus walrus ${"floe ".repeat(i)}private ${i}`,
        sources: supports(secret),
      })),
    );
    const g = await call("POST", "/v1/grants", {
      key: org.api_key,
      body: { principal_id: bob.principal_id, permissions: ["read"], subject: "alpha" },
    });
    expect(g.status, g.text).toBe(201);
    return { org, alice, bob, teamIds, privateIds, grantId: g.json.data.grant_id as string };
  }

  async function pages(key: string, q: string, limit: number, cursor?: string) {
    const ids: string[] = [];
    do {
      const r = await call("GET", `/v1/memories?q=${q}&limit=${limit}${cursor ? `&after=${cursor}` : ""}`, { key });
      expect(r.status, r.text).toBe(200);
      ids.push(...r.json.data.items.map((c: { claim_id: string }) => c.claim_id));
      cursor = r.json.data.next_cursor ?? undefined;
    } while (cursor);
    return ids;
  }

  it("stores the rest of the order as seqs, and a later page leaves out a claim the caller can no longer read, keeping the order", async () => {
    const w = await world();
    // Alice reads all seven; bob, through the grant, the same seven in the same order (shared statistics).
    const order = await pages(w.alice.key, "walrus", 100);
    expect([...order].sort()).toEqual([...w.teamIds, ...w.privateIds].sort());
    const first = await call("GET", "/v1/memories?q=walrus&limit=2", { key: w.bob.key });
    expect(first.json.data.items.map((c: { claim_id: string }) => c.claim_id)).toEqual(order.slice(0, 2));
    expect(first.json.data.has_more).toBe(true);
    // The snapshot holds the other five as claim seqs, best first.
    const stored = await inOrg(w.org.org_id, (o) => ({
      rows: o.db.all<{ claim_seqs: string; principal_id: string }>(
        "SELECT claim_seqs, principal_id FROM search_snapshots",
      ),
      seqOf: new Map(
        o.db.all<{ seq: number; claim_id: string }>("SELECT seq, claim_id FROM claims").map((c) => [c.claim_id, c.seq]),
      ),
    }));
    expect(stored.rows).toHaveLength(1);
    expect(stored.rows[0].principal_id).toBe(w.bob.principal_id);
    expect(JSON.parse(stored.rows[0].claim_seqs)).toEqual(order.slice(2).map((id) => stored.seqOf.get(id)));
    // Bob's grant goes: the private claims still ahead in the snapshot are left out, the team ones kept in order.
    expect((await call("DELETE", `/v1/grants/${w.grantId}`, { key: w.org.api_key })).status).toBe(200);
    const rest = await pages(w.bob.key, "walrus", 2, first.json.data.next_cursor);
    expect(rest).toEqual(order.slice(2).filter((id) => w.teamIds.includes(id)));
    expect(rest.length).toBeGreaterThan(0);
    expect(order.slice(2).some((id) => w.privateIds.includes(id))).toBe(true);
  });

  it("refuses another principal's cursor over a snapshot of seqs, even one who may read every claim in it", async () => {
    const w = await world();
    const first = await call("GET", "/v1/memories?q=walrus&limit=2", { key: w.bob.key });
    const forged = await call(
      "GET",
      `/v1/memories?q=walrus&limit=2&after=${encodeCursor({ s: "0".repeat(32), o: 0 })}`,
      { key: w.alice.key },
    );
    expectError(forged, 400, "VALIDATION_ERROR");
    const stolen = await call("GET", `/v1/memories?q=walrus&limit=2&after=${first.json.data.next_cursor}`, {
      key: w.alice.key,
    });
    expectError(stolen, 400, "VALIDATION_ERROR");
    expect(stolen.json.error.message).toBe(forged.json.error.message);
    // Still good for bob.
    expect(
      (await call("GET", `/v1/memories?q=walrus&limit=2&after=${first.json.data.next_cursor}`, { key: w.bob.key }))
        .status,
    ).toBe(200);
  });
});

describe("0025_search_snapshots_by_seq", () => {
  it("drops snapshots of claim ids, so their cursors get the expired-cursor 400, not a 500", async () => {
    const upTo = (name: string) => ORG_MIGRATIONS.slice(0, ORG_MIGRATIONS.findIndex((m) => m.name === name) + 1);
    const before = (name: string) =>
      ORG_MIGRATIONS.slice(
        0,
        ORG_MIGRATIONS.findIndex((m) => m.name === name),
      );
    await inOrg(`migration-test-${crypto.randomUUID()}`, async (o: OrgStore) => {
      const storage = (o as unknown as { ctx: DurableObjectState }).ctx.storage;
      await storage.deleteAll();
      migrate(o.db, storage, before("0025_search_snapshots_by_seq"));
      const queryKey = JSON.stringify([["walrus"], null, null, null, null, null]);
      o.db.run(
        "INSERT INTO search_snapshots (snapshot_id, principal_id, query_key, claim_ids, expires_at) VALUES (?, 'prn_a', ?, ?, ?)",
        "a".repeat(32),
        queryKey,
        JSON.stringify(["clm_" + "1".repeat(32)]),
        new Date(clock.nowMs() + 600_000).toISOString(),
      );
      migrate(o.db, storage, upTo("0025_search_snapshots_by_seq"));
      expect(o.db.all("SELECT * FROM search_snapshots")).toEqual([]);
      const caller: Caller = {
        principalId: "prn_a",
        keyId: "key_a",
        scopes: ["*"],
        maxTrust: "verified",
        role: "owner",
        grants: [],
        workspaces: {},
      };
      const answer = (s: string) => {
        try {
          searchMemories(o.db, caller, {}, "walrus", 3, encodeCursor({ s, o: 0 }), () => {});
          return null;
        } catch (e) {
          return e;
        }
      };
      const old = answer("a".repeat(32));
      expect(old).toBeInstanceOf(ApiError);
      expect(old).toMatchObject({ code: "VALIDATION_ERROR" });
      expect((old as ApiError).message).toBe((answer("b".repeat(32)) as ApiError).message);
    });
  });
});
