// The capacity arithmetic behind `npm run plan` (pure: figures in, numbers out; scripts/test/plan.test.mjs).
// Platform ceilings are Cloudflare's published limits; the per-row figures come from docs/footprint.json
// (`npm run bench -- --parts footprint`).

export const GB = 1e9;
export const LIMITS = {
  /** SQLite storage of one Durable Object (one organization, one registry shard). */
  objectBytes: 10 * GB,
  /** Requests one Durable Object serves per second, roughly (a soft limit: single-threaded). */
  objectRequestsPerSecond: 1000,
  /** One D1 database. */
  d1Bytes: 10 * GB,
  /** Ownership registry shards (src/registry/shards.ts: two hex characters). */
  registryShards: 256,
  /** One Vectorize index. */
  vectorIndexNamespaces: 50_000,
  vectorIndexVectors: 10_000_000,
};

/** D1 bytes per organization: the organization row, its credentials and usernames (~200 B per row). */
export const D1_ROW_BYTES = 200;

/**
 * Bytes an indexed claim adds to its organization's SQLite, by embedding dimensions: its int8 row in
 * local_vectors (the mirror) and its indexed_records row. Measured with ctx.storage.sql.databaseSize
 * over 4,000 vectors (docs/BENCHMARKS.md, "Vector index: bounded memory"): 508 + 155 B at 384, 216 + 153 B at 100.
 */
export const VECTOR_BYTES_PER_CLAIM = { 384: 663, 100: 369 };

/**
 * @param {{ orgs: number, recordsPerOrg: number, writesPerSecond: number, claimShare?: number, keysPerOrg?: number,
 *   sessionsPerOrgPerDay?: number, vectorIndexes?: number, vectorDimensions?: number }} input  writesPerSecond is per organization
 *   (records created per second); vectorDimensions: of the embeddings (384 Workers AI, 100 local, 0 none)
 * @param {{ bytes: { observation: number, claim: number, event: number, audit_entry: number, registry_entry: number },
 *   appends_per_second_one_org: number }} footprint
 */
export function plan(input, footprint) {
  const { orgs, recordsPerOrg, writesPerSecond } = input;
  const claimShare = input.claimShare ?? 0.5;
  const keysPerOrg = input.keysPerOrg ?? 5;
  const sessionsPerOrgPerDay = input.sessionsPerOrgPerDay ?? 20;
  const vectorIndexes = input.vectorIndexes ?? 1;
  const vectorDimensions = input.vectorDimensions ?? 384;
  const b = footprint.bytes;
  if (vectorDimensions && !VECTOR_BYTES_PER_CLAIM[vectorDimensions])
    throw new Error(`no measured vector size for ${vectorDimensions} dimensions`);
  const vectorBytes = vectorDimensions ? VECTOR_BYTES_PER_CLAIM[vectorDimensions] : 0;
  // Every record write also writes one event and one audit entry (a batch writes fewer audit entries:
  // this errs high); every claim its vector.
  const bytesPerRecord =
    (1 - claimShare) * b.observation + claimShare * (b.claim + vectorBytes) + b.event + b.audit_entry;
  const orgBytes = recordsPerOrg * bytesPerRecord;
  const orgGrowth = writesPerSecond * bytesPerRecord; // bytes per second
  const secondsUntil = (room, perSecond) => (room <= 0 ? 0 : perSecond > 0 ? room / perSecond : Infinity);
  const orgFullSeconds = secondsUntil(LIMITS.objectBytes - orgBytes, orgGrowth);

  const registryRows = orgs * recordsPerOrg;
  const registryBytes = registryRows * b.registry_entry;
  const registryWrites = orgs * writesPerSecond;
  const registryShardsNeeded = Math.max(
    1,
    Math.ceil(registryBytes / LIMITS.objectBytes),
    Math.ceil(registryWrites / LIMITS.objectRequestsPerSecond),
  );
  const shardBytes = registryBytes / LIMITS.registryShards;
  const shardFullSeconds = secondsUntil(
    LIMITS.objectBytes - shardBytes,
    (registryWrites * b.registry_entry) / LIMITS.registryShards,
  );

  const d1Rows = orgs * (1 + keysPerOrg + 1); // organization, keys, one username
  const d1Bytes = d1Rows * D1_ROW_BYTES;
  const d1WritesPerSecond = (orgs * sessionsPerOrgPerDay) / 86_400;

  const orgWriteCeiling = Math.min(footprint.appends_per_second_one_org, LIMITS.objectRequestsPerSecond);
  const vectorIndexesNeeded = Math.max(
    Math.ceil(orgs / LIMITS.vectorIndexNamespaces),
    Math.ceil((orgs * recordsPerOrg * claimShare) / LIMITS.vectorIndexVectors),
    1,
  );

  /** Each limit with the seconds until it is reached at these rates (0: already). */
  const limits = [
    { limit: "one organization's storage (10 GB per Durable Object)", seconds: orgFullSeconds },
    {
      limit: `one organization's write rate (~${orgWriteCeiling}/s measured)`,
      seconds: writesPerSecond > orgWriteCeiling ? 0 : Infinity,
    },
    { limit: "a registry shard's storage (10 GB, 256 shards)", seconds: shardFullSeconds },
    {
      limit: "a registry shard's request rate (~1000/s)",
      seconds: registryWrites / LIMITS.registryShards > LIMITS.objectRequestsPerSecond ? 0 : Infinity,
    },
    { limit: "D1 storage (10 GB)", seconds: secondsUntil(LIMITS.d1Bytes - d1Bytes, 0) },
    {
      limit: `Vectorize (${vectorIndexes} index(es): 50,000 namespaces, 10M vectors each)`,
      seconds: vectorIndexesNeeded > vectorIndexes ? 0 : Infinity,
    },
  ];
  const first = limits.reduce((a, l) => (l.seconds < a.seconds ? l : a));

  // One organization's own ceilings, as it grows: the size (records) at which each is reached (null: a
  // rate or a count of organizations, not a size), and when at these rates. Its vectors are one
  // namespace of one Vectorize index, so its claims alone must fit one index.
  const claimsPerSecond = writesPerSecond * claimShare;
  const orgCeilings = [
    {
      ceiling: "Durable Object storage (10 GB)",
      records: LIMITS.objectBytes / bytesPerRecord,
      seconds: orgFullSeconds,
    },
    {
      ceiling: "Vectorize vectors per index (10M: its claims are one namespace of one index)",
      records: vectorDimensions && claimShare > 0 ? LIMITS.vectorIndexVectors / claimShare : null,
      seconds: vectorDimensions
        ? secondsUntil(LIMITS.vectorIndexVectors - recordsPerOrg * claimShare, claimsPerSecond)
        : Infinity,
    },
    {
      ceiling: `Durable Object write rate (~${orgWriteCeiling} records/s measured)`,
      records: null,
      seconds: writesPerSecond > orgWriteCeiling ? 0 : Infinity,
    },
    {
      ceiling: `Vectorize namespaces per index (50,000 organizations; ${orgs.toLocaleString("en")} on ${vectorIndexes})`,
      records: null,
      seconds: vectorDimensions && orgs > LIMITS.vectorIndexNamespaces * vectorIndexes ? 0 : Infinity,
    },
  ];
  const bySize = orgCeilings.filter((c) => c.records !== null).sort((a, b) => a.records - b.records);
  const orgFirst = [...orgCeilings].sort(
    (a, b) => a.seconds - b.seconds || (a.records ?? Infinity) - (b.records ?? Infinity),
  )[0];
  return {
    bytesPerRecord,
    orgBytes,
    orgFullSeconds,
    registryRows,
    registryBytes,
    registryWrites,
    registryShardsNeeded,
    shardFullSeconds,
    d1Bytes,
    d1WritesPerSecond,
    vectorIndexesNeeded,
    limits,
    first: first.seconds === Infinity ? null : first,
    orgCeilings,
    /** The ceiling one organization reaches first: by time at these rates, else (none reached) by size. */
    orgFirst: orgFirst.seconds === Infinity ? (bySize[0] ?? null) : orgFirst,
  };
}

export const fmtBytes = (n) =>
  n >= GB ? `${(n / GB).toFixed(2)} GB` : n >= 1e6 ? `${(n / 1e6).toFixed(1)} MB` : `${Math.round(n / 1e3)} kB`;
export function fmtDuration(s) {
  if (s === Infinity) return "never at these rates";
  if (s <= 0) return "already";
  const days = s / 86_400;
  return days >= 365
    ? `${(days / 365).toFixed(1)} years`
    : days >= 1
      ? `${days.toFixed(1)} days`
      : `${(s / 3600).toFixed(1)} hours`;
}
