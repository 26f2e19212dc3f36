// Legal holds (DESIGN "Legal holds, retention, identity mappings"). A hold names one exact claim or
// observation; it covers that record and its dependents: a hold on a claim also covers the claim's
// source observations, a hold on an observation also covers every claim it is a source of. Not
// transitively: a held claim's source does not carry the hold on to that source's other claims.
//
// THE coverage rule is `coverage` below, and the three places holds act all go through it:
//   - hold creation restores what the new hold covers (`coverage` of its target),
//   - purge asks `heldAmong` (the legal-hold purge guard in src/deps.ts),
//   - retention apply asks `heldAmong` for every page of candidates.
// Holds emit no event (not one of SPEC's eleven kinds); every change is audited.
import { ADMIN_ROLES } from "../../auth/roles";
import { clock } from "../../http/clock";
import { notFound } from "../../http/errors";
import { ID_PREFIX, newId } from "../../http/ids";
import { orgRoute } from "../../org/route";
import type { Db } from "../../sql/db";
import { touchedAll } from "../../org/outbox";
import type { Caller, PurgeGuard } from "../../org/request";
import { commitWrite } from "../../org/write";
import { canRetrieve } from "../../access/retrieval";
import { changeClaim, getClaim, getObservation, restoreObservations } from "../memory/records";
import { unresolved } from "../memory/store";
import { holdBody, holdReleaseBody, holdReleasedResponse, holdResponse } from "./schema";
import { activeHoldTargets, excludedAmong, getHold, type HoldRow, insertHold, releaseHold, sourceLinks } from "./store";

export interface RecordSet {
  observations: string[];
  claims: string[];
}

const key = (type: "claim" | "observation", id: string) => `${type}:${id}`;

/**
 * THE coverage rule: for each record, the records whose hold would cover it — itself and its
 * dependents (a claim's sources, an observation's claims). The relation is symmetric, so the same
 * map answers both "what does a hold on X cover" and "which holds would cover X". One statement.
 */
export function coverage(db: Db, records: RecordSet): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const id of records.observations) out.set(key("observation", id), new Set([key("observation", id)]));
  for (const id of records.claims) out.set(key("claim", id), new Set([key("claim", id)]));
  for (const l of sourceLinks(db, records)) {
    out.get(key("claim", l.claim_id))?.add(key("observation", l.observation_id));
    out.get(key("observation", l.observation_id))?.add(key("claim", l.claim_id));
  }
  return out;
}

/** The records among `records` that an active hold covers, directly or as a dependent. Two statements. */
export function heldAmong(db: Db, records: RecordSet): { observations: Set<string>; claims: Set<string> } {
  const cover = coverage(db, records);
  const targets = [...new Set([...cover.values()].flatMap((s) => [...s]))];
  const held = new Set(
    activeHoldTargets(
      db,
      targets.map((t) => t.slice(t.indexOf(":") + 1)),
    ),
  );
  const isHeld = (k: string) => [...cover.get(k)!].some((c) => held.has(c));
  return {
    observations: new Set(records.observations.filter((id) => isHeld(key("observation", id)))),
    claims: new Set(records.claims.filter((id) => isHeld(key("claim", id)))),
  };
}

export const HOLD_BLOCKS_PURGE = "An active legal hold blocks this purge.";

/** The purge guard (registered in src/deps.ts): a covered observation cannot be purged. */
export const legalHoldPurgeGuard: PurgeGuard = (db, observationId) =>
  heldAmong(db, { observations: [observationId], claims: [] }).observations.size ? HOLD_BLOCKS_PURGE : null;

export const holdView = (h: HoldRow) => ({
  hold_id: h.hold_id,
  target_type: h.target_type,
  target_id: h.target_id,
  reason: h.reason,
  status: h.status,
  created_by: h.created_by,
  created_at: h.created_at,
  released_by: h.released_by,
  released_at: h.released_at,
});

/**
 * The hold's target as the caller may see it: authorized like any read, but retention exclusion does
 * not hide it (a hold is how an excluded record comes back).
 */
function visibleTarget(db: Db, caller: Caller, type: "claim" | "observation", id: string) {
  const row = type === "claim" ? getClaim(db, id) : getObservation(db, id);
  return row && canRetrieve(caller, row, { evenExcluded: true }) ? row : null;
}

export const holdRoutes = [
  orgRoute({
    method: "POST",
    path: "/v1/legal-holds",
    scope: "retention:write",
    roles: ADMIN_ROLES,
    body: holdBody,
    response: { 201: holdResponse },
    summary:
      "Place a legal hold on an exact claim or observation (and its dependents); restores what retention had excluded.",
    operationId: "placeLegalHold",
    tag: "Retention",
    description:
      "Places a legal hold on one claim or observation and its dependents; whatever retention had excluded is " +
      "restored in the same write.",
    handler: (rc) =>
      commitWrite(rc, (db) => {
        const { target_type, target_id, reason } = rc.body;
        if (!visibleTarget(db, rc.caller, target_type, target_id)) throw unresolved(target_type, [target_id]);
        const at = clock.nowIso();
        const row: HoldRow = {
          hold_id: newId(ID_PREFIX.hold),
          target_type,
          target_id,
          reason,
          status: "active",
          created_by: rc.caller.principalId,
          created_at: at,
          released_by: null,
          released_at: null,
        };
        insertHold(db, row);
        // Restore, in this transaction, every covered record retention had excluded (claim versions bump).
        const covered = [
          ...coverage(
            db,
            target_type === "claim"
              ? { observations: [], claims: [target_id] }
              : { observations: [target_id], claims: [] },
          ).get(key(target_type, target_id))!,
        ];
        const ids = (type: string) =>
          covered.filter((k) => k.startsWith(`${type}:`)).map((k) => k.slice(type.length + 1));
        const excluded = excludedAmong(db, { observations: ids("observation"), claims: ids("claim") });
        const touched = touchedAll(
          restoreObservations(db, excluded.observations),
          ...excluded.claims.map((id) => changeClaim(db, id, { retention_excluded_at: null })),
        );
        return {
          status: 201,
          data: holdView(row),
          touched,
          // Counts, not ids: the dependents may include records the caller cannot read.
          audit: {
            action: "legal_hold.created",
            resourceType: "legal_hold",
            resourceId: row.hold_id,
            detail: {
              target_type,
              target_id,
              restored_observations: excluded.observations.length,
              restored_claims: excluded.claims.length,
            },
          },
        };
      }),
  }),

  orgRoute({
    method: "POST",
    path: "/v1/legal-holds/:id/release",
    scope: "retention:write",
    roles: ADMIN_ROLES,
    response: { 200: holdReleasedResponse },
    body: holdReleaseBody,
    bodyOptional: true,
    summary: "Release an active legal hold; a repeat answers already_released: true.",
    operationId: "releaseLegalHold",
    tag: "Retention",
    description: "Releases an active legal hold; a repeat answers `already_released: true`.",
    handler: (rc) =>
      commitWrite(rc, (db) => {
        const h = getHold(db, rc.params.id);
        // A hold on a record the caller cannot read answers like a missing one.
        if (!h || !visibleTarget(db, rc.caller, h.target_type, h.target_id)) throw notFound("Legal hold");
        const already = h.status === "released";
        const next: HoldRow = already
          ? h
          : { ...h, status: "released", released_by: rc.caller.principalId, released_at: clock.nowIso() };
        if (!already) releaseHold(db, h.hold_id, next.released_by!, next.released_at!);
        return {
          status: 200,
          data: { ...holdView(next), already_released: already },
          audit: {
            action: "legal_hold.released",
            resourceType: "legal_hold",
            resourceId: h.hold_id,
            detail: { target_type: h.target_type, target_id: h.target_id, already_released: already },
          },
        };
      }),
  }),
];
