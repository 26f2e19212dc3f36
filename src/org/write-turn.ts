// Writes that reach an organization's object close together run in one event-loop turn, so that they
// share one commit. A Durable Object's SQLite writes join an implicit transaction that commits (WAL
// frames, one fsync) once the turn in which it began has ended, and every reply waits for the commit
// that holds its writes (the output gate). Each write still commits through its own transactionSync
// (commitWrite), a savepoint inside the shared transaction: a write that fails rolls back alone, and
// none answers before all of the turn's writes are durable. What it costs: a write waits for the event
// loop's next turn (a timer of 0 ms), during which the requests already queued reach the object.
export class WriteTurn {
  private next: Promise<void> | null = null;

  /** `defer` runs its argument in a later turn of the event loop (tests pass their own). */
  constructor(private readonly defer: (run: () => void) => void = (run) => setTimeout(run, 0)) {}

  /** Settles at the start of the next turn, for this caller and every other that asked before it began. */
  wait(): Promise<void> {
    this.next ??= new Promise<void>((resolve) =>
      this.defer(() => {
        this.next = null;
        resolve();
      }),
    );
    return this.next;
  }
}
