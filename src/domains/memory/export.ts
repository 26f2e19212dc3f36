// NDJSON export: a header line, then one record per line in import order (projects, observations,
// claims). Only records the caller may read; tombstoned observations export without content.
import { readableWhere } from "../../access/visibility";
import { decodeCursor, encodeCursor } from "../../http/cursor";
import { orgRoute } from "../../http/route";
import type { Db } from "../../org/db";
import type { Caller } from "../../org/request";
import { exportQuery } from "./schema";
import { type ClaimRow, type ObservationRow, type ProjectRow, claimView, observationView, sourcesByClaim } from "./store";

export const EXPORT_FORMAT_VERSION = 1;
export const IMPORT_ORDER = ["projects", "observations", "claims"] as const;
type ExportType = (typeof IMPORT_ORDER)[number];

const isExportCursor = (v: unknown): v is [number, number] =>
  Array.isArray(v) && v.length === 2 && Number.isInteger(v[0]) && Number.isInteger(v[1]);

/** One page of one type, after rowid `afterRow`; returns rows as lines plus the last rowid. */
function page(db: Db, caller: Caller, type: ExportType, afterRow: number, limit: number): { lines: string[]; last: number[] } {
  if (type === "projects") {
    const rows = db.all<ProjectRow & { r: number }>("SELECT rowid AS r, * FROM projects WHERE rowid > ? ORDER BY rowid LIMIT ?", afterRow, limit);
    return { lines: rows.map(({ r: _r, ...p }) => JSON.stringify({ type: "project", ...p })), last: rows.map((r) => r.r) };
  }
  if (type === "observations") {
    const [readable, who] = readableWhere(caller, "o");
    const rows = db.all<ObservationRow & { r: number }>(
      `SELECT o.rowid AS r, o.* FROM observations o WHERE o.rowid > ? AND ${readable} ORDER BY o.rowid LIMIT ?`, afterRow, who, limit);
    return { lines: rows.map((o) => JSON.stringify({ type: "observation", ...observationView(o) })), last: rows.map((r) => r.r) };
  }
  const [readable, who] = readableWhere(caller, "c");
  const rows = db.all<ClaimRow>(`SELECT c.* FROM claims c WHERE c.seq > ? AND ${readable} ORDER BY c.seq LIMIT ?`, afterRow, who, limit);
  const sources = sourcesByClaim(db, caller, rows.map((c) => c.claim_id));
  return {
    lines: rows.map((c) => JSON.stringify({ type: "claim", ...claimView(c, sources.get(c.claim_id) ?? []), author_id: c.author_id })),
    last: rows.map((c) => c.seq),
  };
}

export const exportRoutes = [
  orgRoute({
    method: "GET", path: "/v1/export", scope: "export:read", query: exportQuery, ndjson: true,
    summary: "NDJSON export: header line, then records in import order; page on with the header's next_after.",
    handler: ({ db, caller, query }) => {
      const types: ExportType[] = query.type ? [query.type] : [...IMPORT_ORDER];
      let [typeIndex, afterRow] = query.after ? decodeCursor(query.after, isExportCursor) : [0, 0];
      const lines: string[] = [];
      let next: [number, number] | null = null;
      while (typeIndex < types.length) {
        const want = query.limit - lines.length;
        const got = page(db, caller, types[typeIndex], afterRow, want + 1);
        lines.push(...got.lines.slice(0, want));
        if (got.lines.length > want) {
          next = [typeIndex, got.last[want - 1] ?? afterRow];
          break;
        }
        typeIndex++;
        afterRow = 0;
        if (lines.length >= query.limit) {
          if (typeIndex < types.length) next = [typeIndex, 0];
          break;
        }
      }
      const header = {
        type: "svc.export.header", format_version: EXPORT_FORMAT_VERSION, import_order: IMPORT_ORDER,
        filters: { type: query.type ?? null, limit: query.limit }, records: lines.length,
        has_more: next != null, next_after: next ? encodeCursor(next) : null,
      };
      return { status: 200, data: null, ndjson: [JSON.stringify(header), ...lines] };
    },
  }),
];
