// GET /v1/export: a header line, then one record per line in import order (projects, observations,
// claims). Only records the caller may read (retrievable; projects: projectVisibleWhere, or created
// by the caller), decided in every statement that reads them; tombstoned observations export without content.
// The page's extent is planned from row positions alone (so the header can carry the continuation),
// then the records are streamed 50 rows per read: memory stays constant however large the
// organization or its records are.
import { clock } from "../../http/clock";
import { decodeCursor, encodeCursor, invalidCursor } from "../../http/cursor";
import type { Db } from "../../sql/db";
import type { Caller, Reply, RequestCtx } from "../../org/request";
import { commitWrite } from "../../org/write";
import { projectVisibleWhere, retrievable } from "../../access/retrieval";
import type { ClaimRow, ObservationRow, ProjectRow, SourceRow } from "../memory/records";
import { workspaceNames } from "../access/store";
import {
  claimReferences,
  claimView,
  observationView,
  retrievableClaimIds,
  sourcesByClaim,
  withVisibleReferences,
} from "../memory/store";
import { EXPORT_FORMAT_VERSION, type ExportType, IMPORT_ORDER, type exportQuery } from "./schema";
import type { z } from "zod";

/** Rows read from SQLite at a time, both when planning a page and while streaming it. */
const CHUNK_ROWS = 50;

const EXPORT_TABLE: Record<ExportType, { sql: string; alias: string; position: string; id: string }> = {
  projects: { sql: "projects p", alias: "p", position: "p.rowid", id: "p.project_id" },
  observations: { sql: "observations o", alias: "o", position: "o.rowid", id: "o.observation_id" },
  claims: { sql: "claims c", alias: "c", position: "c.seq", id: "c.claim_id" },
};

/**
 * Export cursors name a record by id, never by position: positions are organization-wide counters, so
 * two of one caller's cursors would tell how many records others wrote in between. These two convert,
 * each only for a record the caller may export (null for one it may not, exactly as for none).
 */
function exportIdAt(db: Db, caller: Caller, type: ExportType, position: number): string | null {
  const t = EXPORT_TABLE[type];
  const [where, args] = exportWindow(caller, type);
  return (
    db.first<{ id: string }>(
      `SELECT ${t.id} AS id FROM ${t.sql} WHERE ${t.position} = ? AND ${where}`,
      position,
      0,
      Number.MAX_SAFE_INTEGER,
      ...args,
    )?.id ?? null
  );
}

function exportPositionOf(db: Db, caller: Caller, type: ExportType, id: string): number | null {
  const t = EXPORT_TABLE[type];
  const [where, args] = exportWindow(caller, type);
  return (
    db.first<{ r: number }>(
      `SELECT ${t.position} AS r FROM ${t.sql} WHERE ${t.id} = ? AND ${where}`,
      id,
      0,
      Number.MAX_SAFE_INTEGER,
      ...args,
    )?.r ?? null
  );
}

/** Position window (after, upTo] plus what the caller may retrieve (projects: projectVisibleWhere, or its own). */
function exportWindow(caller: Caller, type: ExportType): [string, unknown[]] {
  const t = EXPORT_TABLE[type];
  const [ok, ...args] =
    type === "projects" ? projectVisibleWhere(caller, "p", { orCreator: true }) : retrievable(caller, t.alias);
  return [`${t.position} > ? AND ${t.position} <= ? AND ${ok}`, args];
}

/** Export positions of one type in (after, upTo], at most `limit`, in order (no record read). */
function exportPositions(
  db: Db,
  caller: Caller,
  type: ExportType,
  after: number,
  upTo: number,
  limit: number,
): number[] {
  const t = EXPORT_TABLE[type];
  const [where, args] = exportWindow(caller, type);
  return db
    .all<{ r: number }>(
      `SELECT ${t.position} AS r FROM ${t.sql} WHERE ${where} ORDER BY ${t.position} LIMIT ?`,
      after,
      upTo,
      ...args,
      limit,
    )
    .map((x) => x.r);
}

/** Exported rows of one type in (after, upTo], at most `limit`, in order, each with its position `r`. */
function exportRows(db: Db, caller: Caller, type: ExportType, after: number, upTo: number, limit: number) {
  const t = EXPORT_TABLE[type];
  const [where, args] = exportWindow(caller, type);
  return db.all<Record<string, unknown> & { r: number }>(
    `SELECT ${t.position} AS r, ${t.alias}.* FROM ${t.sql} WHERE ${where} ORDER BY ${t.position} LIMIT ?`,
    after,
    upTo,
    ...args,
    limit,
  );
}

// Line builders, shared with import (which compares an existing record with an imported line).
export const projectLineOf = (p: ProjectRow, workspaceName: string | null) => ({
  type: "project" as const,
  project_id: p.project_id,
  reference: p.reference,
  created_by: p.created_by,
  created_at: p.created_at,
  workspace_id: p.workspace_id ?? null,
  workspace_name: p.workspace_id ? workspaceName : null,
});
export const observationLineOf = (o: ObservationRow) => ({ type: "observation" as const, ...observationView(o) });
export const claimLineOf = (c: ClaimRow, sources: SourceRow[]) => ({
  type: "claim" as const,
  ...claimView(c, sources),
  author_id: c.author_id,
});

/** Rows of one type in (after, upTo], as [position, serialized line]. */
function chunk(db: Db, caller: Caller, type: ExportType, after: number, upTo: number): [number, string][] {
  const rows = exportRows(db, caller, type, after, upTo, CHUNK_ROWS);
  if (type === "projects") {
    const names = workspaceNames(
      db,
      rows.flatMap((p) => (p.workspace_id ? [p.workspace_id as string] : [])),
    );
    return rows.map((p) => [
      p.r,
      JSON.stringify(projectLineOf(p as unknown as ProjectRow, names.get(p.workspace_id as string) ?? null)),
    ]);
  }
  if (type === "observations")
    return rows.map((o) => [o.r, JSON.stringify(observationLineOf(o as unknown as ObservationRow))]);
  // Sources the caller cannot read are left out, exactly as in every other claim view.
  const claims = rows as unknown as ClaimRow[];
  const sources = sourcesByClaim(
    db,
    caller,
    claims.map((c) => c.claim_id),
  );
  const visible = retrievableClaimIds(db, caller, claimReferences(claims));
  return claims.map((c) => [
    c.seq,
    JSON.stringify(withVisibleReferences(claimLineOf(c, sources.get(c.claim_id) ?? []), visible)),
  ]);
}

type Cursor = [ExportType, number];
/**
 * What `next_after` carries: the type and the id of the last record handed out ("" = that type from its
 * start). Never a position: positions are organization-wide counters, so two cursors would tell how
 * many records others wrote in between.
 */
type CursorText = [ExportType, string];

/** One type's share of a page: positions (after, upTo], `count` readable records. */
interface Segment {
  type: ExportType;
  after: number;
  upTo: number;
  count: number;
}

interface Plan {
  segments: Segment[];
  records: number;
  /** Where the next page starts; null when this page reaches the end. */
  next: Cursor | null;
}

/**
 * Decide a page's extent by reading positions only (at most limit + 1 integers), so the header can
 * carry the exact continuation before any record line is produced.
 */
function planPage(db: Db, caller: Caller, types: ExportType[], from: Cursor | null, limit: number): Plan {
  const segments: Segment[] = [];
  let records = 0;
  const startIndex = from ? types.indexOf(from[0]) : 0;
  for (let i = startIndex; i < types.length; i++) {
    const type = types[i];
    const start = from && i === startIndex ? from[1] : 0;
    const positions = exportPositions(db, caller, type, start, Number.MAX_SAFE_INTEGER, limit - records + 1);
    const take = positions.slice(0, limit - records);
    if (take.length) segments.push({ type, after: start, upTo: take[take.length - 1], count: take.length });
    records += take.length;
    // Looking one record past the page makes has_more exact.
    if (positions.length > take.length)
      return { segments, records, next: [type, take.length ? take[take.length - 1] : start] };
    if (records === limit) {
      const rest = types
        .slice(i + 1)
        .find((later) => exportPositions(db, caller, later, 0, Number.MAX_SAFE_INTEGER, 1).length > 0);
      return { segments, records, next: rest ? [rest, 0] : null };
    }
  }
  return { segments, records, next: null };
}

/** Stream the header, then the planned records, reading CHUNK_ROWS rows per pull. */
function streamPage(db: Db, caller: Caller, header: object, plan: Plan): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  const segments = plan.segments.map((s) => ({ ...s }));
  let headerSent = false;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (!headerSent) {
        headerSent = true;
        controller.enqueue(encoder.encode(JSON.stringify(header) + "\n"));
        return;
      }
      while (segments.length) {
        const s = segments[0];
        const rows = chunk(db, caller, s.type, s.after, s.upTo);
        if (!rows.length) {
          segments.shift();
          continue;
        }
        s.after = rows[rows.length - 1][0];
        controller.enqueue(encoder.encode(rows.map(([, line]) => line + "\n").join("")));
        return;
      }
      controller.close();
    },
  });
}

export function exportPage(rc: RequestCtx<undefined, z.infer<typeof exportQuery>>): Reply {
  const { query } = rc;
  const types: ExportType[] = query.type ? [query.type] : [...IMPORT_ORDER];
  const isCursor = (v: unknown): v is CursorText =>
    Array.isArray(v) && v.length === 2 && types.includes(v[0]) && typeof v[1] === "string";
  const given = query.after ? decodeCursor(query.after, isCursor) : null;
  const from: Cursor | null = given && [
    given[0],
    given[1] === "" ? 0 : (exportPositionOf(rc.db, rc.caller, given[0], given[1]) ?? invalidCursor()),
  ];
  const cursorOf = ([type, position]: Cursor): CursorText => {
    if (position === 0) return [type, ""];
    const id = exportIdAt(rc.db, rc.caller, type, position);
    if (id == null) throw new Error(`export cursor: no ${type} record at the planned position`); // a bug, never input
    return [type, id];
  };
  let plan: Plan = { segments: [], records: 0, next: null };
  // Plan and audit in one transaction: the audit entry describes exactly the page handed out.
  const reply = commitWrite(rc, (db) => {
    plan = planPage(db, rc.caller, types, from, query.limit);
    return {
      status: 200,
      data: null,
      audit: {
        action: "export.read",
        resourceType: "organization",
        resourceId: rc.orgId,
        detail: { type: query.type ?? null, limit: query.limit, records: plan.records, has_more: plan.next != null },
      },
    };
  });
  const header = {
    type: "svc.export.header",
    format_version: EXPORT_FORMAT_VERSION,
    import_order: IMPORT_ORDER,
    filters: { type: query.type ?? null, limit: query.limit, after: query.after ?? null },
    records: plan.records,
    has_more: plan.next != null,
    next_after: plan.next ? encodeCursor(cursorOf(plan.next)) : null,
    exported_at: clock.nowIso(),
  };
  return { ...reply, stream: streamPage(rc.db, rc.caller, header, plan) };
}
