// The organization object's alarm, armed no later than the earliest due job (src/org/jobs.ts), with as
// few storage calls as possible: most writes find it armed early enough already.
export class AlarmArming {
  /** Alarm changes requested during the current request; the request awaits them before answering. */
  private pending: Promise<void>[] = [];
  /** The alarm time this object last set (undefined: unknown, e.g. after a restart; null: none). */
  private armedAt: number | null | undefined;

  constructor(private readonly storage: DurableObjectStorage) {}

  /** The alarm fires no later than `atMs`. */
  armBy(atMs: number): void {
    // Hot path: an alarm already armed no later than atMs needs no storage call at all.
    if (this.armedAt != null && this.armedAt <= atMs) return;
    // Noted at once, not when the storage answers: a later request in the same write (the outbox's, one
    // second on) must not overwrite an earlier one (webhook delivery, due now) whose setAlarm is still
    // on its way. Storage calls run in order, so the earliest time requested is the one that stays.
    this.armedAt = atMs;
    this.pending.push(
      this.storage.getAlarm().then(async (current) => {
        if (current == null || current > atMs) await this.storage.setAlarm(atMs);
      }),
    );
  }

  /** Waits for the changes requested so far. */
  async settled(): Promise<void> {
    const work = this.pending;
    this.pending = [];
    await Promise.all(work);
  }

  /** The alarm fired: runs `jobs`, then arms for the time they return (null: nothing pending). */
  async fired(jobs: () => Promise<number | null>): Promise<void> {
    this.armedAt = null; // this alarm has fired; whatever is set below is the next one
    const next = await jobs();
    if (next == null) return;
    await this.storage.setAlarm(next);
    this.armedAt = next;
  }
}
