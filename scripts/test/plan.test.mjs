// The planning arithmetic on fixed inputs (npm run plan).
import assert from "node:assert/strict";
import { test } from "node:test";
import { GB, fmtDuration, plan } from "../plan-lib.mjs";

const footprint = {
  bytes: { observation: 600, claim: 400, event: 250, audit_entry: 250, registry_entry: 100 },
  appends_per_second_one_org: 500,
};

test("storage per organization, time to 10 GB, registry and D1", () => {
  const p = plan({ orgs: 1000, recordsPerOrg: 1_000_000, writesPerSecond: 10 }, footprint);
  // (0.5 * 600 + 0.5 * 400) + 250 + 250 = 1000 bytes per record.
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
  const p = plan({ orgs: 10, recordsPerOrg: 5_000_000, writesPerSecond: 100, vectorIndexes: 3 }, footprint);
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
