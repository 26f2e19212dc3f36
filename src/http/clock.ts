// One clock for the whole service so tests can move time (expiry, TTLs, recency).

let offsetMs = 0;

export const clock = {
  nowMs(): number {
    return Date.now() + offsetMs;
  },
  nowIso(): string {
    return new Date(clock.nowMs()).toISOString();
  },
  /** Tests only: shift the clock forward (or back) by ms. */
  advance(ms: number): void {
    offsetMs += ms;
  },
  reset(): void {
    offsetMs = 0;
  },
};

export const isoAt = (ms: number) => new Date(ms).toISOString();
