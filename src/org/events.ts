// A row of the events table: written by commitWrite (src/org/write.ts), read by GET /v1/events and
// by webhook delivery.
export interface EventRow {
  seq: number;
  event_id: string;
  kind: string;
  actor_id: string;
  resource_type: string;
  resource_id: string;
  /** JSON, metadata only; delivered to webhooks exactly as stored. */
  payload: string;
  visibility: string;
  created_at: string;
}
