// The ownership registry as the org Durable Object uses it: one batched RPC per shard touched, in
// parallel. Passed in through OrgDeps (src/deps.ts), so a test can give one object a failing registry.
import type { ClaimResult, IdRegistry } from "./IdRegistry";
import { groupByShard } from "./shards";

export interface OwnershipRegistry {
  /**
   * Import, before its transaction: claim every id for orgId. Throws when a shard is unreachable,
   * after releasing what the shards that did answer newly recorded.
   */
  claim(orgId: string, ids: string[], at: string): Promise<ClaimResult>;
  /** After a write committed: record its created ids for their owner (idempotent). Returns conflicts. */
  register(orgId: string, ids: string[], at: string): Promise<{ conflicts: string[] }>;
  /** Undo claims this organization made (an import that did not commit). */
  release(orgId: string, ids: string[]): Promise<void>;
}

export function durableRegistry(ns: DurableObjectNamespace<IdRegistry>): OwnershipRegistry {
  const shard = (name: string) => ns.get(ns.idFromName(name));
  const perShard = <T>(ids: string[], call: (stub: DurableObjectStub<IdRegistry>, ids: string[]) => Promise<T>) =>
    Promise.all([...groupByShard(ids)].map(([name, list]) => call(shard(name), list)));
  return {
    async claim(orgId, ids, at) {
      const settled = await Promise.allSettled(
        [...groupByShard(ids)].map(([name, list]) => shard(name).claim(orgId, list, at)),
      );
      const answered = settled.flatMap((r) => (r.status === "fulfilled" ? [r.value] : []));
      const added = answered.flatMap((r) => r.added);
      const failed = settled.find((r): r is PromiseRejectedResult => r.status === "rejected");
      if (failed) {
        if (added.length) await this.release(orgId, added).catch(() => undefined);
        throw failed.reason;
      }
      return { foreign: answered.flatMap((r) => r.foreign), added };
    },
    async register(orgId, ids, at) {
      const results = await perShard(ids, (s, list) => s.register(orgId, list, at));
      return { conflicts: results.flatMap((r) => r.conflicts) };
    },
    async release(orgId, ids) {
      await perShard(ids, (s, list) => s.release(orgId, list));
    },
  };
}
