// POST /v1/federation/pull, called by the other deployment: filtered team events of the federable
// kinds after the peer's cursor, optionally with signed claim bundles. The cursor moves and the log
// entry is written in one transaction; the response is signed over its exact bytes.
import { clock } from "../../http/clock";
import { invalid } from "../../http/errors";
import { envelopeText } from "../../http/envelope";
import type { Db } from "../../org/db";
import type { Reply, RequestCtx } from "../../org/request";
import { commitWrite } from "../../org/write";
import { type EventRow, teamEventsAfter } from "../events/routes";
import type { ClaimRow, ObservationRow } from "../memory/store";
import { type FilterRow, hasFilterFor, passes } from "./filters";
import { allSourcesByClaim, claimsByIds, observationsByIds } from "./memory-sql";
import { requireOpenTo } from "./peers";
import { FEDERABLE_KINDS, type FederableKind } from "./schema";
import { SIGNATURE_HEADER, sign, signBundle } from "./signing";
import { advancePeer, filtersOf, insertLog, type PeerRow, resolvePeer } from "./store";
import type { z } from "zod";
import type { pullBody } from "./schema";

/** Events examined per pull at most, so a peer whose filters admit little still gets a bounded call. */
const SCAN_BUDGET = 5_000;
const SCAN_BATCH = 500;
const KINDS = Object.keys(FEDERABLE_KINDS) as FederableKind[];

const servedView = (e: EventRow) => ({
  id: e.event_id, kind: e.kind, resource_type: e.resource_type, resource_id: e.resource_id,
  payload: JSON.parse(e.payload) as Record<string, unknown>, created_at: e.created_at,
});

/** Facets of the records the events describe (kind, subject and trust never change on a record). */
function recordsOf(db: Db, events: EventRow[]) {
  const ids = (type: string) => [...new Set(events.filter((e) => e.resource_type === type).map((e) => e.resource_id))];
  return {
    observations: new Map(observationsByIds(db, ids("observation")).map((o) => [o.observation_id, o])),
    claims: new Map(claimsByIds(db, ids("claim")).map((c) => [c.claim_id, c])),
  };
}

/** Walk the log from the peer's scan position: up to `limit` events that pass the peer's filters. */
function scan(db: Db, peer: PeerRow, filters: FilterRow[], limit: number) {
  const served: EventRow[] = [];
  let scanSeq = peer.scan_seq;
  let scanned = 0;
  let exhausted = false;
  while (served.length < limit && scanned < SCAN_BUDGET) {
    const batch = teamEventsAfter(db, scanSeq, KINDS, SCAN_BATCH);
    if (!batch.length) {
      exhausted = true;
      break;
    }
    const records = recordsOf(db, batch);
    for (const e of batch) {
      scanSeq = e.seq;
      scanned++;
      const type = FEDERABLE_KINDS[e.kind as FederableKind];
      const row: ObservationRow | ClaimRow | undefined =
        type === "observation" ? records.observations.get(e.resource_id) : records.claims.get(e.resource_id);
      if (row && row.visibility === "team" && passes(filters, type, row)) served.push(e);
      if (served.length === limit) break;
    }
    if (batch.length < SCAN_BATCH && scanSeq === batch[batch.length - 1].seq && served.length < limit) {
      exhausted = true;
      break;
    }
  }
  // More may follow when the page filled up or the budget ran out; never a count of what was withheld.
  return { served, scanSeq, hasMore: !exhausted };
}

/**
 * Bundles for the claims the served events describe: each active team claim that passes a claim
 * filter, with every source observation (content included), all of which must be team, unpurged and
 * pass an observation filter; otherwise the claim is not bundled.
 */
function bundlesFor(db: Db, orgId: string, peer: PeerRow, filters: FilterRow[], served: EventRow[]) {
  const claimIds = [...new Set(served.filter((e) => e.resource_type === "claim").map((e) => e.resource_id))];
  if (!claimIds.length) return [];
  const now = clock.nowIso();
  const claims = claimsByIds(db, claimIds).filter((c) => c.visibility === "team" && c.status === "active" &&
    (c.valid_to == null || c.valid_to > now) && passes(filters, "claim", c));
  const sources = allSourcesByClaim(db, claims.map((c) => c.claim_id));
  const observations = new Map(observationsByIds(db, [...new Set([...sources.values()].flat().map((s) => s.observation_id))])
    .map((o) => [o.observation_id, o]));
  const bundles = [];
  for (const c of claimIds.map((id) => claims.find((x) => x.claim_id === id)).filter((c): c is ClaimRow => !!c)) {
    const own = sources.get(c.claim_id) ?? [];
    const evidence = [...new Set(own.map((s) => s.observation_id))].map((id) => observations.get(id));
    if (!own.length || evidence.some((o) => !o || o.visibility !== "team" || o.purged_at != null || o.content == null || !passes(filters, "observation", o)))
      continue;
    bundles.push(signBundle(peer.shared_secret, {
      source_org_id: orgId,
      claim: {
        claim_id: c.claim_id, subject_id: c.subject_id, kind: c.kind, statement: c.statement, status: c.status, trust: c.trust,
        visibility: c.visibility, valid_from: c.valid_from, valid_to: c.valid_to,
        sources: own.map((s) => ({ observation_id: s.observation_id, relation: s.relation })), created_at: c.created_at,
      },
      observations: (evidence as ObservationRow[]).map((o) => ({
        observation_id: o.observation_id, subject_id: o.subject_id, kind: o.kind, content: o.content!, content_hash: o.content_hash,
        source: { type: o.source_type, ...(o.source_ref != null ? { ref: o.source_ref } : {}) }, trust: o.trust,
        visibility: o.visibility, created_at: o.created_at,
      })),
    }));
  }
  return bundles;
}

export function pull(rc: RequestCtx<z.infer<typeof pullBody>>): Reply {
  const peer = resolvePeer(rc.db, rc.body.peer_id);
  requireOpenTo(peer, "pull");
  const filters = filtersOf(rc.db, peer.peer_id);
  if (rc.body.include_memory && !hasFilterFor(filters, "claim"))
    throw invalid('Invalid field "include_memory": the peer has no claim filter, so no claim may cross.');
  const reply = commitWrite(rc, (db) => {
    const { served, scanSeq, hasMore } = scan(db, peer, filters, rc.body.limit);
    const cursor = served.length ? served[served.length - 1].event_id : peer.cursor;
    const bundles = rc.body.include_memory ? bundlesFor(db, rc.orgId, peer, filters, served) : undefined;
    const at = clock.nowIso();
    advancePeer(db, peer.peer_id, cursor, scanSeq, at);
    const counts = { events: served.length, success: served.length, conflict: 0, rejected: 0, bundles: bundles?.length ?? 0 };
    insertLog(db, { peerId: peer.peer_id, operation: "pull", counts, cursorBefore: peer.cursor, cursorAfter: cursor, requestId: rc.requestId, at });
    return {
      status: 200,
      data: { events: served.map(servedView), cursor, has_more: hasMore, ...(bundles ? { bundles } : {}) },
      audit: { action: "federation.pulled", resourceType: "federation_peer", resourceId: peer.peer_id, detail: { ...counts, cursor } },
    };
  });
  const text = envelopeText(rc.requestId, reply.data, reply.meta);
  return { ...reply, exact: { text, headers: { [SIGNATURE_HEADER]: sign(peer.shared_secret, text) } } };
}
