import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { logPage, logView } from "../src/domains/federation/store";
import { healthRoutes } from "../src/domains/health/routes";
import { stemsOf, storedTerm } from "../src/domains/memory/fts";
import { rankingDrift } from "../src/domains/memory/records";
import type { PublicRoute } from "../src/org/route";
import { appliedMigrations, migrate, migrationMismatch } from "../src/org/migrate";
import { ORG_MIGRATIONS } from "../src/org/migrations";
import { takeReservedId } from "../src/org/reserved-ids";
import type { OrgStore } from "../src/OrgStore";
import { bareRequest, inOrg } from "./helpers";

const storageOf = (o: OrgStore) => (o as unknown as { ctx: DurableObjectState }).ctx.storage;
const upTo = (name: string) => ORG_MIGRATIONS.slice(0, ORG_MIGRATIONS.findIndex((m) => m.name === name) + 1);
const before = (name: string) =>
  ORG_MIGRATIONS.slice(
    0,
    ORG_MIGRATIONS.findIndex((m) => m.name === name),
  );

/** A fresh object whose storage is wiped, so a test can run the migration list only up to a point. */
async function inEmptyObject<R>(fn: (o: OrgStore, storage: DurableObjectStorage) => R | Promise<R>): Promise<R> {
  return inOrg(`migration-test-${crypto.randomUUID()}`, async (o) => {
    const storage = storageOf(o);
    await storage.deleteAll();
    expect(
      o.db.all(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_cf%' ESCAPE '\\' AND name NOT LIKE 'sqlite%'",
      ),
    ).toEqual([]);
    return fn(o, storage);
  });
}

describe("migrationMismatch (applied migrations checked by name against the list)", () => {
  const list = [
    { name: "a", sql: "" },
    { name: "b", sql: "" },
    { name: "c", sql: "" },
  ];
  it("accepts any prefix of the list", () => {
    expect(migrationMismatch([], list)).toBeNull();
    expect(
      migrationMismatch(
        [
          { version: 1, name: "a" },
          { version: 2, name: "b" },
        ],
        list,
      ),
    ).toBeNull();
  });
  it("refuses an applied name the list does not have, even when the count matches", () => {
    expect(
      migrationMismatch(
        [
          { version: 1, name: "a" },
          { version: 2, name: "x" },
        ],
        list,
      ),
    ).toMatch(/x is not in the migration list/);
  });
  it("refuses migrations applied out of order", () => {
    expect(
      migrationMismatch(
        [
          { version: 1, name: "b" },
          { version: 2, name: "a" },
        ],
        list,
      ),
    ).toMatch(/b was applied out of order/);
    expect(
      migrationMismatch(
        [
          { version: 1, name: "a" },
          { version: 3, name: "b" },
        ],
        list,
      ),
    ).toMatch(/out of order/);
  });
});

describe("the org migration runner", () => {
  it("refuses to run on an unknown applied migration and readiness reports it", async () => {
    const id = `migration-test-${crypto.randomUUID()}`;
    await inOrg(id, async (o) => {
      expect(await o.readiness()).toEqual({
        ok: true,
        applied: ORG_MIGRATIONS.length,
        expected: ORG_MIGRATIONS.length,
      });
      // Same count as the list, one name the list does not have: counting would call this ready.
      o.db.run("UPDATE _migrations SET name = '0003_renamed_elsewhere' WHERE version = 3");
      expect(() => migrate(o.db, storageOf(o))).toThrow(/0003_renamed_elsewhere is not in the migration list/);
      expect(await o.readiness()).toMatchObject({ ok: false, error: expect.stringMatching(/0003_renamed_elsewhere/) });
    });
    // And /readyz carries it when the probe object is the one that disagrees.
    await inOrg("readiness-probe", (o) => o.db.run("UPDATE _migrations SET name = 'zzz_unknown' WHERE version = 1"));
    try {
      const readyz = healthRoutes.find((r) => r.path === "/readyz") as PublicRoute;
      const res = await readyz.edge(env, "req_test", bareRequest);
      expect(res.status).toBe(503);
      const body = (await res.json()) as {
        error: { meta?: unknown };
        meta: { checks: Record<string, string>; schema: { org_store: { error?: string } } };
      };
      expect(body.meta.checks.org_store).toBe("failing");
      expect(body.meta.schema.org_store.error).toMatch(/zzz_unknown is not in the migration list/);
    } finally {
      await inOrg("readiness-probe", (o) =>
        o.db.run("UPDATE _migrations SET name = ? WHERE version = 1", ORG_MIGRATIONS[0].name),
      );
    }
  });

  it("applies the whole list to an empty object and records every name in order", async () => {
    await inEmptyObject((o, storage) => {
      expect(migrate(o.db, storage, before("0006_access_model"))).toBe(5);
      expect(migrate(o.db, storage)).toBe(ORG_MIGRATIONS.length);
      expect(appliedMigrations(o.db).map((m) => m.name)).toEqual(ORG_MIGRATIONS.map((m) => m.name));
    });
  });
});

describe("migrations that backfill data", () => {
  it("0006_access_model gives every existing principal an organization membership with its role", async () => {
    await inEmptyObject((o, storage) => {
      migrate(o.db, storage, before("0006_access_model"));
      o.db.run(`INSERT INTO principals (principal_id, kind, display_name, role, created_at) VALUES
        ('prn_a', 'human', 'a', 'owner', '2026-01-01T00:00:00.000Z'), ('prn_b', 'agent', 'b', 'reader', '2026-01-02T00:00:00.000Z')`);
      migrate(o.db, storage, upTo("0006_access_model"));
      expect(
        o.db.all(
          "SELECT principal_id, workspace_id, role, created_by, created_at FROM memberships ORDER BY principal_id",
        ),
      ).toEqual([
        {
          principal_id: "prn_a",
          workspace_id: null,
          role: "owner",
          created_by: "prn_a",
          created_at: "2026-01-01T00:00:00.000Z",
        },
        {
          principal_id: "prn_b",
          workspace_id: null,
          role: "reader",
          created_by: "prn_b",
          created_at: "2026-01-02T00:00:00.000Z",
        },
      ]);
      expect(
        o.db
          .all<{ membership_id: string }>("SELECT membership_id FROM memberships")
          .every((m) => /^mbr_[0-9a-f]{32}$/.test(m.membership_id)),
      ).toBe(true);
    });
  });

  it("0007_job_due_times carries the webhook due time over and makes waiting outbox and expiry work due", async () => {
    await inEmptyObject((o, storage) => {
      migrate(o.db, storage, before("0007_job_due_times"));
      o.db.run(
        "INSERT INTO org_meta (name, value) VALUES ('webhook_due_at', '1795000000000'), ('webhook_cursor', '12')",
      );
      o.db.run("INSERT INTO outbox (topic, payload, created_at) VALUES ('record_owner', 'obs_1', 'now')");
      o.db
        .run(`INSERT INTO leases (lease_id, resource_type, resource_id, holder_id, ttl_seconds, acquired_at, expires_at)
        VALUES ('lse_1', 'r', '1', 'prn_a', 30, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:30.000Z')`);
      migrate(o.db, storage, upTo("0007_job_due_times"));
      expect(o.db.all("SELECT name, value FROM org_meta ORDER BY name")).toEqual([
        { name: "job_due:expiry_sweep", value: "0" },
        { name: "job_due:record_owners", value: "0" },
        { name: "job_due:webhook_delivery", value: "1795000000000" },
        { name: "webhook_cursor", value: "12" },
      ]);
    });
  });

  it("0019_claim_stems stores each claim's terms as claims_fts holds them, and rebuilds the statistics without retention-excluded claims", async () => {
    await inEmptyObject((o, storage) => {
      migrate(o.db, storage, before("0019_claim_stems"));
      const statements = [
        "Café naïve résumés: the runners were running in Ελλάδα",
        "the runners were running: billing invoices billing",
        "",
        "secret billing ledger",
      ];
      statements.forEach((statement, i) => {
        o.db.run(
          `INSERT INTO claims (claim_id, subject_id, project_id, kind, statement, status, visibility, trust, version, valid_from,
            valid_to, superseded_by, disputes, author_id, created_at, updated_at, retention_excluded_at)
          VALUES (?, 's', NULL, 'fact', ?, 'active', 'team', 'medium', 1, 't', NULL, NULL, '[]', 'prn_a', 't', 't', ?)`,
          `claim_${i}`,
          statement,
          i === 3 ? "2026-01-01T00:00:00.000Z" : null,
        );
        o.db.run(
          "INSERT INTO claims_fts (rowid, statement) SELECT seq, statement FROM claims WHERE claim_id = ?",
          `claim_${i}`,
        );
      });
      // 0016's statistics counted the excluded claim.
      o.db.run("INSERT INTO claim_terms (term, claims) VALUES ('secret', 1), ('bill', 2)");
      migrate(o.db, storage, upTo("0019_claim_stems"));
      // ASCII statements get the index's terms, exactly what insertClaim writes; others are tokenized when read.
      expect(
        o.db.all("SELECT c.statement, s.stems FROM claims c LEFT JOIN claim_stems s ON s.seq = c.seq ORDER BY c.seq"),
      ).toEqual(
        statements.map((statement, i) => ({
          statement,
          stems: i === 0 ? null : stemsOf(statement).map(storedTerm).join(" "),
        })),
      );
      expect(o.db.all("SELECT term, claims FROM claim_terms WHERE term IN ('secret', 'bill') ORDER BY term")).toEqual([
        { term: "bill", claims: 1 },
      ]);
      expect(o.db.first("SELECT claims, tokens FROM claim_corpus")).toEqual({ claims: 3, tokens: 16 });
    });
  });

  it("0022_claim_ranking copies every claim's candidate columns and moves its stored terms out of claim_stems", async () => {
    await inEmptyObject((o, storage) => {
      migrate(o.db, storage, before("0019_claim_stems"));
      const statements = ["Café naïve résumés in Ελλάδα", "billing invoices billing", "secret ledger"];
      statements.forEach((statement, i) => {
        o.db.run(
          `INSERT INTO claims (claim_id, subject_id, project_id, kind, statement, status, visibility, trust, version, valid_from,
            valid_to, superseded_by, disputes, author_id, created_at, updated_at, retention_excluded_at)
          VALUES (?, 's', NULL, 'fact', ?, ?, ?, 'medium', 1, 't', ?, NULL, '[]', 'prn_a', 't', 't', ?)`,
          `claim_${i}`,
          statement,
          i === 1 ? "revoked" : "active",
          i === 2 ? "private" : "team",
          i === 1 ? "2026-01-01T00:00:00.000Z" : null,
          i === 2 ? "2026-01-02T00:00:00.000Z" : null,
        );
        o.db.run(
          "INSERT INTO claims_fts (rowid, statement) SELECT seq, statement FROM claims WHERE claim_id = ?",
          `claim_${i}`,
        );
      });
      migrate(o.db, storage, upTo("0022_claim_ranking"));
      expect(o.db.all("SELECT claim_id, bytes, stems FROM claim_ranking ORDER BY seq")).toEqual(
        statements.map((statement, i) => ({
          claim_id: `claim_${i}`,
          bytes: new TextEncoder().encode(statement).length,
          stems: i === 0 ? null : stemsOf(statement).map(storedTerm).join(" "),
        })),
      );
      expect(o.db.first("SELECT name FROM sqlite_master WHERE name = 'claim_stems'")).toBeNull();
      // The copied columns match claims (rankingDrift compares today's copy: later migrations add columns to it).
      migrate(o.db, storage, ORG_MIGRATIONS);
      expect(rankingDrift(o.db)).toEqual([]);
    });
  });

  it("0021_tokenizer_parity recomputes what the old tokenizer stored for non-ASCII claims from claims_fts", async () => {
    await inEmptyObject((o, storage) => {
      migrate(o.db, storage, before("0021_tokenizer_parity"));
      // [statement, visibility, the claim_stems row the old tokenizer wrote (null: none, written before 0019)]
      const claims: [string, string, string | null][] = [
        ["Ελλάδα ſtate 한국어 billing", "team", "ελλαδα ſtate \u1112\u1161\u11ab\u1100\u116e\u11a8\u110b\u1165 bill"],
        ["the runners billing", "team", "the runner bill"],
        ["Ἀθῆναι naïve billing", "team", null],
        ["ΐ private billing", "private", "ι privat bill"],
      ];
      claims.forEach(([statement, visibility, stems], i) => {
        o.db.run(
          `INSERT INTO claims (claim_id, subject_id, project_id, kind, statement, status, visibility, trust, version, valid_from,
            valid_to, superseded_by, disputes, author_id, created_at, updated_at) VALUES (?, 's', NULL, 'fact', ?, 'active', ?, 'medium', 1,
            't', NULL, NULL, '[]', 'prn_a', 't', 't')`,
          `claim_${i}`,
          statement,
          visibility,
        );
        o.db.run(
          "INSERT INTO claims_fts (rowid, statement) SELECT seq, statement FROM claims WHERE claim_id = ?",
          `claim_${i}`,
        );
        if (stems !== null)
          o.db.run(
            "INSERT INTO claim_stems (seq, stems) SELECT seq, ? FROM claims WHERE claim_id = ?",
            stems,
            `claim_${i}`,
          );
      });
      // The statistics as the old tokenizer kept them: claim 0 counted its JavaScript terms.
      o.db.run("DELETE FROM claim_terms");
      o.db
        .run(`INSERT INTO claim_terms (term, claims) VALUES ('ελλαδα', 1), ('ſtate', 1), ('bill', 3), ('the', 1), ('runner', 1),
        ('ἀθῆναι', 1), ('naiv', 1)`);
      o.db.run(
        "INSERT INTO claim_corpus (id, claims, tokens) VALUES (1, 3, 10) ON CONFLICT (id) DO UPDATE SET claims = 3, tokens = 10",
      );
      migrate(o.db, storage, upTo("0021_tokenizer_parity"));
      // Non-ASCII rows now hold the index's terms, which the JavaScript tokenizer now agrees with;
      // a claim without a row keeps none (it is tokenized when read).
      const stored = (text: string) => stemsOf(text).map(storedTerm).join(" ");
      expect(
        o.db
          .all("SELECT s.stems FROM claims c LEFT JOIN claim_stems s ON s.seq = c.seq ORDER BY c.seq")
          .map((r) => (r as { stems: string | null }).stems),
      ).toEqual([stored(claims[0][0]), "the runner bill", null, stored(claims[3][0])]);
      expect(stored(claims[0][0])).toBe("ελλάδα state 한국어 bill");
      const shared = [claims[0][0], claims[1][0], claims[2][0]].map((t) => stemsOf(t).map(storedTerm));
      const expected = new Map<string, number>();
      for (const terms of shared) for (const t of new Set(terms)) expected.set(t, (expected.get(t) ?? 0) + 1);
      expect(
        Object.fromEntries(
          o.db
            .all<{ term: string; claims: number }>("SELECT term, claims FROM claim_terms")
            .map((r) => [r.term, r.claims]),
        ),
      ).toEqual(Object.fromEntries(expected));
      expect(o.db.first("SELECT claims, tokens FROM claim_corpus")).toEqual({
        claims: 3,
        tokens: shared.flat().length,
      });
      expect(o.db.all("SELECT name FROM sqlite_master WHERE name LIKE 'parity%'")).toEqual([]);
    });
    // An organization with ASCII statements only: the old tokenizer was right there, nothing is rewritten.
    await inEmptyObject((o, storage) => {
      migrate(o.db, storage, before("0021_tokenizer_parity"));
      o.db
        .run(`INSERT INTO claims (claim_id, subject_id, project_id, kind, statement, status, visibility, trust, version, valid_from,
          valid_to, superseded_by, disputes, author_id, created_at, updated_at) VALUES ('claim_a', 's', NULL, 'fact', 'billing runs', 'active',
          'team', 'medium', 1, 't', NULL, NULL, '[]', 'prn_a', 't', 't')`);
      o.db.run("INSERT INTO claims_fts (rowid, statement) SELECT seq, statement FROM claims");
      o.db.run("INSERT INTO claim_stems (seq, stems) SELECT seq, 'bill run' FROM claims");
      o.db.run("DELETE FROM claim_terms");
      o.db.run("INSERT INTO claim_terms (term, claims) VALUES ('bill', 7)");
      o.db.run(
        "INSERT INTO claim_corpus (id, claims, tokens) VALUES (1, 7, 70) ON CONFLICT (id) DO UPDATE SET claims = 7, tokens = 70",
      );
      migrate(o.db, storage, upTo("0021_tokenizer_parity"));
      expect(o.db.all("SELECT term, claims FROM claim_terms")).toEqual([{ term: "bill", claims: 7 }]);
      expect(o.db.first("SELECT claims, tokens FROM claim_corpus")).toEqual({ claims: 7, tokens: 70 });
    });
  });

  it("0028_event_workspaces gives existing events of workspace records their record's workspace", async () => {
    await inEmptyObject((o, storage) => {
      migrate(o.db, storage, before("0028_event_workspaces"));
      const t = "2026-01-01T00:00:00.000Z";
      o.db.run(
        "INSERT INTO workspaces (workspace_id, name, created_by, created_at) VALUES ('wsp_1', 'w', 'prn_a', ?)",
        t,
      );
      o.db.run(
        "INSERT INTO projects (project_id, reference, created_by, created_at, workspace_id) VALUES ('prj_w', 'w', 'prn_a', ?, 'wsp_1'), ('prj_o', 'o', 'prn_a', ?, NULL)",
        t,
        t,
      );
      for (const [id, project] of [
        ["obs_w", "prj_w"],
        ["obs_o", "prj_o"],
        ["obs_n", null],
      ])
        o.db.run(
          `INSERT INTO observations (observation_id, subject_id, project_id, kind, content, content_hash, source_type, trust, visibility,
            author_id, created_at, workspace_id) VALUES (?, 's', ?, 'note', 'x', 'h', 't', 'medium', 'team', 'prn_a', ?, ?)`,
          id,
          project,
          t,
          project === "prj_w" ? "wsp_1" : null,
        );
      for (const [id, project] of [
        ["claim_w", "prj_w"],
        ["claim_o", "prj_o"],
      ]) {
        o.db.run(
          `INSERT INTO claims (claim_id, subject_id, project_id, kind, statement, status, visibility, trust, version, valid_from,
            valid_to, superseded_by, disputes, author_id, created_at, updated_at, workspace_id)
          VALUES (?, 's', ?, 'fact', 'x', 'active', 'team', 'medium', 1, ?, NULL, NULL, '[]', 'prn_a', ?, ?, ?)`,
          id,
          project,
          t,
          t,
          t,
          project === "prj_w" ? "wsp_1" : null,
        );
        o.db.run("INSERT INTO claims_fts (rowid, statement) SELECT seq, statement FROM claims WHERE claim_id = ?", id);
      }
      const events: [string, string, string][] = [
        ["evt_1", "observation", "obs_w"],
        ["evt_2", "observation", "obs_o"],
        ["evt_3", "observation", "obs_n"],
        ["evt_4", "claim", "claim_w"],
        ["evt_5", "claim", "claim_o"],
        ["evt_6", "lease", "obs_w"],
        ["evt_7", "claim", "claim_gone"],
      ];
      for (const [id, type, resource] of events)
        o.db.run(
          `INSERT INTO events (event_id, kind, actor_id, resource_type, resource_id, payload, visibility, created_at)
          VALUES (?, 'k', 'prn_a', ?, ?, '{}', 'team', ?)`,
          id,
          type,
          resource,
          t,
        );
      migrate(o.db, storage, upTo("0028_event_workspaces"));
      expect(o.db.all("SELECT event_id, workspace_id FROM events ORDER BY seq")).toEqual([
        { event_id: "evt_1", workspace_id: "wsp_1" },
        { event_id: "evt_2", workspace_id: null },
        { event_id: "evt_3", workspace_id: null },
        { event_id: "evt_4", workspace_id: "wsp_1" },
        { event_id: "evt_5", workspace_id: null },
        { event_id: "evt_6", workspace_id: null },
        { event_id: "evt_7", workspace_id: null },
      ]);
    });
  });

  it("0030_webhook_retries starts each hook where the organization-wide background cursor stood, never before its registration", async () => {
    await inEmptyObject((o, storage) => {
      migrate(o.db, storage, before("0030_webhook_retries"));
      const t = "2026-01-01T00:00:00.000Z";
      for (const [id, fromSeq] of [
        ["whk_old", 3],
        ["whk_new", 20],
      ] as const)
        o.db.run(
          `INSERT INTO webhooks (webhook_id, url, secret, events, status, failure_count, created_by, from_seq, created_at, updated_at)
          VALUES (?, 'https://h.example.com/', 's', '["*"]', 'active', 0, 'prn_a', ?, ?, ?)`,
          id,
          fromSeq,
          t,
          t,
        );
      o.db.run("INSERT INTO org_meta (name, value) VALUES ('webhook_cursor', '12')");
      migrate(o.db, storage, upTo("0030_webhook_retries"));
      expect(o.db.all("SELECT webhook_id, scanned_seq FROM webhooks ORDER BY webhook_id")).toEqual([
        { webhook_id: "whk_new", scanned_seq: 20 },
        { webhook_id: "whk_old", scanned_seq: 12 },
      ]);
      expect(o.db.all("SELECT name FROM org_meta WHERE name = 'webhook_cursor'")).toEqual([]);
      expect(o.db.first("SELECT 1 AS ok FROM sqlite_master WHERE name = 'deliveries_due'")).toEqual({ ok: 1 });
    });
  });

  it("0032_federation_log_signed marks logged pushes signed and leaves earlier pulls unknown", async () => {
    await inEmptyObject((o, storage) => {
      migrate(o.db, storage, before("0032_federation_log_signed"));
      const t = "2026-01-01T00:00:00.000Z";
      o.db.run(
        `INSERT INTO federation_peers (peer_id, endpoint, shared_secret, direction, status, created_by, created_at)
        VALUES ('peer_1', 'https://p.example.com', 's', 'bidirectional', 'active', 'prn_a', ?)`,
        t,
      );
      for (const [id, operation] of [
        ["flog_pull", "pull"],
        ["flog_push", "push"],
      ])
        o.db.run(
          `INSERT INTO federation_log (log_id, peer_id, operation, counts, request_id, created_at)
          VALUES (?, 'peer_1', ?, '{"events":0,"success":0,"conflict":0,"rejected":0,"bundles":0}', 'req_1', ?)`,
          id,
          operation,
          t,
        );
      migrate(o.db, storage, upTo("0032_federation_log_signed"));
      expect(logPage(o.db, "peer_1", 0, 10).map((l) => [l.log_id, logView(l).signed])).toEqual([
        ["flog_pull", null],
        ["flog_push", true],
      ]);
    });
  });

  it("0033_webhook_failure_count starts active and paused hooks' counts again, and records why each failed delivery failed", async () => {
    await inEmptyObject((o, storage) => {
      migrate(o.db, storage, before("0033_webhook_failure_count"));
      const t = "2026-01-01T00:00:00.000Z";
      for (const [id, status, failures] of [
        ["whk_active", "active", 7],
        ["whk_paused", "paused", 3],
        ["whk_disabled", "disabled", 10],
      ] as const)
        o.db.run(
          `INSERT INTO webhooks (webhook_id, url, secret, events, status, failure_count, created_by, from_seq, created_at, updated_at)
          VALUES (?, 'https://h.example.com/', 's', '["*"]', ?, ?, 'prn_a', 0, ?, ?)`,
          id,
          status,
          failures,
          t,
          t,
        );
      for (const [id, status, attempts] of [
        ["dlv_out", "failed", 5],
        ["dlv_cut", "failed", 2],
        ["dlv_wait", "pending", 1],
        ["dlv_ok", "delivered", 1],
      ] as const)
        o.db.run(
          `INSERT INTO deliveries (delivery_id, webhook_id, event_id, status, attempts, created_at) VALUES (?, 'whk_disabled', ?, ?, ?, ?)`,
          id,
          `evt_${id}`,
          status,
          attempts,
          t,
        );
      migrate(o.db, storage, upTo("0033_webhook_failure_count"));
      expect(o.db.all("SELECT webhook_id, failure_count FROM webhooks ORDER BY webhook_id")).toEqual([
        { webhook_id: "whk_active", failure_count: 0 },
        { webhook_id: "whk_disabled", failure_count: 10 },
        { webhook_id: "whk_paused", failure_count: 0 },
      ]);
      expect(o.db.all("SELECT delivery_id, failure_reason FROM deliveries ORDER BY delivery_id")).toEqual([
        { delivery_id: "dlv_cut", failure_reason: "hook_disabled" },
        { delivery_id: "dlv_ok", failure_reason: null },
        { delivery_id: "dlv_out", failure_reason: "attempts_exhausted" },
        { delivery_id: "dlv_wait", failure_reason: null },
      ]);
      expect(o.db.first("SELECT 1 AS ok FROM sqlite_master WHERE name = 'deliveries_due_by_hook'")).toEqual({ ok: 1 });
    });
  });

  it("0037_disabled_hook_deliveries ends a disabled hook's waiting deliveries failed, and no other hook's", async () => {
    await inEmptyObject((o, storage) => {
      migrate(o.db, storage, before("0037_disabled_hook_deliveries"));
      const t = "2026-01-01T00:00:00.000Z";
      for (const [id, status] of [
        ["whk_active", "active"],
        ["whk_paused", "paused"],
        ["whk_disabled", "disabled"],
      ] as const)
        o.db.run(
          `INSERT INTO webhooks (webhook_id, url, secret, events, status, failure_count, created_by, from_seq, created_at, updated_at)
          VALUES (?, 'https://h.example.com/', 's', '["*"]', ?, 0, 'prn_a', 0, ?, ?)`,
          id,
          status,
          t,
          t,
        );
      for (const [id, hook, status] of [
        ["dlv_a", "whk_active", "pending"],
        ["dlv_p", "whk_paused", "pending"],
        ["dlv_d", "whk_disabled", "pending"],
        ["dlv_s", "whk_disabled", "sending"],
        ["dlv_ok", "whk_disabled", "delivered"],
      ] as const)
        o.db.run(
          `INSERT INTO deliveries (delivery_id, webhook_id, event_id, status, attempts, next_retry_at, created_at)
          VALUES (?, ?, ?, ?, 1, ?, ?)`,
          id,
          hook,
          `evt_${id}`,
          status,
          status === "pending" ? t : null,
          t,
        );
      migrate(o.db, storage, upTo("0037_disabled_hook_deliveries"));
      expect(
        o.db.all("SELECT delivery_id, status, next_retry_at, failure_reason FROM deliveries ORDER BY delivery_id"),
      ).toEqual([
        { delivery_id: "dlv_a", status: "pending", next_retry_at: t, failure_reason: null },
        { delivery_id: "dlv_d", status: "failed", next_retry_at: null, failure_reason: "hook_disabled" },
        { delivery_id: "dlv_ok", status: "delivered", next_retry_at: null, failure_reason: null },
        { delivery_id: "dlv_p", status: "pending", next_retry_at: t, failure_reason: null },
        { delivery_id: "dlv_s", status: "sending", next_retry_at: null, failure_reason: null },
      ]);
    });
  });

  it("0007_job_due_times makes nothing due in an organization without waiting work", async () => {
    await inEmptyObject((o, storage) => {
      migrate(o.db, storage, upTo("0007_job_due_times"));
      expect(o.db.all("SELECT name FROM org_meta")).toEqual([]);
    });
  });
});

describe("0027_reserved_record_ids_without_taken", () => {
  it("drops the dead taken column of a stocked reserve: untaken ids stay and are handed out, ids marked taken never are", async () => {
    await inEmptyObject((o, storage) => {
      migrate(o.db, storage, before("0027_reserved_record_ids_without_taken"));
      o.db.run(`INSERT INTO reserved_record_ids (record_id, prefix, taken) VALUES
        ('obs_free_1', 'obs_', 0), ('obs_marked', 'obs_', 1), ('claim_free', 'claim_', 0), ('obs_free_2', 'obs_', 0)`);
      migrate(o.db, storage, upTo("0027_reserved_record_ids_without_taken"));
      expect(o.db.all("SELECT name FROM pragma_table_info('reserved_record_ids') ORDER BY cid")).toEqual([
        { name: "record_id" },
        { name: "prefix" },
      ]);
      expect(o.db.all("SELECT record_id, prefix FROM reserved_record_ids ORDER BY record_id")).toEqual([
        { record_id: "claim_free", prefix: "claim_" },
        { record_id: "obs_free_1", prefix: "obs_" },
        { record_id: "obs_free_2", prefix: "obs_" },
      ]);
      // The take and the top-up work on the new shape.
      const taken = new Set<string>();
      const took = [
        takeReservedId(o.db, "obs_", taken),
        takeReservedId(o.db, "obs_", taken),
        takeReservedId(o.db, "obs_", taken),
      ];
      expect(took.slice(0, 2).sort()).toEqual(["obs_free_1", "obs_free_2"]);
      expect(took[2]).toBeNull();
      expect([...taken].sort()).toEqual(["obs_free_1", "obs_free_2"]);
      expect(o.db.all("SELECT record_id FROM reserved_record_ids")).toEqual([{ record_id: "claim_free" }]);
    });
  });
});

describe("0024_observations_by_project_whole", () => {
  it("indexes project-less observations too, so unscoped references read only those (not every observation)", async () => {
    const { newOrg, appendOk, obs, call } = await import("./helpers");
    const org = await newOrg();
    const p = await call("POST", "/v1/projects/resolve", {
      key: org.api_key,
      body: { reference: "whole-index", create: true },
    });
    expect(p.status, p.text).toBe(201);
    await appendOk(org.api_key, obs("s", "no project"));
    for (let i = 0; i < 30; i++)
      await appendOk(org.api_key, obs("s", `in the project ${i}`, { project_id: p.json.data.project_id }));
    await inOrg(org.org_id, (o) => {
      const plan = o.db.all<{ detail: string }>(
        "EXPLAIN QUERY PLAN SELECT 1 FROM observations o WHERE o.project_id IS NULL ORDER BY o.created_at",
      );
      expect(plan.map((r) => r.detail).join(" | ")).toMatch(
        /USING (COVERING )?INDEX observations_by_project \(project_id=\?\)/,
      );
      const cur = o.db.sql.exec("SELECT count(*) AS n FROM observations o WHERE o.project_id IS NULL");
      expect(cur.toArray()).toEqual([{ n: 1 }]);
      expect(cur.rowsRead).toBeLessThan(5);
    });
  });
});
