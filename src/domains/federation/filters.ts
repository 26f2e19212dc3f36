// Peer filters: what may cross, in either direction. A record crosses when at least one filter of its
// resource type admits it; no filter for a resource type means nothing of that type crosses.
import { type Trust, TRUST_LEVELS, trustAtMost } from "../../auth/trust";
import type { ResourceType } from "./schema";

export interface FilterRow {
  filter_id: string;
  peer_id: string;
  resource_type: ResourceType;
  include_kinds: string | null;
  exclude_subjects: string | null;
  min_trust: Trust | null;
  created_by: string;
  created_at: string;
}

/** What a filter looks at: a record's (or an event payload's) kind, subject and trust. */
export interface Facets {
  kind?: unknown;
  subject_id?: unknown;
  trust?: unknown;
}

const isTrust = (t: unknown): t is Trust => typeof t === "string" && (TRUST_LEVELS as readonly string[]).includes(t);

/** Does the filter admit the record? `ignoreTrust` checks only kind and subject (trust is judged separately). */
export function admits(f: FilterRow, r: Facets, opts: { ignoreTrust?: boolean } = {}): boolean {
  const kinds = f.include_kinds ? (JSON.parse(f.include_kinds) as string[]) : null;
  if (kinds && !(typeof r.kind === "string" && kinds.includes(r.kind))) return false;
  const excluded = f.exclude_subjects ? (JSON.parse(f.exclude_subjects) as string[]) : [];
  if (typeof r.subject_id !== "string" || excluded.includes(r.subject_id)) return false;
  // A filter with min_trust admits only what states a trust at least that high.
  if (f.min_trust && !opts.ignoreTrust && !(isTrust(r.trust) && trustAtMost(f.min_trust, r.trust))) return false;
  return true;
}

export const passes = (filters: FilterRow[], type: ResourceType, r: Facets, opts: { ignoreTrust?: boolean } = {}) =>
  filters.some((f) => f.resource_type === type && admits(f, r, opts));

export const hasFilterFor = (filters: FilterRow[], type: ResourceType) => filters.some((f) => f.resource_type === type);

export function filterView(f: FilterRow) {
  return {
    filter_id: f.filter_id,
    peer_id: f.peer_id,
    resource_type: f.resource_type,
    include_kinds: f.include_kinds ? (JSON.parse(f.include_kinds) as string[]) : null,
    exclude_subjects: f.exclude_subjects ? (JSON.parse(f.exclude_subjects) as string[]) : null,
    min_trust: f.min_trust,
    created_at: f.created_at,
  };
}
