// Which registry shard owns an id: a pure function of the id, so every writer and every import agrees
// forever. Changing it would strand every registered id, so a test pins it.

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
