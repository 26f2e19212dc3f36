#!/usr/bin/env node
// npm run plan -- --orgs N --records-per-org M --writes-per-second W [--claim-share 0.5] [--keys-per-org 5]
//   [--sessions-per-org-per-day 20] [--vector-indexes 1] [--vector-dimensions 384] [--footprint docs/footprint.json]
// Prints, for a deployment, the storage per organization, how long until one reaches 10 GB, the D1 size
// and write rate, the registry shards needed and which limit is hit first; then one organization's own
// ceilings (Durable Object storage and write rate, Vectorize vectors and namespaces per index), the size
// at which each is reached and the first one an organization of this size hits. W is per organization.
// Figures: docs/footprint.json, written by `npm run bench -- --parts footprint`.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { LIMITS, fmtBytes, fmtDuration, plan } from "./plan-lib.mjs";

const NAMES = [
  "orgs",
  "records-per-org",
  "writes-per-second",
  "claim-share",
  "keys-per-org",
  "sessions-per-org-per-day",
  "vector-indexes",
  "vector-dimensions",
  "footprint",
];
const { values: args } = parseArgs({ options: Object.fromEntries(NAMES.map((n) => [n, { type: "string" }])) });
const num = (name, fallback) => {
  const v = args[name] ?? fallback;
  const n = Number(v);
  if (v === undefined || !Number.isFinite(n) || n < 0) {
    console.error(`--${name} must be a non-negative number`);
    process.exit(2);
  }
  return n;
};
const footprintPath = args.footprint ?? new URL("../docs/footprint.json", import.meta.url);
const footprint = JSON.parse(readFileSync(footprintPath, "utf8"));
const p = plan(
  {
    orgs: num("orgs"),
    recordsPerOrg: num("records-per-org"),
    writesPerSecond: num("writes-per-second"),
    claimShare: num("claim-share", 0.5),
    keysPerOrg: num("keys-per-org", 5),
    sessionsPerOrgPerDay: num("sessions-per-org-per-day", 20),
    vectorIndexes: num("vector-indexes", 1),
    vectorDimensions: num("vector-dimensions", 384),
  },
  footprint,
);

console.log(`Figures: ${footprint.measured_at} (${footprint.machine})
Per record (with its event and audit entry, and a claim's vector): ${Math.round(p.bytesPerRecord)} B

Storage per organization:        ${fmtBytes(p.orgBytes)}
Until an organization has 10 GB: ${fmtDuration(p.orgFullSeconds)}
D1 (keys, usernames, throttles): ${fmtBytes(p.d1Bytes)}, ~${p.d1WritesPerSecond.toFixed(2)} writes/s (logins and key changes; records never touch D1)
Ownership registry:              ${p.registryRows.toLocaleString("en")} ids, ${fmtBytes(p.registryBytes)}, ${p.registryWrites.toLocaleString("en")} registrations/s
Registry shards needed:          ${p.registryShardsNeeded} (deployed: ${LIMITS.registryShards}); a shard fills in ${fmtDuration(p.shardFullSeconds)}
Vectorize indexes needed:        ${p.vectorIndexesNeeded}

Limits, soonest first:`);
for (const l of [...p.limits].sort((a, b) => a.seconds - b.seconds))
  console.log(`  ${fmtDuration(l.seconds).padEnd(22)} ${l.limit}`);
console.log(
  p.first
    ? `\nHit first: ${p.first.limit} (${fmtDuration(p.first.seconds)}).`
    : "\nNo limit is reached at these rates.",
);

const records = num("records-per-org");
const size = (n) => (n === null ? "(not a size)" : `${Math.round(n).toLocaleString("en")} records`);
console.log(`\nOne organization's ceilings (this plan's hold ${records.toLocaleString("en")} records each):`);
for (const c of p.orgCeilings)
  console.log(
    `  ${size(c.records).padEnd(22)} ${fmtDuration(c.seconds).padEnd(22)} ${c.ceiling}${c.records !== null && records >= c.records ? "  <- past it" : ""}`,
  );
console.log(
  p.orgFirst
    ? `First for an organization of ${records.toLocaleString("en")} records: ${p.orgFirst.ceiling}${p.orgFirst.records !== null ? ` at ${size(p.orgFirst.records)}` : ""}${p.orgFirst.seconds < Infinity ? ` (${fmtDuration(p.orgFirst.seconds)})` : ""}.`
    : "An organization reaches none of them.",
);
