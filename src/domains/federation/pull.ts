// POST /v1/federation/pull, called by the other deployment and signed by it like a push (exchange.ts):
// filtered team events of the federable kinds after the peer's cursor, optionally with signed claim
// bundles. The cursor moves and the log entry is written in one transaction; the response is signed
// over its exact bytes.
import { clock } from "../../http/clock";
import { invalid } from "../../http/errors";
import { envelopeText } from "../../http/envelope";
import type { Db } from "../../sql/db";
import type { Reply, RequestCtx } from "../../org/request";
import { commitWrite } from "../../org/write";
import { type EventRow, teamEventsAfter } from "../../org/events";
import { type FilterRow, hasFilterFor, passes } from "./filters";
import { sharedActiveClaims, sharedClaimSources, sharedFacets, sharedObservations } from "./shared-records";
import { signedExchange } from "./exchange";
import { FEDERABLE_KINDS, type FederableKind, pullBody } from "./schema";
import { SIGNATURE_HEADER, sign, signBundle } from "./signing";
import { advancePeer, filtersOf, insertLog, type PeerRow } from "./store";

/** Events examined per pull at most, so a peer whose filters admit little still gets a bounded call. */
const SCAN_BUDGET = 5_000;
const SCAN_BATCH = 500;
/** Bundle bytes per pull page, so that the page pushed on stays under the 1 MiB body limit with its events. */
const BUNDLE_BYTES = 700_000;
const KINDS = Object.keys(FEDERABLE_KINDS) as FederableKind[];

const servedView = (e: EventRow) => ({
  id: e.event_id,
  kind: e.kind,
  resource_type: e.resource_type,
  resource_id: e.resource_id,
  payload: JSON.parse(e.payload) as Record<string, unknown>,
  created_at: e.created_at,
});

/**
 * Facets of the shared records the events describe (kind, subject and trust never change on a record):
 * a record retention excluded has none, so neither it nor its events cross.
 */
function facetsOf(db: Db, events: EventRow[]) {
  const ids = (type: string) => [...new Set(events.filter((e) => e.resource_type === type).map((e) => e.resource_id))];
  return new Map(sharedFacets(db, { observations: ids("observation"), claims: ids("claim") }).map((r) => [r.id, r]));
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
    const facets = facetsOf(db, batch);
    for (const e of batch) {
      scanSeq = e.seq;
      scanned++;
      const row = facets.get(e.resource_id);
      if (row && passes(filters, FEDERABLE_KINDS[e.kind as FederableKind], row)) served.push(e);
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
 * Bundles for the claims the served events describe, in event order: each shared active claim that
 * passes a claim filter, with every source observation (content included), each of which must also
 * be shared, be unpurged and pass an observation filter; otherwise the claim is not bundled. The page must stay pushable (the body limit is 1 MiB): when the next bundle would pass
 * BUNDLE_BYTES, the page ends before the event that described it (`kept`), so that claim comes with
 * the next pull.
 */
function bundlesFor(db: Db, orgId: string, peer: PeerRow, filters: FilterRow[], served: EventRow[]) {
  const claimIds = [...new Set(served.filter((e) => e.resource_type === "claim").map((e) => e.resource_id))];
  const bundles: Record<string, unknown>[] = [];
  if (!claimIds.length) return { bundles, kept: served.length };
  const claims = new Map(
    sharedActiveClaims(db, claimIds)
      .filter((c) => passes(filters, "claim", c))
      .map((c) => [c.claim_id, c]),
  );
  const sources = sharedClaimSources(db, [...claims.keys()]);
  const bundled = new Set<string>();
  let bytes = 0;
  for (let i = 0; i < served.length; i++) {
    const c = claims.get(served[i].resource_id);
    if (!c || bundled.has(c.claim_id)) continue;
    const own = sources.get(c.claim_id) ?? [];
    const evidence = sharedObservations(db, [...new Set(own.map((s) => s.observation_id))]);
    if (
      !own.length ||
      evidence.length !== new Set(own.map((s) => s.observation_id)).size ||
      evidence.some((o) => o.purged_at != null || o.content == null || !passes(filters, "observation", o))
    )
      continue;
    const bundle = signBundle(peer.shared_secret, {
      source_org_id: orgId,
      claim: {
        claim_id: c.claim_id,
        subject_id: c.subject_id,
        kind: c.kind,
        statement: c.statement,
        status: c.status,
        trust: c.trust,
        visibility: c.visibility,
        valid_from: c.valid_from,
        valid_to: c.valid_to,
        sources: own.map((s) => ({ observation_id: s.observation_id, relation: s.relation })),
        created_at: c.created_at,
      },
      observations: evidence.map((o) => ({
        observation_id: o.observation_id,
        subject_id: o.subject_id,
        kind: o.kind,
        content: o.content!,
        content_hash: o.content_hash,
        source: { type: o.source_type, ...(o.source_ref != null ? { ref: o.source_ref } : {}) },
        trust: o.trust,
        visibility: o.visibility,
        created_at: o.created_at,
      })),
    });
    const size = new TextEncoder().encode(JSON.stringify(bundle)).length;
    if (size > BUNDLE_BYTES) continue; // could never be pushed whole: the claim's events cross, its bundle does not
    if (bytes + size > BUNDLE_BYTES) return { bundles, kept: i };
    bytes += size;
    bundled.add(c.claim_id);
    bundles.push(bundle);
  }
  return { bundles, kept: served.length };
}

export function pull(rc: RequestCtx): Reply {
  const { peer, body, signed } = signedExchange(rc, "pull", pullBody, { unsignedFromAdministrator: true });
  const filters = filtersOf(rc.db, peer.peer_id);
  if (body.include_memory && !hasFilterFor(filters, "claim"))
    throw invalid('Invalid field "include_memory": the peer has no claim filter, so no claim may cross.');
  const reply = commitWrite(rc, (db) => {
    let { served, scanSeq, hasMore } = scan(db, peer, filters, body.limit);
    let bundles: Record<string, unknown>[] | undefined;
    if (body.include_memory) {
      const fit = bundlesFor(db, rc.orgId, peer, filters, served);
      bundles = fit.bundles;
      if (fit.kept < served.length) {
        served = served.slice(0, fit.kept);
        scanSeq = served[served.length - 1].seq;
        hasMore = true;
      }
    }
    const cursor = served.length ? served[served.length - 1].event_id : peer.cursor;
    const at = clock.nowIso();
    advancePeer(db, peer.peer_id, cursor, scanSeq, at);
    const counts = {
      events: served.length,
      success: served.length,
      conflict: 0,
      rejected: 0,
      bundles: bundles?.length ?? 0,
    };
    insertLog(db, {
      peerId: peer.peer_id,
      operation: "pull",
      counts,
      cursorBefore: peer.cursor,
      cursorAfter: cursor,
      requestId: rc.requestId,
      at,
      signed,
    });
    return {
      status: 200,
      data: { events: served.map(servedView), cursor, has_more: hasMore, ...(bundles ? { bundles } : {}) },
      audit: {
        action: "federation.pulled",
        resourceType: "federation_peer",
        resourceId: peer.peer_id,
        detail: { ...counts, cursor, signed },
      },
    };
  });
  const text = envelopeText(rc.requestId, reply.data, reply.meta);
  return { ...reply, exact: { text, headers: { [SIGNATURE_HEADER]: sign(peer.shared_secret, text) } } };
}
