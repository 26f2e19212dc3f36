// Compile's lexical selection (ranking.ts lexicalSelection): how the LEXICAL_READS are spent between the
// read of claims holding every shared word, words no team claim holds, and each word's own matches.
import { describe, expect, it } from "vitest";
import { hashKey } from "../src/auth/credentials";
import { loadCaller } from "../src/domains/identity/store";
import { rankClaims } from "../src/domains/memory/compile";
import { LEXICAL_CANDIDATES, LEXICAL_READS } from "../src/domains/memory/ranking";
import { insertClaim } from "../src/domains/memory/records";
import { inOrg, newOrg } from "./helpers";

/** An organization of claims written straight through insertClaim, a minute apart, by the owner. */
async function orgOf(statements: [string, string][]) {
  const org = await newOrg();
  const ids = await inOrg(org.org_id, (store) => {
    const author = loadCaller(store.db, hashKey(org.api_key))!.principalId;
    const start = Date.parse("2026-01-01T00:00:00.000Z");
    return statements.map(([statement, visibility], n) => {
      const at = new Date(start + n * 60_000).toISOString();
      const claim_id = `clm_${n.toString(16).padStart(32, "0")}`;
      insertClaim(
        store.db,
        {
          claim_id,
          subject_id: "s",
          project_id: null,
          kind: "fact",
          statement,
          status: "active",
          visibility,
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
      return claim_id;
    });
  });
  const rank = (query: string) =>
    inOrg(org.org_id, (store) =>
      rankClaims(store.db, loadCaller(store.db, hashKey(org.api_key))!, { query }).map((r) => r.claim.claim_id),
    );
  return { ids, rank };
}

describe("compile's AND read spends the read budget on rows the per-word reads read again", () => {
  it("with fewer readable matches than LEXICAL_READS, ranks LEXICAL_CANDIDATES of them, not only those holding every word", async () => {
    // 150 old claims hold alpha only, 100 newer ones alpha and beta: 250 matches, fewer than the 300
    // reads. The AND read reads the 100 (left 200); beta's share (100) re-reads the same 100, alpha's
    // (100) its newest 100 matches, the same 100 again: 300 reads, 100 distinct claims, and the 150
    // alpha-only claims are never read (docs/api-guide.md: "in a small organization that is every match").
    const alphaOnly = 150,
      both = 100;
    const o = await orgOf([
      ...Array.from({ length: alphaOnly }, (_, i): [string, string] => [`alpha only ${i}`, "team"]),
      ...Array.from({ length: both }, (_, i): [string, string] => [`alpha beta ${i}`, "team"]),
      ...Array.from({ length: alphaOnly + both + 1 }, (_, i): [string, string] => [`gamma filler ${i}`, "team"]),
    ]);
    const ranked = await o.rank("alpha beta");
    expect(ranked).toHaveLength(LEXICAL_CANDIDATES);
    expect(ranked.filter((id) => o.ids.indexOf(id) < alphaOnly).length).toBe(LEXICAL_CANDIDATES - both);
  }, 60_000);
});

describe("compile's AND read and words no team claim holds", () => {
  it("still reads the caller's own claim holding a word no team claim holds, when LEXICAL_READS team claims hold every other word", async () => {
    // selectingTerms: "A word no team claim holds selects too (only claims the caller may read
    // privately can hold it)". The AND read (held > 0 words only) returns LEXICAL_READS rows, leaving
    // `left` at 0, so the held-0 word's share is 0 and it is never read: the caller's best match
    // (the only claim holding the query's rarest word, and alpha) is not even a candidate. Before the
    // AND read, held-0 words went first (order by held ascending) with a full share, and this claim
    // ranked first (bm25 of zeta, coverage of alpha).
    // alpha and beta: held by fewer than half the team claims (so both select), together in LEXICAL_READS of them.
    const o = await orgOf([
      ["zeta alpha: the answer", "private"],
      ...Array.from({ length: LEXICAL_READS }, (_, i): [string, string] => [`alpha beta note ${i}`, "team"]),
      ...Array.from({ length: LEXICAL_READS + 1 }, (_, i): [string, string] => [`gamma filler ${i}`, "team"]),
    ]);
    const ids = { mine: o.ids[0] };
    const ranked = await o.rank("alpha beta zeta");
    expect(ranked).toContain(ids.mine);
    expect(ranked[0]).toBe(ids.mine);
  }, 60_000);
});
