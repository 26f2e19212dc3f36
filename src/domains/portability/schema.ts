// The export/import format (format_version 1): one zod schema per NDJSON line type. They validate
// every imported line and are published as JSON Schema in docs/API.md (the routes' ndjsonLines).
import { z } from "zod";
import { VISIBILITIES } from "../../access/visibility";
import { trustSchema } from "../../auth/trust";
import { clock } from "../../http/clock";
import { ID_PREFIX } from "../../http/ids";
import { count, idOf } from "../../http/shapes";
import { limitParam } from "../../http/validate";
import {
  CLAIM_KINDS,
  CLAIM_STATUSES,
  MAX_CONTENT_CHARS,
  MAX_FUTURE_SKEW_MS,
  MAX_STATEMENT_CHARS,
  OBSERVATION_KINDS,
  RELATIONS,
} from "../memory/schema";

export const EXPORT_FORMAT_VERSION = 1;
export const IMPORT_ORDER = ["projects", "observations", "claims"] as const;
export type ExportType = (typeof IMPORT_ORDER)[number];
export const MAX_IMPORT_LINES = 2000;

export const exportQuery = z.object({
  type: z.enum(IMPORT_ORDER).optional(),
  limit: limitParam(1, 2000, 500),
  after: z.string().max(512).optional(),
});

const projectId = idOf(ID_PREFIX.project, "project");
const observationId = idOf(ID_PREFIX.observation, "observation");
const claimId = idOf(ID_PREFIX.claim, "claim");
const principalId = idOf(ID_PREFIX.principal, "principal");
const workspaceId = idOf(ID_PREFIX.workspace, "workspace");
// Exactly the form the service writes (toISOString), so a restored timestamp is byte-identical.
const timestamp = z.iso.datetime({ precision: 3, error: "must be an ISO 8601 UTC timestamp with milliseconds" });
/** How far past this server's clock a restored record time may lie (clock skew between deployments). */
export const MAX_IMPORT_FUTURE_MS = MAX_FUTURE_SKEW_MS;
/**
 * When something happened (created, updated, purged, valid from): never later than now plus the skew
 * allowance. A record dated in the future would be younger than any retention age for as long as it
 * likes. A claim's `valid_to` is an expiry, future by nature, and takes `timestamp`.
 */
const pastTimestamp = timestamp.refine(
  (at) => !(Date.parse(at) > clock.nowMs() + MAX_IMPORT_FUTURE_MS),
  "must not be more than 5 minutes in the future",
);
// Not trimmed: imported values are restored exactly as exported.
const text = (max: number) => z.string().min(1, "must not be empty").max(max, `must be at most ${max} characters`);
const visibility = z.enum(VISIBILITIES);
const authorId = principalId.describe(
  "restored as is by an owner or admin (anyone else's import records itself); an author unknown here becomes a key-less member principal",
);

export const projectLine = z
  .strictObject({
    type: z.literal("project"),
    project_id: projectId,
    reference: text(500),
    created_by: authorId,
    created_at: pastTimestamp,
    workspace_id: workspaceId
      .nullable()
      .default(null)
      .describe(
        "the workspace whose memberships scope the project's records (null: none); restored on import, the workspace created when missing",
      ),
    workspace_name: text(100)
      .nullable()
      .default(null)
      .describe(
        "that workspace's name when exported; names the workspace import creates when its id is new here (not compared on re-import)",
      ),
  })
  .superRefine((p, ctx) => {
    if (p.workspace_id === null && p.workspace_name !== null)
      ctx.addIssue({ code: "custom", path: ["workspace_name"], message: "must be null when workspace_id is null" });
  })
  .meta({ id: "ProjectLine" });

export const observationLine = z
  .strictObject({
    type: z.literal("observation"),
    observation_id: observationId,
    subject_id: text(200),
    project_id: projectId.nullable(),
    kind: z.enum(OBSERVATION_KINDS),
    content: text(MAX_CONTENT_CHARS).nullable().describe("null for a tombstone (purged observation)"),
    content_hash: z
      .string()
      .regex(/^sha256:[0-9a-f]{64}$/, "must be sha256: + 64 lowercase hex")
      .describe("sha256: + hex of the UTF-8 content; verified on import whenever content is present"),
    source: z.strictObject({ type: text(100), ref: z.string().max(500).optional() }),
    trust: trustSchema,
    visibility,
    author_id: authorId,
    created_at: pastTimestamp,
    occurred_at: pastTimestamp
      .optional()
      .describe(
        "when what it records happened; a line without it (a file written before event time existed) is read as its created_at",
      ),
    purged: z.boolean(),
    purged_at: pastTimestamp.nullable(),
  })
  .superRefine((o, ctx) => {
    if (o.purged !== (o.purged_at !== null))
      ctx.addIssue({ code: "custom", path: ["purged_at"], message: "must be set exactly when purged is true" });
    if (o.purged !== (o.content === null))
      ctx.addIssue({ code: "custom", path: ["content"], message: "must be null exactly when purged is true" });
  })
  .meta({ id: "ObservationLine" });

export const claimLine = z
  .strictObject({
    type: z.literal("claim"),
    claim_id: claimId,
    subject_id: text(200),
    project_id: projectId.nullable(),
    kind: z.enum(CLAIM_KINDS),
    statement: text(MAX_STATEMENT_CHARS),
    status: z.enum(CLAIM_STATUSES),
    visibility,
    trust: trustSchema,
    version: z.number().int("must be an integer").min(1, "must be at least 1"),
    valid_from: pastTimestamp,
    valid_to: timestamp.nullable(),
    superseded_by: claimId.nullable().describe("kept as recorded; may name a claim of a later import batch"),
    disputes: z.array(claimId).max(50, "must have at most 50 entries").describe("claim ids, kept as recorded"),
    sources: z
      .array(z.strictObject({ observation_id: observationId, relation: z.enum(RELATIONS) }))
      .max(50, "must have at most 50 entries")
      .describe("in order; only the sources the exporting caller could read; each must exist on import"),
    created_at: pastTimestamp,
    updated_at: pastTimestamp,
    occurred_at: pastTimestamp
      .optional()
      .describe(
        "the latest occurred_at of its sources, restored as recorded; a line without it is read as its created_at",
      ),
    author_id: authorId,
  })
  .superRefine((c, ctx) => {
    // A superseded claim may carry null: its successor is one the exporter could not read (the export
    // never names a hidden claim), and the file must still import.
    if (c.superseded_by !== null && c.status !== "superseded")
      ctx.addIssue({ code: "custom", path: ["superseded_by"], message: "may be set only when status is superseded" });
  })
  .meta({ id: "ClaimLine" });

export type ProjectLine = z.infer<typeof projectLine>;
export type ObservationLine = z.infer<typeof observationLine>;
export type ClaimLine = z.infer<typeof claimLine>;

/** First line of every export page. Import skips header lines (format_version must be 1). */
export const exportHeader = z
  .strictObject({
    type: z.literal("svc.export.header"),
    format_version: z.literal(EXPORT_FORMAT_VERSION),
    import_order: z.tuple([z.literal("projects"), z.literal("observations"), z.literal("claims")]),
    filters: z.strictObject({
      type: z.enum(IMPORT_ORDER).nullable(),
      limit: z.number().int(),
      after: z.string().nullable(),
    }),
    records: z.number().int(),
    has_more: z.boolean(),
    next_after: z
      .string()
      .nullable()
      .describe("pass as `after` (with the same `type`) to continue; null on the last page"),
    exported_at: timestamp,
  })
  .meta({ id: "ExportHeader" });

/** POST /v1/import (published in docs/openapi.json; checked against every answer of the test suite). */
const perType = z.strictObject({ projects: count, observations: count, claims: count });
export const importResponse = z
  .strictObject({
    imported: perType,
    skipped: perType.describe("Lines whose record already exists here, identical"),
    principals_created: count,
    workspaces_created: count,
  })
  .meta({ id: "ImportResult" });
