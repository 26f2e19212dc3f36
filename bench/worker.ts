// Bench-only Worker (see bench/wrangler.toml). Serves the product unchanged through its own front
// Worker, and adds what `npm run bench` needs to compare against and to look inside with:
// - POST /__bench/bare: the request body inserted as one row by a bare SQLite Durable Object, nothing
//   else (no auth, no validation, no event or audit): the floor the platform sets for an append.
// - POST /__bench/bare-d1: the same behind the product's one D1 credential lookup (Bearer key).
// - /__bench/cached/<product path>: the product's Worker with its credential lookup memoized (what a
//   front-Worker cache of key -> organization would give).
// - POST /__bench/timed: { key, method, path, query?, body? } dispatched straight to the
//   organization's Durable Object (after the same credential lookup), answering how long the
//   dispatch took inside the object (`inside_ms`) and as the calling Worker saw it (`rpc_ms`).
// - POST /__bench/sql: { key, sql, args?, reps? } one read-only statement run inside the org's
//   Durable Object `reps` times (for looking into where compile time goes).
// - POST /__bench/age: { key, days } moves every observation's and claim's created_at back by `days`
//   (retention apply needs old records; the product never rewrites created_at).
// - POST /__bench/profile: { key, bodies, reps? } compile's phases (vector query, rankClaims' marks, pack, JSON)
//   timed inside the org's Durable Object, mean ms per compile.
// - GET /__bench/clock: whether the clock advances during synchronous work in this runtime.
// - POST /__bench/vector-stats: { key } the org's local vector index: its counters (queries, copy hits,
//   loads, refusals above the bound, rows scanned, ids passed to the read rule), the bytes its copy
//   holds, its bound and the vectors in its table; and the isolate's stem memo (fts.ts) counters.
// None of this is part of the product's route table (src/routes.ts).
import { DurableObject } from "cloudflare:workers";
import { bearerToken, hashKey } from "../src/auth/credentials";
import type { EdgeEnv } from "../src/env";
import { routeId } from "../src/org/route";
import { buildMatcher } from "../src/http/router";
import { orgForCredential } from "../src/index-db";
import { compilePack } from "../src/domains/memory/compile";
import type { CompileFilters } from "../src/domains/memory/ranking";
import { loadCaller } from "../src/domains/identity/store";
import { vectorHits } from "../src/domains/memory/vector-candidates";
import { getMeta } from "../src/org/meta";
import { runtimeFor } from "../src/vector/runtime";
import { localIndexFor } from "../src/vector/local-index";
import { stemMemo } from "../src/domains/memory/fts";
import { Db } from "../src/sql/db";
import type { DispatchInput } from "../src/env";
import { OrgStore } from "../src/OrgStore";
export { IdRegistry } from "../src/registry/IdRegistry";
import { REGISTRY_SHARDS } from "../src/registry/shards";
import { ROUTES } from "../src/routes";
import { handle } from "../src/worker";

type BenchEnv = Omit<EdgeEnv, "ORG"> & {
  ORG: DurableObjectNamespace<BenchOrgStore>;
  BARE: DurableObjectNamespace<BareInsert>;
};

/** The product's org Durable Object, plus a dispatch timed from inside the object. */
export class BenchOrgStore extends OrgStore {
  async timedDispatch(
    input: DispatchInput,
  ): Promise<{ inside_ms: number; ok: boolean; status: number; items?: number }> {
    const t0 = performance.now();
    const result = await this.dispatch(input);
    const inside = performance.now() - t0;
    const data = result.ok ? (result.data as { items?: unknown[] } | undefined) : undefined;
    return { inside_ms: inside, ok: result.ok, status: result.ok ? result.status : 0, items: data?.items?.length };
  }

  /** Bench-only: age every memory record by `days` (retention apply measures over old records). */
  ageRecords(days: number): { observations: number; claims: number } {
    const shift = `-${days} days`;
    const sql = this.ctx.storage.sql;
    sql.exec("UPDATE observations SET created_at = strftime('%Y-%m-%dT%H:%M:%fZ', created_at, ?)", shift);
    sql.exec("UPDATE claims SET created_at = strftime('%Y-%m-%dT%H:%M:%fZ', created_at, ?)", shift);
    // Counted, not rowsWritten (which also counts index entries).
    const count = (table: string) => sql.exec<{ n: number }>(`SELECT count(*) AS n FROM ${table}`).one().n;
    return { observations: count("observations"), claims: count("claims") };
  }

  /**
   * Bench-only (footprint): this organization's SQLite size in bytes, after optionally copying its
   * newest event or audit entry `copies` times (fresh ids), to measure what one more row costs.
   */
  footprint(copy?: { table: "events" | "audit_log"; copies: number }): { bytes: number } {
    const statement =
      copy?.table === "events"
        ? `INSERT INTO events (event_id, kind, actor_id, resource_type, resource_id, payload, visibility, created_at)
         SELECT 'evt_' || lower(hex(randomblob(16))), kind, actor_id, resource_type, resource_id, payload, visibility, created_at
         FROM events ORDER BY rowid DESC LIMIT 1`
        : `INSERT INTO audit_log (audit_id, action, actor_id, key_id, resource_type, resource_id, request_id, detail, created_at, prev_hash, entry_hash)
         SELECT 'aud_' || lower(hex(randomblob(16))), action, actor_id, key_id, resource_type, resource_id, request_id, detail, created_at,
           prev_hash, entry_hash
         FROM audit_log ORDER BY rowid DESC LIMIT 1`;
    if (copy)
      this.ctx.storage.transactionSync(() => {
        for (let i = 0; i < copy.copies; i++) this.db.run(statement);
      });
    return { bytes: this.ctx.storage.sql.databaseSize };
  }

  /**
   * Bench-only profile of compile: for each body, `reps` times with the caller of `key`, the vector
   * query the route runs first (embedding + authorized kNN, `vectorHits`; nothing when vectors are off
   * or the query embeds to zero), then rank and pack with its hits, summing the time of each phase of
   * rankClaims, then the pack and the response's JSON.
   */
  async profileCompile(key: string, bodies: CompileFilters[], reps: number): Promise<Record<string, number>> {
    const caller = loadCaller(this.db, hashKey(key));
    if (!caller) throw new Error("unknown key");
    const rt = runtimeFor({ deps: this.deps, db: this.db, orgId: getMeta(this.db, "org_id") ?? undefined });
    const total: Record<string, number> = {};
    for (let r = 0; r < reps; r++)
      for (const body of bodies) {
        let t = performance.now();
        const mark = (phase: string) => {
          const now = performance.now();
          total[phase] = (total[phase] ?? 0) + now - t;
          t = now;
        };
        const vectors = await vectorHits(rt, this.db, caller, body);
        mark("vector query (embed + kNN)");
        const { items } = compilePack(this.db, caller, body, 1000, 50, mark, vectors ?? undefined);
        JSON.stringify(
          items.map((i) => ({
            claim_id: i.claim.claim_id,
            statement: i.claim.statement,
            score: i.score,
            tokens: i.tokens,
          })),
        );
        mark("pack + JSON");
      }
    const n = reps * bodies.length;
    const out = Object.fromEntries(Object.entries(total).map(([k, v]) => [k, v / n]));
    // One more pass, untimed, through a Db that counts the rows SQLite reads (cursor.rowsRead): the
    // vector query's read-rule reads and compile's, not the index's in-memory rows (vector-stats has those).
    let rowsRead = 0;
    const counting = new Db(
      new Proxy(this.db.sql, {
        get: (t, k) =>
          k === "exec"
            ? (...a: Parameters<SqlStorage["exec"]>) => {
                const cur = t.exec(...a);
                const rows = [...cur.raw()];
                rowsRead += cur.rowsRead;
                return { columnNames: cur.columnNames, raw: () => rows.values() };
              }
            : Reflect.get(t, k, t),
      }),
    );
    for (const body of bodies) {
      const vectors = await vectorHits(rt, counting, caller, body);
      compilePack(counting, caller, body, 1000, 50, () => {}, vectors ?? undefined);
    }
    return { ...out, "SQLite rows read per compile": rowsRead / bodies.length };
  }

  /** Bench-only: the local vector index's counters and what it holds (see /__bench/vector-stats). */
  vectorStats(): Record<string, number> {
    const index = localIndexFor(this.db);
    const dims =
      runtimeFor({ deps: this.deps, db: this.db, orgId: getMeta(this.db, "org_id") ?? undefined }).embedder
        ?.dimensions ?? 0;
    return {
      ...index.stats,
      heldBytes: index.heldBytes(),
      bound: index.bound(dims),
      vectors: index.vectors(dims),
      dimensions: dims,
      stemHits: stemMemo.hits,
      stemMisses: stemMemo.misses,
      stemClears: stemMemo.clears,
      stemBound: stemMemo.bound,
    };
  }

  /** Bench-only probe: run one read-only statement `reps` times inside the object; total ms. */
  probeSql(query: string, args: unknown[], reps: number): { ms: number; rows: number; first: unknown } {
    let rows: unknown[] = [];
    const t0 = performance.now();
    for (let i = 0; i < reps; i++) rows = this.db.all(query, ...args);
    return { ms: performance.now() - t0, rows: rows.length, first: rows[0] ?? null };
  }
}

/** One table, one insert per request. */
export class BareInsert extends DurableObject {
  constructor(ctx: DurableObjectState, env: unknown) {
    super(ctx, env as never);
    ctx.storage.sql.exec(
      "CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL, created_at TEXT NOT NULL)",
    );
  }

  insert(body: string): number {
    return this.ctx.storage.sql
      .exec<{ id: number }>(
        "INSERT INTO rows (body, created_at) VALUES (?, ?) RETURNING id",
        body,
        new Date().toISOString(),
      )
      .one().id;
  }

  count(): number {
    return this.ctx.storage.sql.exec<{ n: number }>("SELECT count(*) AS n FROM rows").one().n;
  }
}

const match = buildMatcher(ROUTES);

/**
 * The product's D1 index with the credential -> organization lookup memoized in this isolate: what a
 * front-Worker credential cache would save (bench-only; the org Durable Object still checks the key
 * row on every request, so revocation would stay immediate).
 */
const orgByKeyHash = new Map<string, unknown>();
function cachingIndex(db: D1Database): D1Database {
  return new Proxy(db, {
    get(target, prop) {
      if (prop === "withSession")
        return (constraint?: string) => cachingIndex(target.withSession(constraint) as unknown as D1Database);
      if (prop === "prepare")
        return (query: string) => {
          const stmt = target.prepare(query);
          if (!/FROM credentials WHERE key_hash = \?/.test(query)) return stmt;
          return {
            bind: (...values: unknown[]) => ({
              first: async () => {
                const k = String(values[0]);
                if (orgByKeyHash.has(k)) return orgByKeyHash.get(k);
                const row = await stmt.bind(...values).first();
                if (row) orgByKeyHash.set(k, row);
                return row;
              },
            }),
          };
        };
      const v = Reflect.get(target, prop);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}
const json = (status: number, data: unknown) =>
  new Response(JSON.stringify(data), { status, headers: { "content-type": "application/json" } });

async function timed(request: Request, env: BenchEnv): Promise<Response> {
  const spec = (await request.json()) as {
    key: string;
    method: string;
    path: string;
    query?: Record<string, string>;
    body?: unknown;
  };
  const url = new URL(spec.path, "http://bench");
  for (const [k, v] of Object.entries(spec.query ?? {})) url.searchParams.set(k, v);
  const m = await match(new Request(url, { method: spec.method }), url);
  if (m.kind !== "route" || m.route.auth !== "key") return json(404, { error: "not an org route" });
  const keyHash = hashKey(spec.key);
  const orgId = await orgForCredential(env.INDEX_DB, keyHash);
  if (!orgId) return json(401, { error: "unknown key" });
  const stub = env.ORG.get(env.ORG.idFromName(orgId));
  const t0 = performance.now();
  const r = await stub.timedDispatch({
    orgId,
    routeId: routeId(m.route),
    params: m.params,
    query: Object.fromEntries(url.searchParams),
    bodyText: spec.body === undefined ? null : JSON.stringify(spec.body),
    idempotencyKey: null,
    keyHash,
    requestId: "req_" + "0".repeat(32),
    headers: { "content-type": "application/json" },
  } as DispatchInput);
  return json(200, { ...r, rpc_ms: performance.now() - t0 });
}

export default {
  async fetch(request: Request, env: BenchEnv): Promise<Response> {
    const url = new URL(request.url);
    if (url.pathname === "/__bench/bare" && request.method === "POST") {
      const body = await request.text();
      const id = await env.BARE.get(env.BARE.idFromName("bare")).insert(body);
      return json(201, { data: { id } });
    }
    if (url.pathname === "/__bench/bare-d1" && request.method === "POST") {
      // The bare insert behind the product's one D1 credential lookup: what the lookup alone costs.
      const body = await request.text();
      const token = bearerToken(request.headers.get("authorization"));
      const orgId = token ? await orgForCredential(env.INDEX_DB, hashKey(token)) : null;
      if (!orgId) return json(401, { error: "unknown key" });
      const id = await env.BARE.get(env.BARE.idFromName("bare")).insert(body);
      return json(201, { data: { id } });
    }
    if (url.pathname === "/__bench/bare/count")
      return json(200, { n: await env.BARE.get(env.BARE.idFromName("bare")).count() });
    if (url.pathname === "/__bench/timed" && request.method === "POST") return timed(request, env);
    if (url.pathname.startsWith("/__bench/cached/")) {
      const inner = new URL(url.pathname.slice("/__bench/cached".length) + url.search, url.origin);
      return handle(new Request(inner, request), {
        ...env,
        INDEX_DB: cachingIndex(env.INDEX_DB),
      } as unknown as EdgeEnv);
    }
    if (url.pathname === "/__bench/sql" && request.method === "POST") {
      const spec = (await request.json()) as { key: string; sql: string; args?: unknown[]; reps?: number };
      if (!/^\s*(SELECT|WITH)\b/i.test(spec.sql)) return json(400, { error: "read-only statements only" });
      const orgId = await orgForCredential(env.INDEX_DB, hashKey(spec.key));
      if (!orgId) return json(401, { error: "unknown key" });
      return json(
        200,
        await env.ORG.get(env.ORG.idFromName(orgId)).probeSql(spec.sql, spec.args ?? [], spec.reps ?? 1),
      );
    }
    if (url.pathname === "/__bench/age" && request.method === "POST") {
      const spec = (await request.json()) as { key: string; days: number };
      const orgId = await orgForCredential(env.INDEX_DB, hashKey(spec.key));
      if (!orgId) return json(401, { error: "unknown key" });
      return json(200, await env.ORG.get(env.ORG.idFromName(orgId)).ageRecords(spec.days));
    }

    if (url.pathname === "/__bench/footprint" && request.method === "POST") {
      const spec = (await request.json()) as { key: string; copy?: { table: "events" | "audit_log"; copies: number } };
      const orgId = await orgForCredential(env.INDEX_DB, hashKey(spec.key));
      if (!orgId) return json(401, { error: "unknown key" });
      return json(200, await env.ORG.get(env.ORG.idFromName(orgId)).footprint(spec.copy));
    }
    if (url.pathname === "/__bench/registry-entry" && request.method === "POST") {
      // Bytes per registry row: claim n synthetic ids in ONE shard (ids:ff), measure, release them.
      const n = Number(url.searchParams.get("n") ?? 2000);
      const shard = env.ID_REGISTRY.get(env.ID_REGISTRY.idFromName("ids:ff"));
      const org = "org_" + "b".repeat(32);
      const ids = Array.from(
        { length: n },
        () =>
          "obs_ff" +
          [...crypto.getRandomValues(new Uint8Array(15))].map((b) => b.toString(16).padStart(2, "0")).join(""),
      );
      const before = (await shard.size()).bytes;
      for (let i = 0; i < n; i += 500) await shard.claim(org, ids.slice(i, i + 500), new Date().toISOString());
      const after = (await shard.size()).bytes;
      await shard.release(org, ids);
      return json(200, { bytes_per_entry: (after - before) / n });
    }
    if (url.pathname === "/__bench/registry-size") {
      // Every registry shard's rows and bytes, summed (wakes all 256 shards: bench only).
      const sizes = await Promise.all(
        Array.from({ length: REGISTRY_SHARDS }, (_, i) =>
          env.ID_REGISTRY.get(env.ID_REGISTRY.idFromName(`ids:${i.toString(16).padStart(2, "0")}`)).size(),
        ),
      );
      return json(200, { rows: sizes.reduce((n, s) => n + s.rows, 0), bytes: sizes.reduce((n, s) => n + s.bytes, 0) });
    }

    if (url.pathname === "/__bench/profile" && request.method === "POST") {
      const spec = (await request.json()) as { key: string; bodies: CompileFilters[]; reps?: number };
      const orgId = await orgForCredential(env.INDEX_DB, hashKey(spec.key));
      if (!orgId) return json(401, { error: "unknown key" });
      return json(
        200,
        await env.ORG.get(env.ORG.idFromName(orgId)).profileCompile(spec.key, spec.bodies, spec.reps ?? 1),
      );
    }
    if (url.pathname === "/__bench/vector-stats" && request.method === "POST") {
      const spec = (await request.json()) as { key: string };
      const orgId = await orgForCredential(env.INDEX_DB, hashKey(spec.key));
      if (!orgId) return json(401, { error: "unknown key" });
      return json(200, await env.ORG.get(env.ORG.idFromName(orgId)).vectorStats());
    }
    if (url.pathname === "/__bench/clock") {
      const t0 = performance.now();
      let x = 0;
      for (let i = 0; i < 5_000_000; i++) x += i % 7;
      return json(200, { spin_ms: performance.now() - t0, x });
    }
    return handle(request, env as unknown as EdgeEnv);
  },
} satisfies ExportedHandler<BenchEnv>;
