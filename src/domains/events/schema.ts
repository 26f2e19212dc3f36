// Response schemas of the event log (published in docs/openapi.json; checked against the suite's answers).
import { z } from "zod";
import { ID_PREFIX } from "../../http/ids";
import { idOf, openObject, timestamp } from "../../http/shapes";
import { EVENT_KINDS } from "../../org/write";

export const eventResponse = z
  .strictObject({
    id: idOf(ID_PREFIX.event),
    kind: z.enum(EVENT_KINDS),
    actor_id: z.string(),
    resource_type: z.string(),
    resource_id: z.string(),
    payload: openObject.describe("Metadata only: never content."),
    created_at: timestamp,
  })
  .meta({ id: "Event" });

export const eventListResponse = z
  .strictObject({
    events: z.array(eventResponse),
    cursor: idOf(ID_PREFIX.event)
      .nullable()
      .describe("The last event id of the page (or the `after` given): pass it as `after`."),
  })
  .meta({ id: "EventList" });
