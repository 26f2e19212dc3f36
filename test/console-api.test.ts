// What the operator console's home page reads from the API: the caller's organization and account
// (GET /v1/principal) and the newest events (GET /v1/events?order=newest).
import { describe, expect, it } from "vitest";
import { appendOk, call, consolidateOk, expectError, fullAccount, mintKey, newOrg, obs, supports } from "./helpers";

describe("GET /v1/principal names the organization and the operator account", () => {
  it("answers org_id and the username of the session's account, the key principal's account, or null", async () => {
    const org = await newOrg();
    const other = await newOrg();
    const owner = await call("GET", "/v1/principal", { key: org.api_key });
    expect(owner.status, owner.text).toBe(200);
    expect(owner.json.data).toMatchObject({ org_id: org.org_id, username: org.owner_username, role: "owner" });
    expect((await call("GET", "/v1/principal", { key: other.api_key })).json.data.org_id).toBe(other.org_id);

    const member = await fullAccount(org.api_key, "member");
    const session = await call("GET", "/v1/principal", { key: member.token });
    expect(session.json.data).toMatchObject({
      org_id: org.org_id,
      username: member.username,
      role: "member",
      principal_id: member.principalId,
    });

    const agent = await mintKey(org.api_key, { scopes: ["events:read"] });
    expect((await call("GET", "/v1/principal", { key: agent.key })).json.data).toMatchObject({
      org_id: org.org_id,
      username: null,
    });
  });
});

describe("GET /v1/events?order=newest", () => {
  const q = (query: Record<string, string | number>) =>
    new URLSearchParams(Object.fromEntries(Object.entries(query).map(([k, v]) => [k, String(v)]))).toString();
  const kinds = (r: any) => r.json.data.events.map((e: any) => e.resource_id);

  it("lists the caller's readable events newest first; after continues with older ones; kind filters", async () => {
    const org = await newOrg();
    const writer = await mintKey(org.api_key, { scopes: ["*"] });
    const ids = [];
    for (const n of [1, 2, 3]) ids.push(await appendOk(org.api_key, obs("s", `note ${n}`)));
    // Another principal's private observation: its event is not the owner's to read.
    const hidden = await appendOk(writer.key, obs("s", "private note", { visibility: "private" }));
    await consolidateOk(org.api_key, "s", [{ kind: "fact", statement: "Notes exist.", sources: supports(ids[0]) }]);

    const all = await call("GET", `/v1/events?${q({ order: "newest", kind: "observation.appended" })}`, {
      key: org.api_key,
    });
    expect(all.status, all.text).toBe(200);
    expect(kinds(all)).toEqual([ids[2], ids[1], ids[0]]);
    expect(kinds(all)).not.toContain(hidden);

    const first = await call("GET", `/v1/events?${q({ order: "newest", limit: 2 })}`, { key: org.api_key });
    const newest = first.json.data.events;
    expect(newest.map((e: any) => e.kind)).toEqual(["claim.materialized", "observation.appended"]);
    expect(newest[1].resource_id).toBe(ids[2]);
    expect(first.json.data.cursor).toBe(newest[1].id);
    const next = await call("GET", `/v1/events?${q({ order: "newest", limit: 2, after: first.json.data.cursor })}`, {
      key: org.api_key,
    });
    expect(kinds(next)).toEqual([ids[1], ids[0]]);

    // The default stays commit order.
    const commit = await call("GET", `/v1/events?${q({ kind: "observation.appended" })}`, { key: org.api_key });
    expect(kinds(commit)).toEqual(ids);
  });

  it("refuses an unknown order naming the allowed values, and an unreadable after as unknown", async () => {
    const org = await newOrg();
    const writer = await mintKey(org.api_key, { scopes: ["*"] });
    await appendOk(writer.key, obs("s", "private note", { visibility: "private" }));
    const bad = await call("GET", `/v1/events?${q({ order: "oldest" })}`, { key: org.api_key });
    expectError(bad, 400, "VALIDATION_ERROR");
    expect(bad.json.error.message).toMatch(/order/);
    expect(bad.json.error.message).toMatch(/commit.*newest/);
    const [privateEvent] = (await call("GET", `/v1/events?${q({ order: "newest" })}`, { key: writer.key })).json.data
      .events;
    expectError(
      await call("GET", `/v1/events?${q({ order: "newest", after: privateEvent.id })}`, { key: org.api_key }),
      404,
      "NOT_FOUND",
    );
  });
});
