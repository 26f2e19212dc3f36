// vectorIndexFor: a stable, order-independent choice of Vectorize index per organization.
import { describe, expect, it } from "vitest";
import { vectorIndexFor } from "../src/vector/placement";

const orgs = Array.from({ length: 2000 }, (_, i) => `org_${i.toString(16).padStart(32, "0")}`);

describe("vectorIndexFor", () => {
  it("is fixed for a given organization and list (pinned values) and independent of list order", () => {
    const names = ["memory-a", "memory-b", "memory-c"];
    const pinned = orgs.slice(0, 4).map((o) => vectorIndexFor(o, names));
    expect(pinned).toEqual(orgs.slice(0, 4).map((o) => vectorIndexFor(o, [...names].reverse())));
    expect(pinned).toMatchInlineSnapshot(`
      [
        "memory-a",
        "memory-c",
        "memory-a",
        "memory-a",
      ]
    `);
    expect(vectorIndexFor(orgs[0], ["only"])).toBe("only");
    expect(() => vectorIndexFor(orgs[0], [])).toThrow("no vector index configured");
  });

  it("spreads organizations evenly and moves only the new index's share when one is added", () => {
    const three = ["memory-a", "memory-b", "memory-c"];
    const counts: Record<string, number> = {};
    for (const o of orgs) counts[vectorIndexFor(o, three)] = (counts[vectorIndexFor(o, three)] ?? 0) + 1;
    for (const name of three) expect(counts[name]).toBeGreaterThan((orgs.length / 3) * 0.85);
    const four = [...three, "memory-d"];
    const moved = orgs.filter((o) => vectorIndexFor(o, three) !== vectorIndexFor(o, four));
    // Every organization that moved went to the new index, and about a quarter moved.
    expect(moved.every((o) => vectorIndexFor(o, four) === "memory-d")).toBe(true);
    expect(moved.length).toBeGreaterThan((orgs.length / 4) * 0.8);
    expect(moved.length).toBeLessThan((orgs.length / 4) * 1.2);
  });
});
