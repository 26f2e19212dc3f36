// Portability: NDJSON export and import of projects, observations and claims (format_version 1).
import { orgRoute } from "../../org/route";
import { exportPage } from "./export";
import { importBatch } from "./import";
import { claimLine, exportHeader, exportQuery, importResponse, observationLine, projectLine } from "./schema";

export const portabilityRoutes = [
  orgRoute({
    method: "GET",
    path: "/v1/export",
    scope: "export:read",
    query: exportQuery,
    ndjson: true,
    ndjsonLines: {
      "svc.export.header": exportHeader,
      project: projectLine,
      observation: observationLine,
      claim: claimLine,
    },
    summary:
      "NDJSON export: header line, then readable records in import order; continue with the header's next_after.",
    operationId: "exportRecords",
    tag: "Portability",
    description:
      "Streams the records the caller may read as NDJSON: one header line (with `import_order` and `next_after`), " +
      "then one record per line in import order.",
    handler: exportPage,
  }),
  orgRoute({
    method: "POST",
    path: "/v1/import",
    scope: "import:write",
    rawBody: true,
    response: { 201: importResponse, 200: importResponse },
    summary:
      "Atomic import of up to 2000 NDJSON record lines (the GET /v1/export line shapes); ids and history kept; no events.",
    operationId: "importRecords",
    tag: "Portability",
    description:
      "Imports up to 2000 NDJSON record lines (the export's line shapes) in one atomic batch, keeping ids and history " +
      "and emitting no events. A missing reference is 400 `UNRESOLVED_REFERENCE`; an id owned by another organization " +
      "is 409.",
    handler: importBatch,
  }),
];
