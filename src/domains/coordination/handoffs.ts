// Handoffs: offer work to another principal, optionally carrying a context run and a checkpoint,
// which the recipient may then read while the handoff is pending or accepted. Only the sender's own run
// and checkpoint can be handed off.
import { clock } from "../../http/clock";
import { pageOf, positionAfter } from "../../http/cursor";
import { invalid, notFound } from "../../http/errors";
import { ID_PREFIX, newId } from "../../http/ids";
import { orgRoute } from "../../org/route";
import type { Db } from "../../sql/db";
import type { Caller } from "../../org/request";
import { ok } from "../../org/request";
import { commitWrite } from "../../org/write";
import type { z } from "zod";
import { getPrincipal } from "../identity/store";
import { readableRun } from "../memory/context-store";
import { unresolved } from "../memory/store";
import {
  type HandoffRow,
  getHandoff,
  handoffPosition,
  insertHandoff,
  pendingHandoffsAfter,
  readableCheckpoint,
  resolveHandoff,
} from "./store";
import { handoffBody, handoffListQuery, handoffListResponse, handoffResponse, resolveHandoffBody } from "./schema";

const view = (h: HandoffRow) => ({
  handoff_id: h.handoff_id,
  from_principal_id: h.from_principal_id,
  to_principal_id: h.to_principal_id,
  context_id: h.context_id,
  checkpoint_id: h.checkpoint_id,
  note: h.note,
  status: h.status,
  created_at: h.created_at,
  resolved_at: h.resolved_at,
});

const eventPayload = (h: HandoffRow) => ({
  from_principal_id: h.from_principal_id,
  to_principal_id: h.to_principal_id,
  context_id: h.context_id,
  checkpoint_id: h.checkpoint_id,
  status: h.status,
});

/** Offer a handoff. Shared by the route and the MCP tool; the caller commits. */
export function createHandoff(db: Db, caller: Caller, body: z.infer<typeof handoffBody>) {
  if (body.to_principal_id === caller.principalId)
    throw invalid(`Invalid field "to_principal_id": cannot hand off to yourself.`);
  if (!getPrincipal(db, body.to_principal_id)) throw unresolved("principal", [body.to_principal_id]);
  // Only the sender's own run and checkpoint: what was handed to the sender is not its to pass on, so
  // a delegation never outlives the handoff that carried it.
  if (body.context_id !== undefined && readableRun(db, caller, body.context_id)?.actor_id !== caller.principalId)
    throw unresolved("context", [body.context_id]);
  if (
    body.checkpoint_id !== undefined &&
    readableCheckpoint(db, caller, body.checkpoint_id)?.writer_id !== caller.principalId
  )
    throw unresolved("checkpoint", [body.checkpoint_id]);
  const row: HandoffRow = {
    handoff_id: newId(ID_PREFIX.handoff),
    from_principal_id: caller.principalId,
    to_principal_id: body.to_principal_id,
    context_id: body.context_id ?? null,
    checkpoint_id: body.checkpoint_id ?? null,
    note: body.note ?? null,
    status: "pending",
    created_at: clock.nowIso(),
    resolved_at: null,
  };
  insertHandoff(db, row);
  return {
    data: view(row),
    event: {
      kind: "handoff.created" as const,
      resourceType: "handoff",
      resourceId: row.handoff_id,
      payload: eventPayload(row),
    },
  };
}

export const handoffRoutes = [
  orgRoute({
    method: "POST",
    path: "/v1/handoffs",
    scope: "handoffs:write",
    body: handoffBody,
    response: { 201: handoffResponse },
    summary: "Offer work to a principal, optionally with a context run and a checkpoint you can read.",
    operationId: "createHandoff",
    tag: "Coordination",
    description:
      "Offers work to another principal, optionally pointing at a context run and a checkpoint the caller can read. " +
      "The handoff starts pending.",
    handler: (rc) =>
      commitWrite(rc, (db) => {
        const out = createHandoff(db, rc.caller, rc.body);
        return {
          status: 201,
          data: out.data,
          events: [out.event],
          audit: { action: "handoff.created", resourceType: "handoff", resourceId: out.data.handoff_id },
        };
      }),
  }),

  orgRoute({
    method: "POST",
    path: "/v1/handoffs/:id/resolve",
    scope: "handoffs:write",
    body: resolveHandoffBody,
    response: { 200: handoffResponse },
    summary: "Accept or reject a pending handoff addressed to you.",
    operationId: "resolveHandoff",
    tag: "Coordination",
    description: "Accepts or rejects a pending handoff. Only its recipient may resolve it; anyone else gets a 400.",
    handler: (rc) => {
      const h = getHandoff(rc.db, rc.params.id);
      if (!h) throw notFound("Handoff");
      if (h.to_principal_id !== rc.caller.principalId) throw invalid("Only the recipient may resolve this handoff.");
      if (h.status !== "pending") throw invalid(`The handoff is already ${h.status}.`);
      return commitWrite(rc, (db) => {
        const at = clock.nowIso();
        resolveHandoff(db, h.handoff_id, rc.body.status, at);
        const row = { ...h, status: rc.body.status, resolved_at: at };
        return {
          status: 200,
          data: view(row),
          events: [
            {
              kind: rc.body.status === "accepted" ? "handoff.accepted" : "handoff.rejected",
              resourceType: "handoff",
              resourceId: h.handoff_id,
              payload: eventPayload(row),
            },
          ],
          audit: { action: `handoff.${rc.body.status}`, resourceType: "handoff", resourceId: h.handoff_id },
        };
      });
    },
  }),

  orgRoute({
    method: "GET",
    path: "/v1/handoffs",
    scope: "handoffs:read",
    query: handoffListQuery,
    response: { 200: handoffListResponse },
    summary: "Pending handoffs addressed to the caller, oldest first.",
    operationId: "listHandoffs",
    tag: "Coordination",
    description:
      "Lists the pending handoffs addressed to the caller, oldest first: the polling path for agents without " +
      "webhooks.",
    handler: ({ db, caller, query }) => {
      // The cursor names the page's last handoff (resolved to its place here, among the caller's own,
      // resolved or not); one addressed to someone else is as missing as a random id.
      const after = query.after
        ? positionAfter(
            query.after,
            ID_PREFIX.handoff,
            (id) => handoffPosition(db, id, caller.principalId),
            () => {
              throw notFound("Handoff");
            },
          )
        : 0;
      const rows = pendingHandoffsAfter(db, caller.principalId, after, query.limit + 1);
      const { page, ...more } = pageOf(rows, query.limit, (h) => [h.handoff_id]);
      return ok({ handoffs: page.map(view), ...more });
    },
  }),
];
