// The planning arithmetic on fixed inputs (npm run plan).
import assert from "node:assert/strict";
import { test } from "node:test";
import { GB, fmtDuration, plan, VECTOR_BYTES_PER_CLAIM } from "../plan-lib.mjs";

const footprint = {
  bytes: { observation: 600, claim: 400, event: 250, audit_entry: 250, registry_entry: 100 },
  appends_per_second_one_org: 500,
};

test("storage per organization, time to 10 GB, registry and D1", () => {
  const p = plan({ orgs: 1000, recordsPerOrg: 1_000_000, writesPerSecond: 10, vectorDimensions: 0 }, footprint);
  // (0.5 * 600 + 0.5 * 400) + 250 + 250 = 1000 bytes per record (no vectors).
  assert.equal(p.bytesPerRecord, 1000);
  assert.equal(p.orgBytes, 1 * GB);
  // 9 GB of room at 10 records/s * 1000 B = 900,000 s.
  assert.equal(p.orgFullSeconds, 900_000);
  assert.equal(p.registryRows, 1e9);
  assert.equal(p.registryBytes, 100 * GB);
  assert.equal(p.registryWrites, 10_000);
  // max(100 GB / 10 GB, 10,000/s / 1,000/s) = 10.
  assert.equal(p.registryShardsNeeded, 10);
  // Per shard: 100 GB / 256 now, growing 10,000 * 100 / 256 B/s.
  assert.equal(Math.round(p.shardFullSeconds), Math.round((10 * GB - (100 * GB) / 256) / ((10_000 * 100) / 256)));
  // 1000 orgs * (org + 5 keys + 1 username) * 200 B; 1000 * 20 logins a day.
  assert.equal(p.d1Bytes, 1_400_000);
  assert.ok(Math.abs(p.d1WritesPerSecond - 20_000 / 86_400) < 1e-12);
  assert.equal(p.vectorIndexesNeeded, 50); // 5e8 claims / 10M vectors per index
  assert.match(p.first.limit, /Vectorize/);
  assert.equal(p.first.seconds, 0);
});

test("the organization's storage is hit first when one organization grows fast", () => {
  const p = plan(
    { orgs: 10, recordsPerOrg: 5_000_000, writesPerSecond: 100, vectorIndexes: 3, vectorDimensions: 0 },
    footprint,
  );
  assert.equal(p.orgBytes, 5 * GB);
  assert.equal(p.orgFullSeconds, 50_000); // 5 GB left at 100 kB/s
  assert.match(p.first.limit, /one organization's storage/);
  assert.equal(fmtDuration(p.first.seconds), "13.9 hours");
});

test("a write rate above what one organization takes is hit at once; nothing is hit when idle", () => {
  assert.match(plan({ orgs: 1, recordsPerOrg: 0, writesPerSecond: 600 }, footprint).first.limit, /write rate/);
  const idle = plan({ orgs: 1, recordsPerOrg: 1000, writesPerSecond: 0 }, footprint);
  assert.equal(idle.first, null);
  assert.equal(idle.orgFullSeconds, Infinity);
  assert.equal(fmtDuration(Infinity), "never at these rates");
});

test("a claim's vector adds its mirror row and index row: 663 B at 384 dimensions, 369 at 100", () => {
  const at = (vectorDimensions) =>
    plan({ orgs: 1, recordsPerOrg: 1000, writesPerSecond: 0, vectorDimensions }, footprint).bytesPerRecord;
  assert.deepEqual(VECTOR_BYTES_PER_CLAIM, { 384: 663, 100: 369 });
  assert.equal(at(0), 1000);
  assert.equal(at(384), 1000 + 0.5 * 663);
  assert.equal(at(100), 1000 + 0.5 * 369);
  assert.equal(plan({ orgs: 1, recordsPerOrg: 1000, writesPerSecond: 0 }, footprint).bytesPerRecord, at(384)); // production's by default
  assert.throws(() => at(768), /no measured vector size/);
});

test("one organization's ceilings: the size each is reached at, and the first for a tenant of a given size", () => {
  // 1331.5 B per record (with vectors): 10 GB at 7.51M records; 10M claims (a half of the records) at 20M records.
  const p = plan({ orgs: 100, recordsPerOrg: 1_000_000, writesPerSecond: 10 }, footprint);
  const [storage, vectors, rate, namespaces] = p.orgCeilings;
  assert.match(storage.ceiling, /Durable Object storage/);
  assert.equal(storage.records, (10 * GB) / 1331.5);
  assert.equal(storage.seconds, p.orgFullSeconds);
  assert.match(vectors.ceiling, /Vectorize vectors per index/);
  assert.equal(vectors.records, 20_000_000);
  assert.equal(vectors.seconds, (10_000_000 - 500_000) / 5); // 5 claims/s
  assert.equal(rate.records, null);
  assert.equal(rate.seconds, Infinity);
  assert.equal(namespaces.seconds, Infinity);
  assert.equal(p.orgFirst, storage);

  // Claims only, small rows, nothing written: the Vectorize index is the first wall by size (10M < 11.6M).
  const lean = {
    bytes: { observation: 100, claim: 100, event: 50, audit_entry: 50, registry_entry: 100 },
    appends_per_second_one_org: 500,
  };
  const q = plan({ orgs: 1, recordsPerOrg: 12_000_000, writesPerSecond: 0, claimShare: 1 }, lean);
  assert.match(q.orgFirst.ceiling, /Vectorize vectors per index/);
  assert.equal(q.orgFirst.records, 10_000_000);
  assert.equal(q.orgCeilings[1].seconds, 0); // a tenant of 12M claims is past it already
  assert.equal(q.orgCeilings[0].records, (10 * GB) / (100 + 663 + 100));

  // A rate the object does not take comes first, whatever the size; so do too many organizations for the indexes.
  assert.match(plan({ orgs: 1, recordsPerOrg: 10, writesPerSecond: 600 }, footprint).orgFirst.ceiling, /write rate/);
  const crowded = plan({ orgs: 60_000, recordsPerOrg: 10, writesPerSecond: 0 }, footprint);
  assert.match(crowded.orgFirst.ceiling, /namespaces per index/);
  assert.equal(
    plan({ orgs: 60_000, recordsPerOrg: 10, writesPerSecond: 0, vectorIndexes: 2 }, footprint).orgFirst.ceiling,
    crowded.orgCeilings[0].ceiling,
  );
  // Without vectors, Vectorize is no ceiling.
  const none = plan(
    { orgs: 60_000, recordsPerOrg: 30_000_000, writesPerSecond: 0, vectorDimensions: 0, claimShare: 1 },
    lean,
  );
  assert.equal(none.orgCeilings[1].records, null);
  assert.match(none.orgFirst.ceiling, /Durable Object storage/);
});
