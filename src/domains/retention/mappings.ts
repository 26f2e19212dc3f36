// Identity mappings: an external identity (external_system, external_id) -> one of our subject ids,
// versioned. At most one active mapping per external identity (a partial unique index backs it);
// posting for an identity that has one retires it and creates version + 1 in the same transaction;
// DELETE retires. Retired versions stay as history. Audited, never evented.
import { clock } from "../../http/clock";
import { afterPair, pageOf } from "../../http/cursor";
import { notFound } from "../../http/errors";
import { ID_PREFIX, newId } from "../../http/ids";
import { orgRoute } from "../../org/route";
import { ok } from "../../org/request";
import { type AuditInput, commitWrite } from "../../org/write";
import { mappingBody, mappingListQuery, mappingListResponse, mappingResponse, mappingRetiredResponse } from "./schema";
import {
  activeMapping,
  getMapping,
  insertMapping,
  latestMappingVersion,
  type MappingRow,
  mappingsAfter,
  retireMapping,
} from "./store";

export const mappingView = (m: MappingRow) => ({
  mapping_id: m.mapping_id,
  external_system: m.external_system,
  external_id: m.external_id,
  subject_id: m.subject_id,
  version: m.version,
  status: m.status,
  created_by: m.created_by,
  created_at: m.created_at,
  retired_at: m.retired_at,
});

export const mappingRoutes = [
  orgRoute({
    method: "POST",
    path: "/v1/identity-mappings",
    scope: "identity:write",
    body: mappingBody,
    response: { 201: mappingResponse },
    summary:
      "Map an external identity to a subject; an active mapping of the same identity is retired and this one is its next version.",
    operationId: "createIdentityMapping",
    tag: "Retention",
    description:
      "Maps an external identity to a subject. An active mapping of the same identity is retired and this one becomes " +
      "its next version.",
    handler: (rc) =>
      commitWrite(rc, (db) => {
        const { external_system, external_id, subject_id } = rc.body;
        const at = clock.nowIso();
        const previous = activeMapping(db, external_system, external_id);
        if (previous) retireMapping(db, previous.mapping_id, rc.caller.principalId, at);
        const v = latestMappingVersion(db, external_system, external_id);
        const row: MappingRow = {
          mapping_id: newId(ID_PREFIX.mapping),
          external_system,
          external_id,
          subject_id,
          version: v + 1,
          status: "active",
          created_by: rc.caller.principalId,
          created_at: at,
          retired_by: null,
          retired_at: null,
        };
        insertMapping(db, row);
        const audit: AuditInput[] = [
          {
            action: "identity_mapping.created",
            resourceType: "identity_mapping",
            resourceId: row.mapping_id,
            detail: { external_system, version: row.version, replaces: previous?.mapping_id ?? null },
          },
        ];
        if (previous)
          audit.unshift({
            action: "identity_mapping.retired",
            resourceType: "identity_mapping",
            resourceId: previous.mapping_id,
            detail: { external_system, version: previous.version, replaced_by: row.mapping_id },
          });
        return { status: 201, data: mappingView(row), audit };
      }),
  }),

  orgRoute({
    method: "GET",
    path: "/v1/identity-mappings",
    scope: "identity:read",
    query: mappingListQuery,
    response: { 200: mappingListResponse },
    summary:
      "List identity mappings, active and retired (filters external_system, external_id, subject_id, status), oldest first.",
    operationId: "listIdentityMappings",
    tag: "Retention",
    description:
      "Lists identity mappings, active and retired, filtered by external system, external id, subject or status, " +
      "oldest first.",
    handler: ({ db, query }) => {
      const rows = mappingsAfter(db, {
        after: afterPair(query.after),
        external_system: query.external_system,
        external_id: query.external_id,
        subject_id: query.subject_id,
        status: query.status,
        limit: query.limit + 1,
      });
      const { page, ...rest } = pageOf(rows, query.limit, (m) => [m.created_at, m.mapping_id]);
      return ok({ mappings: page.map(mappingView), ...rest });
    },
  }),

  orgRoute({
    method: "DELETE",
    path: "/v1/identity-mappings/:id",
    scope: "identity:write",
    response: { 200: mappingRetiredResponse },
    summary: "Retire an identity mapping (kept as history); a repeat answers already_retired: true.",
    operationId: "retireIdentityMapping",
    tag: "Retention",
    description: "Retires an identity mapping, keeping it as history; a repeat answers `already_retired: true`.",
    handler: (rc) =>
      commitWrite(rc, (db) => {
        const m = getMapping(db, rc.params.id);
        if (!m) throw notFound("Identity mapping");
        const already = m.status === "retired";
        const next: MappingRow = already
          ? m
          : { ...m, status: "retired", retired_by: rc.caller.principalId, retired_at: clock.nowIso() };
        if (!already) retireMapping(db, m.mapping_id, next.retired_by!, next.retired_at!);
        return {
          status: 200,
          data: { ...mappingView(next), already_retired: already },
          audit: {
            action: "identity_mapping.retired",
            resourceType: "identity_mapping",
            resourceId: m.mapping_id,
            detail: { external_system: m.external_system, version: m.version, already_retired: already },
          },
        };
      }),
  }),
];
