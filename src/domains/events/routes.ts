import { z } from "zod";
import { notFound } from "../../http/errors";
import { orgRoute } from "../../org/route";
import { limitParam } from "../../http/validate";
import type { Db } from "../../sql/db";
import { type EventRow, readableEvent, readableEventsAfter, readableEventsBefore } from "../../org/events";
import { type Caller, ok } from "../../org/request";
import { EVENT_KINDS } from "../../org/write";
import { eventListResponse, eventResponse } from "./schema";

const eventView = (e: EventRow) => ({
  id: e.event_id,
  kind: e.kind,
  actor_id: e.actor_id,
  resource_type: e.resource_type,
  resource_id: e.resource_id,
  payload: JSON.parse(e.payload),
  created_at: e.created_at,
});

/**
 * The position of an event the caller may read, for `after`: an event it cannot read is as unknown
 * as a random id (404), so a cursor never confirms that someone else's event exists.
 */
export function readableEventSeq(db: Db, caller: Caller, eventId: string): number {
  const anchor = readableEvent(db, caller, eventId);
  if (!anchor) throw notFound("Event");
  return anchor.seq;
}

const listEventsQuery = z.object({
  after: z.string().max(64).optional(),
  limit: limitParam(1, 200, 50),
  kind: z.enum(EVENT_KINDS).optional(),
  // `newest`: newest first, `after` continuing with older events (the operator console's recent activity).
  order: z.enum(["commit", "newest"]).default("commit"),
});

export const eventRoutes = [
  orgRoute({
    method: "GET",
    path: "/v1/events",
    scope: "events:read",
    query: listEventsQuery,
    response: { 200: eventListResponse },
    summary:
      "Domain events in commit order after an event id (order=newest: newest first, after an event id continuing with older ones); metadata only.",
    operationId: "listEvents",
    tag: "Events",
    description:
      "Lists domain events in commit order after an event id, metadata only (never content). Pass the returned " +
      "`cursor` as `after` to continue. With `order=newest` the newest come first, and `after` continues with older ones.",
    handler: ({ db, caller, query }) => {
      const from = query.after ? readableEventSeq(db, caller, query.after) : null;
      const rows =
        query.order === "newest"
          ? readableEventsBefore(db, caller, from, { kind: query.kind, limit: query.limit })
          : readableEventsAfter(db, caller, from ?? 0, { kind: query.kind, limit: query.limit });
      const cursor = rows.length ? rows[rows.length - 1].event_id : (query.after ?? null);
      return ok({ events: rows.map(eventView), cursor });
    },
  }),
  orgRoute({
    method: "GET",
    path: "/v1/events/:id",
    scope: "events:read",
    response: { 200: eventResponse },
    summary: "One event.",
    operationId: "getEvent",
    tag: "Events",
    description: "Reads one domain event the caller may see.",
    handler: ({ db, caller, params }) => {
      const row = readableEvent(db, caller, params.id);
      if (!row) throw notFound("Event");
      return ok(eventView(row));
    },
  }),
];
