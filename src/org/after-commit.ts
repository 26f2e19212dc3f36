// What a request's write sets going after its transaction committed, before the answer leaves the
// organization's Durable Object (OrgStore.dispatch): the ownership registration of its new ids, the
// top-up of the reserve it drew from, and its changes to the global D1 credential index.
import { clock } from "../http/clock";
import { ApiError } from "../http/errors";
import { addCredential, removeCredential } from "../index-db";
import type { Db } from "../sql/db";
import { getMeta } from "./meta";
import { RegistrationBatcher, registerQueuedOwners } from "./outbox";
import type { IndexWrite, OrgDeps } from "./request";
import { ReserveGauge, topUpReserves } from "./reserved-ids";

/** How long a write's registration or a reserve top-up may take before it is left to the outbox's retry. */
export const REGISTRY_WAIT_MS = 5_000;

/** `work`, or a rejection once REGISTRY_WAIT_MS passed (a hung registry call must not hold every later one). */
function withinRegistryWait(work: Promise<void>): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("registry call timed out")), REGISTRY_WAIT_MS);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/** What one request's writes left to do after their commits. */
export interface Committed {
  /** The organization, as the front Worker found it (the credential index's row). */
  orgId: string;
  /** Record ids the request's transactions created. */
  created: string[];
  /** Of those, the ids queued for the ownership registry (not reserved ahead of use). */
  toRegister: string[];
  /** Changes to the global D1 index, in order. */
  indexWrites: readonly IndexWrite[];
}

/** One per organization object: batches registrations across concurrent requests and runs one top-up at a time. */
export class AfterCommit {
  /**
   * @param deps read at each use: a test may give the object other dependencies while it lives.
   */
  constructor(
    private readonly db: Db,
    private readonly indexDb: D1Database,
    private readonly deps: () => OrgDeps,
  ) {}

  /**
   * New ids reach the ownership registry before the reply that reveals them, so no other organization
   * can learn an id before the registry knows its owner (docs/operations.md, "Limits and scale"). Each write's own
   * ids, batched with those of writes running at the same time (RegistrationBatcher); a failure leaves
   * the rows to the alarm's retry and the write stands.
   */
  private readonly registrations = new RegistrationBatcher(
    (ids) => withinRegistryWait(registerQueuedOwners(this.db, this.deps().registry, getMeta(this.db, "org_id")!, ids)),
    (err) => console.error("ownership registration failed; the outbox retries", err),
  );

  /** The reserve top-up in progress, if any: at most one at a time. */
  private toppingUp: Promise<void> | null = null;
  private readonly reserve = new ReserveGauge();

  /** Registers, tops up and writes the index for one request; throws 503 when a credential could not be indexed. */
  async settle(done: Committed): Promise<void> {
    if (done.toRegister.length) this.registrations.register(done.toRegister);
    // No answer leaves while a registration is under way: a read (or a replay) running during another
    // write's registration could otherwise show that write's new id before the registry knows it.
    await this.registrations.settled();
    if (done.created.length) this.topUpReserves(done.created);
    await this.applyIndexWrites(done.orgId, done.indexWrites);
  }

  /**
   * Keep ids registered ahead of use (src/org/reserved-ids.ts), so that the next writes answer without
   * a registry call. Not awaited: a write never waits for it; a failure leaves the fallback in place.
   */
  private topUpReserves(created: string[]): void {
    this.reserve.spent(created);
    if (this.toppingUp) return;
    const low = this.reserve.low(this.db, created);
    if (!low.length) return;
    const orgId = getMeta(this.db, "org_id");
    if (!orgId) return;
    this.toppingUp = withinRegistryWait(topUpReserves(this.db, this.deps().registry, orgId, low, clock.nowIso()))
      .catch((err) => console.error("record id reserve top-up failed; writes register after commit", err))
      .finally(() => {
        this.reserve.forget(low);
        this.toppingUp = null;
      });
  }

  /** D1 follows the DO: applied only after the DO transaction committed. */
  private async applyIndexWrites(orgId: string, writes: readonly IndexWrite[]): Promise<void> {
    for (const w of writes) {
      if (w.op === "add_credential") {
        const kind = w.kind ?? "api_key";
        try {
          await addCredential(this.indexDb, w.keyHash, orgId, kind, clock.nowIso());
        } catch {
          // The raw key never reached the caller; retire the row so nothing half-made remains usable.
          this.deps().retireCredential(this.db, { keyId: w.keyId, kind });
          throw new ApiError("UNAVAILABLE", "The credential index is unavailable; the key was not created.");
        }
      } else {
        // Revocation is already effective: the DO re-reads the key row on every request.
        await removeCredential(this.indexDb, w.keyHash).catch((err) => console.error("index cleanup failed", err));
      }
    }
  }
}
