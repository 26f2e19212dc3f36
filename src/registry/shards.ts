// Which registry shard owns an id: a pure function of the id, so every writer and every import agrees
// forever. Changing it would strand every registered id, so a test pins it.
import { randomHex } from "../http/ids";

/** Number of registry shards (two hex characters). */
export const REGISTRY_SHARDS = 256;

/** The hex part of a record id (after its prefix, e.g. "obs_"). */
const hexPart = (id: string) => id.slice(id.lastIndexOf("_") + 1);

/** The shard name: `ids:` + the first two hex characters of the id's hex part (`ids:00` … `ids:ff`). */
export function registryShardOf(id: string): string {
  const head = hexPart(id).slice(0, 2).toLowerCase();
  if (/^[0-9a-f]{2}$/.test(head)) return `ids:${head}`;
  // Ids are prefix + 32 hex; anything else still gets a stable shard (FNV-1a of the whole id).
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193) >>> 0;
  return `ids:${(h % REGISTRY_SHARDS).toString(16).padStart(2, "0")}`;
}

/**
 * A new project, observation or claim id of an organization: prefix, then the two hex characters of the
 * organization's own shard, then 120 random bits. All of an organization's new ids share one registry
 * shard, so registering a write (or a burst of concurrent writes) is one RPC to a shard its writes keep
 * warm, instead of one per id to shards that are cold (docs/operations.md, "Limits and scale"). Shards still fill
 * evenly across organizations; imported ids, and any id not made here, stay where their hex puts them.
 */
export function recordIdFor(orgId: string, prefix: string): string {
  return prefix + registryShardOf(orgId).slice("ids:".length) + randomHex(15);
}

/** Ids grouped by shard, each shard once, ids deduplicated. */
export function groupByShard(ids: Iterable<string>): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const id of new Set(ids)) {
    const shard = registryShardOf(id);
    const list = out.get(shard);
    if (list) list.push(id);
    else out.set(shard, [id]);
  }
  return out;
}
