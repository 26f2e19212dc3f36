// GET /v1/export: a header line, then one record per line in import order (projects, observations,
// claims). Only records the caller may read; tombstoned observations export without content.
// Memory is bounded per page (at most `limit` records and about EXPORT_PAGE_CHARS of record lines),
// never by the size of the organization: the header's next_after continues where a page stopped.
import { readableWhere } from "../../access/policy";
import { clock } from "../../http/clock";
import { decodeCursor, encodeCursor } from "../../http/cursor";
import type { Db } from "../../org/db";
import type { Caller, Reply, RequestCtx } from "../../org/request";
import { commitWrite } from "../../org/write";
import {
  type ClaimRow, type ObservationRow, type ProjectRow, type SourceRow, claimView, observationView, sourcesByClaim,
} from "../memory/store";
import { EXPORT_FORMAT_VERSION, type ExportType, IMPORT_ORDER, type exportQuery } from "./schema";
import type { z } from "zod";

/** A page stops before the record that would take its lines past this many characters (one record always fits). */
export const EXPORT_PAGE_CHARS = 4 * 1024 * 1024;
/** Rows read from SQLite at a time while filling a page. */
const CHUNK_ROWS = 50;

// Line builders, shared with import (which compares an existing record with an imported line).
export const projectLineOf = (p: ProjectRow) => ({
  type: "project" as const, project_id: p.project_id, reference: p.reference, created_by: p.created_by, created_at: p.created_at,
});
export const observationLineOf = (o: ObservationRow) => ({ type: "observation" as const, ...observationView(o) });
export const claimLineOf = (c: ClaimRow, sources: SourceRow[]) =>
  ({ type: "claim" as const, ...claimView(c, sources), author_id: c.author_id });

/** Rows of one type after rowid `after`, as [rowid, serialized line]. */
function chunk(db: Db, caller: Caller, type: ExportType, after: number): [number, string][] {
  if (type === "projects")
    return db.all<ProjectRow & { r: number }>(
      "SELECT rowid AS r, * FROM projects WHERE rowid > ? ORDER BY rowid LIMIT ?", after, CHUNK_ROWS,
    ).map((p) => [p.r, JSON.stringify(projectLineOf(p))]);
  if (type === "observations") {
    const [readable, ...who] = readableWhere(caller, "o");
    return db.all<ObservationRow & { r: number }>(
      `SELECT o.rowid AS r, o.* FROM observations o WHERE o.rowid > ? AND ${readable} ORDER BY o.rowid LIMIT ?`,
      after, ...who, CHUNK_ROWS,
    ).map((o) => [o.r, JSON.stringify(observationLineOf(o))]);
  }
  const [readable, ...who] = readableWhere(caller, "c");
  const rows = db.all<ClaimRow>(
    `SELECT c.* FROM claims c WHERE c.seq > ? AND ${readable} ORDER BY c.seq LIMIT ?`, after, ...who, CHUNK_ROWS);
  // Sources the caller cannot read are left out, exactly as in every other claim view.
  const sources = sourcesByClaim(db, caller, rows.map((c) => c.claim_id));
  return rows.map((c) => [c.seq, JSON.stringify(claimLineOf(c, sources.get(c.claim_id) ?? []))]);
}

type Cursor = [ExportType, number];
interface Page {
  lines: string[];
  /** Where the next page starts; null when this page reached the end. */
  next: Cursor | null;
}

function readPage(db: Db, caller: Caller, types: ExportType[], from: Cursor | null, limit: number): Page {
  const lines: string[] = [];
  let chars = 0;
  const startIndex = from ? types.indexOf(from[0]) : 0;
  for (let t = startIndex; t < types.length; t++) {
    let after = from && t === startIndex ? from[1] : 0;
    for (;;) {
      const rows = chunk(db, caller, types[t], after);
      for (const [rowid, line] of rows) {
        // Looking one record past the page makes has_more exact.
        if (lines.length === limit || (lines.length > 0 && chars + line.length > EXPORT_PAGE_CHARS))
          return { lines, next: [types[t], after] };
        lines.push(line);
        chars += line.length;
        after = rowid;
      }
      if (rows.length < CHUNK_ROWS) break;
    }
  }
  return { lines, next: null };
}

export function exportPage(rc: RequestCtx<undefined, z.infer<typeof exportQuery>>): Reply {
  const { query } = rc;
  const types: ExportType[] = query.type ? [query.type] : [...IMPORT_ORDER];
  const isCursor = (v: unknown): v is Cursor =>
    Array.isArray(v) && v.length === 2 && types.includes(v[0]) && Number.isInteger(v[1]) && v[1] >= 0;
  const from = query.after ? decodeCursor(query.after, isCursor) : null;
  let page: Page = { lines: [], next: null };
  // Read and audit in one transaction: the audit entry describes exactly what was handed out.
  const reply = commitWrite(rc, (db) => {
    page = readPage(db, rc.caller, types, from, query.limit);
    return {
      status: 200, data: null,
      audit: {
        action: "export.read", resourceType: "organization", resourceId: rc.orgId,
        detail: { type: query.type ?? null, limit: query.limit, records: page.lines.length, has_more: page.next != null },
      },
    };
  });
  const header = {
    type: "svc.export.header", format_version: EXPORT_FORMAT_VERSION, import_order: IMPORT_ORDER,
    filters: { type: query.type ?? null, limit: query.limit, after: query.after ?? null },
    records: page.lines.length, has_more: page.next != null, next_after: page.next ? encodeCursor(page.next) : null,
    exported_at: clock.nowIso(),
  };
  return { ...reply, ndjson: [JSON.stringify(header), ...page.lines] };
}
