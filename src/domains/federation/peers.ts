// Peer administration: register, list, suspend, and the filters bound to a peer. Federation
// administration emits no domain events (SPEC) but every change is audited.
import { clock } from "../../http/clock";
import { conflict, forbidden } from "../../http/errors";
import { ID_PREFIX, newId } from "../../http/ids";
import type { Reply, RequestCtx } from "../../org/request";
import { ok } from "../../org/request";
import { commitWrite } from "../../org/write";
import type { z } from "zod";
import { filterView } from "./filters";
import { type createFilterBody, type createPeerBody, MAX_FILTERS_PER_PEER, MAX_PEERS_PER_ORG } from "./schema";
import {
  countPeers,
  filtersOf,
  getPeer,
  insertFilter,
  insertPeer,
  listPeers,
  peerByEndpoint,
  type PeerRow,
  peerView,
  requirePeer,
  suspendPeer,
} from "./store";

/** Suspension closes both exchange routes; the direction opens one or both (403 otherwise). */
export function requireOpenTo(peer: PeerRow, operation: "pull" | "push"): void {
  if (peer.status !== "active") throw forbidden("The federation peer is suspended.");
  if (peer.direction !== "bidirectional" && peer.direction !== operation)
    throw forbidden(`The federation peer may not ${operation} (direction "${peer.direction}").`);
}

/** One spelling per endpoint: no trailing slash, so `https://x.example/` and `https://x.example` are one peer. */
const normalizeEndpoint = (endpoint: string) => endpoint.replace(/\/+$/, "");

export function createPeer(rc: RequestCtx<z.infer<typeof createPeerBody>>): Reply {
  return commitWrite(rc, (db) => {
    const endpoint = normalizeEndpoint(rc.body.endpoint);
    if (peerByEndpoint(db, endpoint))
      throw conflict("A federation peer with this endpoint already exists in this organization.");
    if (countPeers(db) >= MAX_PEERS_PER_ORG)
      throw conflict(`An organization may register at most ${MAX_PEERS_PER_ORG} federation peers.`);
    const peer = insertPeer(db, {
      peer_id: newId(ID_PREFIX.peer),
      endpoint,
      shared_secret: rc.body.shared_secret,
      direction: rc.body.direction,
      label: rc.body.label ?? null,
      created_by: rc.caller.principalId,
      created_at: clock.nowIso(),
    });
    return {
      status: 201,
      data: peerView(peer),
      audit: {
        action: "federation.peer_created",
        resourceType: "federation_peer",
        resourceId: peer.peer_id,
        detail: { endpoint, direction: peer.direction },
      },
    };
  });
}

export const listPeersRoute = (rc: RequestCtx): Reply => ok({ peers: listPeers(rc.db).map(peerView) });

export function suspend(rc: RequestCtx): Reply {
  const peer = requirePeer(rc.db, rc.params.id);
  if (peer.status === "suspended") return ok({ ...peerView(peer), already_suspended: true });
  return commitWrite(rc, (db) => {
    suspendPeer(db, peer.peer_id, clock.nowIso());
    return {
      status: 200,
      data: { ...peerView(getPeer(db, peer.peer_id)!), already_suspended: false },
      audit: { action: "federation.peer_suspended", resourceType: "federation_peer", resourceId: peer.peer_id },
    };
  });
}

export function addFilter(rc: RequestCtx<z.infer<typeof createFilterBody>>): Reply {
  const peer = requirePeer(rc.db, rc.params.id);
  return commitWrite(rc, (db) => {
    if (filtersOf(db, peer.peer_id).length >= MAX_FILTERS_PER_PEER)
      throw conflict(`A federation peer may have at most ${MAX_FILTERS_PER_PEER} filters.`);
    const row = insertFilter(db, peer.peer_id, rc.body, rc.caller.principalId);
    const view = filterView(row);
    return {
      status: 201,
      data: view,
      audit: {
        action: "federation.filter_created",
        resourceType: "federation_peer",
        resourceId: peer.peer_id,
        detail: {
          filter_id: row.filter_id,
          resource_type: row.resource_type,
          include_kinds: view.include_kinds,
          exclude_subjects: view.exclude_subjects?.length ?? 0,
          min_trust: row.min_trust,
        },
      },
    };
  });
}

export function listFilters(rc: RequestCtx): Reply {
  const peer = requirePeer(rc.db, rc.params.id);
  return ok({ filters: filtersOf(rc.db, peer.peer_id).map(filterView) });
}
