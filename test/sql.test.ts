// The `sql` tag of src/sql/db.ts: values beside their placeholders, lists as one JSON parameter (past
// Durable Object SQLite's 100 bound parameters), fragments and read-rule clauses embedded with their values.
import { describe, expect, it } from "vitest";
import { fromClause, list, sql } from "../src/sql/db";
import { inOrg } from "./helpers";

const inEmptyOrg = <R>(fn: Parameters<typeof inOrg<R>>[1]) => inOrg(`sql-test-${crypto.randomUUID()}`, fn);

describe("the sql tag", () => {
  it("binds each value at its placeholder, booleans and undefined as the positional form does", async () => {
    const row = await inEmptyOrg((o) =>
      o.db.first<Record<string, unknown>>(
        sql`SELECT ${2} - ${1} AS diff, ${"a'b"} AS quoted, ${true} AS yes, ${undefined} AS absent`,
      ),
    );
    expect(row).toEqual({ diff: 1, quoted: "a'b", yes: 1, absent: null });
  });

  it("binds a list of any length as one parameter", async () => {
    const ids = Array.from({ length: 250 }, (_, i) => `id_${i}`);
    expect(sql`x IN ${list(ids)}`).toEqual({
      text: "x IN (SELECT value FROM json_each(?))",
      values: [JSON.stringify(ids)],
    });
    const n = await inEmptyOrg((o) => {
      // The platform refuses more than 100 bound parameters; the list needs one.
      expect(() => o.db.first(`SELECT 1 WHERE 'id_7' IN (${ids.map(() => "?").join(", ")})`, ...ids)).toThrow();
      return o.db.first<{ n: number }>(
        sql`SELECT count(*) AS n FROM json_each(${JSON.stringify(ids)}) WHERE value IN ${list(ids.slice(0, 150))}`,
      )!.n;
    });
    expect(n).toBe(150);
  });

  it("embeds fragments and read-rule clauses with their own values, in order", async () => {
    const low = sql`value >= ${"b"}`;
    const rule = fromClause(["(value <> ? AND value <> ?)", "c", "e"]);
    const query = sql`SELECT value FROM json_each(${JSON.stringify(["a", "b", "c", "d", "e"])}) WHERE ${low} AND ${rule} AND value < ${"z"} ORDER BY value`;
    expect(query.values).toEqual([JSON.stringify(["a", "b", "c", "d", "e"]), "b", "c", "e", "z"]);
    const rows = await inEmptyOrg((o) => o.db.all<{ value: string }>(query).map((r) => r.value));
    expect(rows).toEqual(["b", "d"]);
  });

  it("runs statements that write", async () => {
    const value = await inEmptyOrg((o) => {
      o.db.run(sql`INSERT INTO org_meta (name, value) VALUES (${"sql_test"}, ${"written"})`);
      return o.db.first<{ value: string }>(sql`SELECT value FROM org_meta WHERE name = ${"sql_test"}`)?.value;
    });
    expect(value).toBe("written");
  });
});
