// Federation (DESIGN part 2): peers and their filters are administered by owners and admins here;
// pull and push are called by the other deployment with a key of this organization it holds.
import { ADMIN_ROLES } from "../../auth/roles";
import { decodeCursor, isSeqCursor, pageOf } from "../../http/cursor";
import { orgRoute } from "../../org/route";
import { ok } from "../../org/request";
import { addFilter, createPeer, listFilters, listPeersRoute, suspend } from "./peers";
import { pull } from "./pull";
import { push } from "./push";
import {
  createFilterBody,
  createPeerBody,
  filterListResponse,
  filterResponse,
  logListResponse,
  logQuery,
  peerListResponse,
  peerResponse,
  peerSuspendedResponse,
  pullBody,
  pullResponse,
  pushBody,
  pushResponse,
} from "./schema";
import { logPage, logView, requirePeer } from "./store";

/** Pull and push are called by the other deployment with a key of this organization it holds: never a dashboard session. */
const PEER_CREDENTIAL = ["api_key"] as const;

export const federationRoutes = [
  orgRoute({
    method: "POST",
    path: "/v1/federation/peers",
    scope: "federation:write",
    roles: ADMIN_ROLES,
    body: createPeerBody,
    response: { 201: peerResponse },
    summary: "Register a peer deployment (one per endpoint); the shared secret is never returned.",
    operationId: "registerPeer",
    tag: "Federation",
    description:
      "Registers another deployment as a peer (one per endpoint) with a shared secret and a direction; the secret is " +
      "never returned.",
    handler: createPeer,
  }),
  orgRoute({
    method: "GET",
    path: "/v1/federation/peers",
    scope: "federation:read",
    response: { 200: peerListResponse },
    summary: "Peers with status, direction and sync cursor.",
    operationId: "listPeers",
    tag: "Federation",
    description: "Lists peers with their status, direction and sync cursor.",
    handler: listPeersRoute,
  }),
  orgRoute({
    method: "POST",
    path: "/v1/federation/peers/:id/suspend",
    scope: "federation:write",
    roles: ADMIN_ROLES,
    response: { 200: peerSuspendedResponse },
    summary: "Suspend a peer: its pull and push are then 403.",
    operationId: "suspendPeer",
    tag: "Federation",
    description: "Suspends a peer: its pull and push calls answer 403 from then on.",
    handler: suspend,
  }),
  orgRoute({
    method: "POST",
    path: "/v1/federation/peers/:id/filters",
    scope: "federation:write",
    roles: ADMIN_ROLES,
    body: createFilterBody,
    response: { 201: filterResponse },
    summary: "Add a filter; filters bind both directions, and a resource type without one never crosses.",
    operationId: "addPeerFilter",
    tag: "Federation",
    description:
      "Adds a filter to a peer. Filters bind both directions, and a resource type without a filter never crosses.",
    handler: addFilter,
  }),
  orgRoute({
    method: "GET",
    path: "/v1/federation/peers/:id/filters",
    scope: "federation:read",
    response: { 200: filterListResponse },
    summary: "A peer's filters.",
    operationId: "listPeerFilters",
    tag: "Federation",
    description: "Lists a peer's filters.",
    handler: listFilters,
  }),
  orgRoute({
    method: "POST",
    path: "/v1/federation/pull",
    scope: "federation:write",
    stages: PEER_CREDENTIAL,
    explicitScope: true,
    rawBody: true,
    rawBodySchema: pullBody,
    response: { 200: pullResponse },
    summary:
      "Called by the peer, signed like push (x-svc-peer-signature over the raw body, sent_at): up to 200 filtered team events after its cursor (advanced), optional signed bundles; signed response.",
    operationId: "pullFederationEvents",
    tag: "Federation",
    description:
      "Called by a peer, signed with `x-svc-peer-signature` over the raw body: returns up to 200 filtered team events " +
      "after its cursor and advances it; `include_memory` adds signed claim bundles. A bad signature or stale " +
      "`sent_at` is 403 and changes nothing.",
    handler: pull,
  }),
  orgRoute({
    method: "POST",
    path: "/v1/federation/push",
    scope: "federation:write",
    stages: PEER_CREDENTIAL,
    explicitScope: true,
    rawBody: true,
    rawBodySchema: pushBody,
    response: { 200: pushResponse },
    summary:
      "Called by the peer: signed events and bundles; per-entry success, conflict or rejected; exchange_id replays.",
    operationId: "pushFederationEvents",
    tag: "Federation",
    description:
      "Called by a peer with signed events and bundles; each entry reports success, conflict or rejected, and a " +
      "repeated `exchange_id` replays. A wrong signature or an inactive or wrongly directed peer is 403.",
    handler: push,
  }),
  orgRoute({
    method: "GET",
    path: "/v1/federation/log",
    scope: "federation:read",
    query: logQuery,
    response: { 200: logListResponse },
    summary: "The exchange log of one peer, oldest first.",
    operationId: "listFederationLog",
    tag: "Federation",
    description: "Lists the exchange log of one `peer_id`, oldest first.",
    handler: ({ db, query }) => {
      const peer = requirePeer(db, query.peer_id);
      const afterSeq = query.after ? decodeCursor(query.after, isSeqCursor)[0] : 0;
      const { page, ...more } = pageOf(logPage(db, peer.peer_id, afterSeq, query.limit), query.limit, (l) => [l.seq]);
      return ok({ entries: page.map(logView), ...more });
    },
  }),
];
