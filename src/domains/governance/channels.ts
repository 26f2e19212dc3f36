// Channels: named audiences served released knowledge through one bound gateway principal (an existing
// non-human principal; one live channel per gateway). Status moves with the current expected_version,
// by the channel's creator or an owner/admin; `disabled` is final. Audited, never evented.
import { managesShared } from "../../access/policy";
import { clock } from "../../http/clock";
import { afterPair, pageOf } from "../../http/cursor";
import { conflict, forbidden, invalid, notFound } from "../../http/errors";
import { ID_PREFIX, newId } from "../../http/ids";
import { orgRoute } from "../../org/route";
import { ok } from "../../org/request";
import { commitWrite } from "../../org/write";
import { getPrincipal } from "../identity/store";
import { unresolved } from "../memory/store";
import { channelBody, channelListQuery, channelListResponse, channelPatchBody, channelResponse } from "./schema";
import {
  type ChannelRow,
  channelNameTaken,
  channelView,
  channelsAfter,
  getChannel,
  insertChannel,
  liveChannelOfGateway,
  updateChannelStatus,
} from "./store";

export const channelAdminRoutes = [
  orgRoute({
    method: "POST",
    path: "/v1/channels",
    scope: "releases:write",
    body: channelBody,
    response: { 201: channelResponse },
    summary: "Create a channel: audiences, minimum trust, and the one gateway principal that may compile it.",
    operationId: "createChannel",
    tag: "Governance",
    description:
      "Creates a channel that serves released knowledge to one gateway principal, with its audiences and minimum " +
      "trust.",
    handler: (rc) =>
      commitWrite(rc, (db) => {
        const gateway = getPrincipal(db, rc.body.gateway_principal_id);
        if (!gateway) throw unresolved("principal", [rc.body.gateway_principal_id]);
        if (gateway.kind === "human")
          throw invalid(`Invalid field "gateway_principal_id": a gateway must be a non-human (service) principal.`);
        if (channelNameTaken(db, rc.body.name)) throw conflict("A channel with this name already exists.");
        const bound = liveChannelOfGateway(db, gateway.principal_id);
        if (bound) throw conflict(`The principal is already the gateway of channel ${bound.channel_id}.`);
        const at = clock.nowIso();
        const row: ChannelRow = {
          channel_id: newId(ID_PREFIX.channel),
          name: rc.body.name,
          audiences: JSON.stringify([...new Set(rc.body.audiences)]),
          min_trust: rc.body.min_trust,
          gateway_principal_id: gateway.principal_id,
          status: "active",
          version: 1,
          created_by: rc.caller.principalId,
          created_at: at,
          updated_at: at,
        };
        insertChannel(db, row);
        return {
          status: 201,
          data: channelView(row),
          audit: {
            action: "channel.created",
            resourceType: "channel",
            resourceId: row.channel_id,
            detail: { gateway_principal_id: row.gateway_principal_id, min_trust: row.min_trust },
          },
        };
      }),
  }),

  orgRoute({
    method: "GET",
    path: "/v1/channels",
    scope: "releases:read",
    query: channelListQuery,
    response: { 200: channelListResponse },
    summary: "List channels (metadata only; filter status), oldest first.",
    operationId: "listChannels",
    tag: "Governance",
    description: "Lists channels (metadata only), optionally by status, oldest first.",
    handler: ({ db, query }) => {
      const rows = channelsAfter(db, { after: afterPair(query.after), status: query.status, limit: query.limit + 1 });
      const { page, ...rest } = pageOf(rows, query.limit, (c) => [c.created_at, c.channel_id]);
      return ok({ channels: page.map(channelView), ...rest });
    },
  }),

  orgRoute({
    method: "PATCH",
    path: "/v1/channels/:id",
    scope: "releases:write",
    body: channelPatchBody,
    response: { 200: channelResponse },
    summary:
      "Set a channel active, paused or disabled (final) with its current expected_version; its creator or an owner/admin.",
    operationId: "updateChannel",
    tag: "Governance",
    description:
      "Sets a channel active, paused or disabled (final) given its current `expected_version`; its creator or an " +
      "owner/admin.",
    handler: (rc) =>
      commitWrite(rc, (db) => {
        const c = getChannel(db, rc.params.id);
        if (!c) throw notFound("Channel");
        if (!managesShared(rc.caller, c.created_by))
          throw forbidden("Only the channel's creator or an owner or admin may change it.");
        if (c.status === "disabled") throw invalid("A disabled channel cannot change.");
        if (rc.body.expected_version !== c.version)
          throw conflict(`Stale expected_version ${rc.body.expected_version}: the channel is at version ${c.version}.`);
        const next: ChannelRow = { ...c, status: rc.body.status, version: c.version + 1, updated_at: clock.nowIso() };
        updateChannelStatus(db, c.channel_id, next);
        return {
          status: 200,
          data: channelView(next),
          audit: {
            action: "channel.changed",
            resourceType: "channel",
            resourceId: c.channel_id,
            detail: { from_status: c.status, status: next.status, version: next.version },
          },
        };
      }),
  }),
];
