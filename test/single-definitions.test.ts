// Rules declared once and used everywhere (field shapes in src/http/validate.ts and shapes.ts, id
// prefixes in src/http/ids.ts, the injected clock, ...): these tests pin the one definition and show
// that the places which had their own copy now follow it.
import { describe, expect, it } from "vitest";
import { applyEnrichment, enrichmentPosition } from "../src/domains/indexing/enrichment";
import { claimsForIndex, currentClaimsAfter, indexDrift } from "../src/domains/indexing/service";
import { clock } from "../src/http/clock";
import { ID_PREFIX, isId, newId } from "../src/http/ids";
import { ID_FORMS } from "../src/http/router";
import { idOf } from "../src/http/shapes";
import { projectLine } from "../src/domains/portability/schema";
import { intRange, limitParam, validate } from "../src/http/validate";
import { modelConfigResponse } from "../src/domains/models/schema";
import { readModelConfig } from "../src/vector/config";
import { modelDeps } from "../src/vector/runtime";
import { EMBEDDING_PROVIDERS, EXTRACTION_PROVIDERS, INDEX_PROVIDERS } from "../src/vector/types";
import { appendOk, call, consolidateOk, expectError, inOrg, newOrg, obs, supports } from "./helpers";

const message = (r: ReturnType<typeof validate>) => (r.success ? null : r.message);

describe("bounded integers: one rule and one wording", () => {
  it("intRange takes integers within the bounds, refuses anything else with the same message", () => {
    const body = intRange(1, 100);
    expect(validate(body, 1)).toEqual({ success: true, data: 1 });
    expect(validate(body, 100)).toEqual({ success: true, data: 100 });
    for (const bad of [0, 101, 2.5, "5", null, true])
      expect(message(validate(body, bad)), JSON.stringify(bad)).toBe(
        'Invalid field "body": must be an integer from 1 to 100.',
      );
  });

  it("limitParam is the same rule over query text, with its default", () => {
    const q = limitParam(1, 200, 50);
    expect(validate(q, "7", "query")).toEqual({ success: true, data: 7 });
    expect(validate(q, undefined, "query")).toEqual({ success: true, data: 50 });
    for (const bad of ["0", "201", "2.5", "many"])
      expect(message(validate(q, bad, "query")), bad).toBe('Invalid field "query": must be an integer from 1 to 200.');
  });

  it("every domain that takes a bounded integer in a body answers with the shared wording", async () => {
    const org = await newOrg();
    const cases: [string, Record<string, unknown>, string][] = [
      ["/v1/index/drain", { limit: "ten" }, 'Invalid field "limit": must be an integer from 1 to 100.'],
      ["/v1/enrichment/drain", { limit: 51 }, 'Invalid field "limit": must be an integer from 1 to 50.'],
      [
        "/v1/leases",
        { resource_type: "r", resource_id: "1", ttl_seconds: "60" },
        'Invalid field "ttl_seconds": must be an integer from 10 to 86400.',
      ],
      ["/v1/webhooks/deliver", { limit: 0 }, 'Invalid field "limit": must be an integer from 1 to 200.'],
    ];
    for (const [path, body, expected] of cases) {
      const r = await call("POST", path, { key: org.api_key, body });
      expectError(r, 400, "VALIDATION_ERROR");
      expect(r.json.error.message, path).toBe(expected);
    }
  });
});

describe("id prefixes: every one in ID_PREFIX", () => {
  it("the prefixes are distinct and of one form", () => {
    const prefixes = Object.values(ID_PREFIX);
    expect(new Set(prefixes).size).toBe(prefixes.length);
    for (const p of prefixes) expect(p).toMatch(/^[a-z]+_$/);
  });

  it("each :id path segment accepts the ids of exactly one ID_PREFIX entry", () => {
    for (const [collection, accepts] of Object.entries(ID_FORMS)) {
      if (collection === "projects" || collection === "subjects") continue; // "~" and caller-chosen strings
      const matching = Object.entries(ID_PREFIX)
        .filter(([, p]) => accepts(newId(p)))
        .map(([name]) => name);
      expect(matching, collection).toHaveLength(1);
    }
  });

  it("enrichment proposals are written with ID_PREFIX.proposal", async () => {
    const org = await newOrg();
    const observationId = await appendOk(org.api_key, obs("whale", "narwhals have tusks"));
    const ids = await inOrg(org.org_id, (x) =>
      applyEnrichment(
        x.db,
        {
          from: enrichmentPosition(x.db),
          lastSeq: 1,
          observations: 1,
          model: "test",
          proposals: [
            {
              observation_id: observationId,
              subject_id: "whale",
              claim: { kind: "fact", statement: "narwhals have tusks" },
            },
          ],
        },
        new Date().toISOString(),
      ),
    );
    expect(ids).toHaveLength(1);
    expect(isId(ID_PREFIX.proposal, ids![0])).toBe(true);
  });
});

describe("the model configuration snapshot reads the injected clock", () => {
  it("read_at is the service clock's time when the snapshot is taken", () => {
    const tenDays = 10 * 86_400_000;
    clock.advance(tenDays);
    const before = clock.nowIso();
    // A fresh env object: the snapshot is memoized per env, so this one is read now.
    const { read_at } = modelDeps({ EMBEDDING_PROVIDER: "none", VECTOR_INDEX: "none" }).config;
    expect(read_at >= before && read_at <= clock.nowIso()).toBe(true);
  });
});

describe("index drift: one statement in the module that owns indexed_records", () => {
  it("counts every indexed record, and those with another model or dimension count", async () => {
    const org = await newOrg();
    const at = new Date().toISOString();
    const counts = await inOrg(org.org_id, (x) => {
      const row = (id: string, model: string, dims: number) =>
        x.db.run(
          "INSERT INTO indexed_records (record_id, model, dimensions, indexed_at) VALUES (?, ?, ?, ?)",
          id,
          model,
          dims,
          at,
        );
      const empty = indexDrift(x.db, { model: "m1", dimensions: 384 });
      row("claim_a", "m1", 384);
      row("claim_b", "m1", 384);
      row("claim_c", "m0", 384);
      row("claim_d", "m1", 768);
      return {
        empty,
        now: indexDrift(x.db, { model: "m1", dimensions: 384 }),
        none: indexDrift(x.db, { model: null, dimensions: null }),
      };
    });
    expect(counts.empty).toEqual({ indexed: 0, other: 0 });
    expect(counts.now).toEqual({ indexed: 4, other: 2 });
    // No embedder configured: everything indexed is from another model.
    expect(counts.none).toEqual({ indexed: 4, other: 4 });
  });
});

describe("model providers: one list each, read by the configuration and published by its schema", () => {
  it("every configurable provider is accepted by the snapshot and by GET /v1/models/config's schema", () => {
    for (const EMBEDDING_PROVIDER of EMBEDDING_PROVIDERS)
      for (const VECTOR_INDEX of INDEX_PROVIDERS)
        for (const EXTRACTION_PROVIDER of EXTRACTION_PROVIDERS) {
          const config = readModelConfig(
            { EMBEDDING_PROVIDER, VECTOR_INDEX, EXTRACTION_PROVIDER, AI: {}, VECTORIZE: {} },
            new Date().toISOString(),
          );
          const what = `${EMBEDDING_PROVIDER}/${VECTOR_INDEX}/${EXTRACTION_PROVIDER}`;
          expect([config.embedding.provider, config.vector_index.provider, config.extraction.provider], what).toEqual([
            EMBEDDING_PROVIDER,
            VECTOR_INDEX,
            EXTRACTION_PROVIDER,
          ]);
          expect(modelConfigResponse.safeParse({ ...config, drift: { status: "none" } }).success, what).toBe(true);
        }
    // Anything else is reported and treated as none.
    expect(readModelConfig({ EMBEDDING_PROVIDER: "openai" }, new Date().toISOString()).embedding).toMatchObject({
      provider: "none",
      problems: [
        'EMBEDDING_PROVIDER "openai" is not one of workers-ai, local, openai-compatible, none; treated as none',
      ],
    });
  });
});

describe("the index drain's system reads use retrievable's current rule, at the instant they are given", () => {
  it("a claim valid until T is current before T and not at T (claimsForIndex, currentClaimsAfter)", async () => {
    const org = await newOrg();
    const until = new Date(Date.now() + 3_600_000).toISOString();
    const [claimId] = await consolidateOk(org.api_key, "tide", [
      {
        kind: "fact",
        statement: "tide is high",
        valid_to: until,
        sources: supports(await appendOk(org.api_key, obs("tide", "high"))),
      },
    ]);
    const before = new Date(Date.parse(until) - 1).toISOString();
    const seen = await inOrg(org.org_id, (x) => ({
      before: claimsForIndex(x.db, [claimId], before).map((c) => Boolean(c.current)),
      at: claimsForIndex(x.db, [claimId], until).map((c) => Boolean(c.current)),
      pageBefore: currentClaimsAfter(x.db, 0, 10, before).map((c) => c.claim_id),
      pageAt: currentClaimsAfter(x.db, 0, 10, until).map((c) => c.claim_id),
    }));
    expect(seen).toEqual({ before: [true], at: [false], pageBefore: [claimId], pageAt: [] });
  });
});

describe("id shapes: one idOf for answers and for input that must teach", () => {
  it("an input id names its kind and form; an answer's id shape only checks the form", () => {
    expect(message(validate(idOf(ID_PREFIX.claim, "claim"), "claim_xyz"))).toBe(
      'Invalid field "body": must be a claim id (claim_ + 32 lowercase hex).',
    );
    expect(validate(idOf(ID_PREFIX.claim), newId(ID_PREFIX.claim)).success).toBe(true);
    expect(validate(idOf(ID_PREFIX.claim), newId(ID_PREFIX.observation)).success).toBe(false);
    // The import format uses it (src/domains/portability/schema.ts), as does federation's.
    expect(message(validate(projectLine, { type: "project", project_id: "prj_1" }))).toContain(
      'Invalid field "project_id": must be a project id (prj_ + 32 lowercase hex).',
    );
  });
});
