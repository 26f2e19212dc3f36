// Compile's budget, as a property over random budgets and claim sizes (seeded): a pack never holds more
// tokens than its budget, its tokens are its statements' (tokens.ts), and it is full in the greedy
// sense, so a pack built against any other budget (a doubled one, say) is caught: every claim left out
// would not have fit in what the budget left, unless max_items was reached.
import { beforeAll, describe, expect, it } from "vitest";
import { estimateTokens } from "../src/domains/memory/tokens";
import { appendOk, call, consolidateOk, newOrg, obs, prng, supports } from "./helpers";

const CASES = 200;
const CLAIMS = 100;
const MAX_BUDGET = 3_500;
const VOCABULARY = "tide berth pier dock ferry harbor quay crane cargo ballast keel hull mast rudder anchor".split(" ");

let key: string;
/** Tokens of each claim, by id. */
const sizes = new Map<string, number>();

beforeAll(async () => {
  const org = await newOrg();
  key = org.api_key;
  const random = prng(20260501);
  const source = await appendOk(key, obs("budget", "the log of the harbor"));
  const claims: { kind: string; statement: string; sources: ReturnType<typeof supports> }[] = [];
  for (let i = 0; i < CLAIMS; i++) {
    // Mostly short claims, some long ones (up to ~1,000 tokens): small budgets and large ones both fill.
    const chars = 4 + Math.floor(random() ** 3 * 3_990);
    let statement = `ferry ${i}`;
    while (statement.length < chars) statement += ` ${VOCABULARY[Math.floor(random() * VOCABULARY.length)]}`;
    claims.push({ kind: "fact", statement: statement.slice(0, 4_000), sources: supports(source) });
  }
  for (let i = 0; i < claims.length; i += 50) {
    const batch = claims.slice(i, i + 50);
    const ids = await consolidateOk(key, "budget", batch);
    ids.forEach((id, j) => sizes.set(id, estimateTokens(batch[j].statement)));
  }
  const total = [...sizes.values()].reduce((a, b) => a + b, 0);
  // Enough text that no budget tried here holds every claim, twice over.
  expect(total).toBeGreaterThan(2 * MAX_BUDGET);
}, 60_000);

describe("compile's token budget (property, seeded)", () => {
  it(`holds for ${CASES} random budgets: tokens_used <= token_budget, honest tokens, a full pack`, async () => {
    const random = prng(77);
    let full = 0;
    for (let n = 0; n < CASES; n++) {
      const budget = 1 + Math.floor(random() ** 2 * (MAX_BUDGET - 1));
      const maxItems = random() < 0.2 ? 1 + Math.floor(random() * 20) : 200;
      const body = {
        ...(n % 2 ? { query: "ferry" } : { subject_id: "budget" }),
        token_budget: budget,
        max_items: maxItems,
      };
      const r = await call("POST", "/v1/context/compile", { key, body });
      expect(r.status, r.text).toBe(201);
      const items = r.json.data.items as { claim_id: string; statement: string; tokens: number }[];
      const used = r.json.data.tokens_used as number;
      const why = `case ${n}: ${JSON.stringify(body)} packed ${used}`;
      expect(used, why).toBeLessThanOrEqual(budget);
      expect(items.length, why).toBeLessThanOrEqual(maxItems);
      expect(used, why).toBe(items.reduce((s, i) => s + i.tokens, 0));
      for (const i of items) expect(i.tokens, why).toBe(sizes.get(i.claim_id));
      if (items.length < maxItems) {
        const packed = new Set(items.map((i) => i.claim_id));
        const leftOut = [...sizes].filter(([id]) => !packed.has(id)).map(([, tokens]) => tokens);
        expect(Math.min(...leftOut), why).toBeGreaterThan(budget - used);
      }
      if (used > budget / 2) full++;
    }
    // Most packs use more than half their budget, so one built against twice the budget overflows it.
    expect(full).toBeGreaterThan(CASES / 2);
  }, 120_000);
});
