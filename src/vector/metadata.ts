// What a claim's vector carries in Vectorize, and the filters that ask for it: the two sides of one
// mapping, kept here together. A vector's metadata holds the columns the read rule decides on
// (policy.ts readableWayConditions: visibility, workspace, author, project, subject) and the claim's
// kind (compile's `kinds`); a way becomes one filter with the same conditions, so a vector matches a
// way's filter exactly when its claim matches the way.
//
// Vectorize filters only on properties with a metadata index created before the vectors were written
// (METADATA_INDEXES: six of the ten an index allows, created by `npm run deploy:setup`), and indexes a
// string's first 64 bytes: ids are 36 bytes; a subject id (up to 200 characters, the caller's own)
// is stored as the first 64 hex digits of its SHA-256, so a long one cannot match another sharing its
// first 64 bytes. Null (no workspace, unscoped memory) is stored as NONE, a value no id can take.
//
// Lifecycle: the metadata is written by every upsert (the index drain, src/domains/indexing/service.ts),
// and a claim is upserted again whenever its row changes: every claim write reports the claim as
// created or changed (domains/memory/records.ts), and commitWrite queues its index row in the same
// transaction (org/outbox.ts). Visibility,
// workspace, author, project and kind are fixed at insert (no writer changes them: test/vector-ways.test.ts
// checks every UPDATE of claims in src/); a change of status, validity or retention re-queues the claim
// in the writer's transaction (the same test refuses the index row and sees each writer roll back), and
// a claim that is no longer current is deleted from the index by the drain.
//
// The ways are the read rule's (src/access/policy.ts readableWayConditions), passed in by compile
// (src/domains/memory/vector-candidates.ts): this folder does not import access, so a way is taken here
// by its shape, each condition a column name and its value or values.
import { sha256Hex } from "../auth/credentials";
import METADATA_INDEXES from "./metadata-indexes.json";
import type { FilterCondition, VectorFilter, VectorMetadata } from "./types";

export { METADATA_INDEXES };

/**
 * A condition of a way as the filters take it (access/policy.ts WayCondition has this shape): a column
 * of the claim (`owner`: its author) equal to a value (null: the column is null), or (`in`) to one of
 * several values. The column is the metadata property of the same name.
 */
export type ColumnCondition = { column: string; value: string | null } | { column: string; in: string[] };

/** Stands for null (no workspace; unscoped memory): not an id of any kind. */
export const NONE = "none";

/** The claim columns the metadata is made of. */
export interface ClaimForMetadata {
  visibility: string;
  workspace_id: string | null;
  author_id: string;
  project_id: string | null;
  subject_id: string;
  kind: string;
}

/** A subject id as stored and asked: 64 hex digits of its SHA-256 (Vectorize indexes 64 bytes). */
export const subjectKey = (subjectId: string) => sha256Hex(subjectId);

/** The metadata of a claim's vector: one value per metadata index. */
export const claimMetadata = (c: ClaimForMetadata): VectorMetadata => ({
  visibility: c.visibility,
  workspace_id: c.workspace_id ?? NONE,
  author_id: c.author_id,
  project_id: c.project_id ?? NONE,
  subject_id: subjectKey(c.subject_id),
  kind: c.kind,
});

const stored = (c: ColumnCondition, value: string | null) =>
  c.column === "subject_id" && value !== null ? subjectKey(value) : (value ?? NONE);

/** Compile's filters (GET /v1/memories' filters), applied to every way: a claim's kinds, subject and project. */
export interface WayNarrowing {
  kinds?: string[];
  subject_id?: string;
  project_id?: string;
}

/**
 * A way narrowed by compile's subject and project: the way's own condition on that column must allow
 * the asked value (a way that cannot reach it reads nothing under the filter: null), and becomes equality.
 */
function narrowed(way: readonly ColumnCondition[], n: WayNarrowing): ColumnCondition[] | null {
  const out = [...way];
  for (const column of ["subject_id", "project_id"] as const) {
    const wanted = n[column];
    if (wanted === undefined) continue;
    const at = out.findIndex((c) => c.column === column);
    if (at < 0) {
      out.push({ column, value: wanted });
      continue;
    }
    const c = out[at];
    if (!("in" in c ? c.in.includes(wanted) : c.value === wanted)) return null;
    out[at] = { column, value: wanted };
  }
  return out;
}

/** One way as a filter: each condition on the property of the same name (`owner` is the author). */
function wayFilter(way: readonly ColumnCondition[], kinds?: string[]): VectorFilter {
  const filter: VectorFilter = {};
  for (const c of way) {
    const property = c.column === "owner" ? "author_id" : c.column;
    const condition: FilterCondition = "in" in c ? { $in: c.in.map((v) => stored(c, v)) } : { $eq: stored(c, c.value) };
    filter[property] = condition;
  }
  if (kinds?.length) filter.kind = { $in: [...kinds] };
  return filter;
}

/** Vectorize refuses a filter whose compact JSON is 2,048 bytes or more. */
export const MAX_FILTER_BYTES = 2047;

const bytes = (f: VectorFilter) => new TextEncoder().encode(JSON.stringify(f)).length;

/**
 * The ways as filters, a long list split over several filters so that each stays under Vectorize's
 * size limit (their OR is the same set).
 */
export function wayFilters(
  ways: readonly (readonly ColumnCondition[])[],
  narrowing: WayNarrowing = {},
): VectorFilter[] {
  const out: VectorFilter[] = [];
  const split = (way: readonly ColumnCondition[]): void => {
    const filter = wayFilter(way, narrowing.kinds);
    if (bytes(filter) <= MAX_FILTER_BYTES) {
      out.push(filter);
      return;
    }
    const at = way.findIndex((c) => "in" in c && c.in.length > 1);
    if (at < 0) throw new Error("a way's filter exceeds Vectorize's filter size and cannot be split");
    const list = (way[at] as { in: string[] }).in;
    const half = Math.ceil(list.length / 2);
    for (const part of [list.slice(0, half), list.slice(half)])
      split(way.map((c, i) => (i === at ? { ...(c as Extract<ColumnCondition, { in: string[] }>), in: part } : c)));
  };
  for (const way of ways) {
    const within = narrowed(way, narrowing);
    if (within) split(within);
  }
  return out;
}
