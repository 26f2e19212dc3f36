// Named background jobs run by the org alarm. Each job keeps its own due time in org_meta
// ("job_due:<name>"), written in the same transaction as the change that makes it due; the alarm runs
// the jobs that are due and re-arms for the earliest due time left (`nextAlarm`). The list itself is
// src/jobs.ts, beside the route table; nothing in src/org names a domain's background work.
import { clock } from "../http/clock";
import type { Db } from "../sql/db";
import { deleteMeta, getMeta, setMeta } from "./meta";
import type { OrgDeps } from "./request";

export interface JobContext {
  db: Db;
  storage: DurableObjectStorage;
  indexDb: D1Database;
  /** Undefined only before the organization was bootstrapped. */
  orgId: string | undefined;
  /** The background maintenance interval (0: no background timer). */
  maintenanceIntervalMs: number;
  deps: OrgDeps;
}

export interface BackgroundJob {
  name: string;
  /** Does one bounded step of work; returns when it wants to run again (null: nothing pending). */
  run(ctx: JobContext): Promise<number | null> | number | null;
  /** How long to wait after the job threw before trying again. */
  retryMs(ctx: JobContext): number;
  /** When committed events make this job due (called inside the write's transaction); null: they do not. */
  dueAfterEvents?(db: Db, maintenanceIntervalMs: number): number | null;
}

const dueKey = (name: string) => `job_due:${name}`;

export function jobDueAt(db: Db, name: string): number | null {
  const v = getMeta(db, dueKey(name));
  return v === undefined ? null : Number(v);
}

const leaseKey = (name: string) => `job_lease:${name}`;
const markedKey = (name: string) => `job_marked:${name}`;

/** Make a job due no later than `atMs` (call inside the write's transaction). Returns the job's due time. */
export function markJobDue(db: Db, name: string, atMs: number): number {
  // One read of the job's three values: this runs inside most writes.
  const values = new Map(
    db
      .all<{ name: string; value: string }>(
        "SELECT name, value FROM org_meta WHERE name IN (?, ?, ?)",
        dueKey(name),
        leaseKey(name),
        markedKey(name),
      )
      .map((r) => [r.name, r.value]),
  );
  const due = values.get(dueKey(name));
  const current = due === undefined ? null : Number(due);
  if (current != null && current <= atMs) {
    // While the job runs its due time is its lease: remember a mark the lease absorbed, so the run's
    // end cannot drop it (the run may have read its work before this write committed).
    if (values.has(leaseKey(name))) {
      const marked = values.get(markedKey(name));
      if (marked === undefined || Number(marked) > atMs) setMeta(db, markedKey(name), String(atMs));
    }
    return current;
  }
  setMeta(db, dueKey(name), String(atMs));
  return atMs;
}

/** The earliest due time among the jobs, or null when none has work pending. Pure. */
export function nextAlarm(jobs: readonly { dueAt: number | null }[]): number | null {
  let next: number | null = null;
  for (const { dueAt } of jobs)
    if (dueAt != null && Number.isFinite(dueAt) && (next == null || dueAt < next)) next = dueAt;
  return next;
}

/**
 * Run every job that is due, in list order; a failing job is logged and retried later without
 * stopping the others. Returns when the alarm should fire next, or null when nothing is pending.
 */
export async function runDueJobs(jobs: readonly BackgroundJob[], ctx: JobContext): Promise<number | null> {
  for (const job of jobs) {
    const due = jobDueAt(ctx.db, job.name);
    if (due == null || due > clock.nowMs()) continue;
    // Lease the job while it runs: its due time moves to when a retry would be due, so a run that never
    // finishes (eviction) is retried then. A request that makes the job due meanwhile (requests
    // interleave at awaits) either moves the due time before the lease or, when the lease absorbs it,
    // leaves a mark (markJobDue); both are kept below. Comparing with the old due time instead missed
    // a write whose due time was not earlier than it.
    const lease = clock.nowMs() + job.retryMs(ctx);
    setMeta(ctx.db, dueKey(job.name), String(lease));
    setMeta(ctx.db, leaseKey(job.name), String(lease));
    let next: number | null;
    try {
      next = await job.run(ctx);
    } catch (err) {
      console.error(`background job ${job.name} failed; retrying`, err);
      next = clock.nowMs() + job.retryMs(ctx);
    }
    const now = jobDueAt(ctx.db, job.name);
    const absorbed = getMeta(ctx.db, markedKey(job.name));
    deleteMeta(ctx.db, leaseKey(job.name));
    deleteMeta(ctx.db, markedKey(job.name));
    const madeDueMeanwhile = nextAlarm([
      { dueAt: now != null && now !== lease ? now : null },
      { dueAt: absorbed === undefined ? null : Number(absorbed) },
    ]);
    const keep = nextAlarm([{ dueAt: next }, { dueAt: madeDueMeanwhile }]);
    if (keep == null) deleteMeta(ctx.db, dueKey(job.name));
    else setMeta(ctx.db, dueKey(job.name), String(keep));
  }
  return nextAlarm(jobs.map((j) => ({ dueAt: jobDueAt(ctx.db, j.name) })));
}
