// Checkpoints: task state an agent saves and resumes. Not evidence: no events, only audit entries.
// Readable by the principal that wrote it and by the recipient of a pending or accepted handoff
// that references it. Expiry is checked on every read; the alarm sweep only reclaims space.
import { clock, isoAt } from "../../http/clock";
import { conflict, notFound } from "../../http/errors";
import { ID_PREFIX, newId } from "../../http/ids";
import { orgRoute } from "../../org/route";
import type { Db } from "../../sql/db";
import type { Caller } from "../../org/request";
import { ok } from "../../org/request";
import { commitWrite } from "../../org/write";
import type { z } from "zod";
import {
  checkpointBody,
  checkpointDeleteResponse,
  checkpointQuery,
  checkpointResponse,
  checkpointWriteResponse,
} from "./schema";
import { expirySweepJob } from "./expiry";
import {
  type CheckpointRow,
  checkpointAt,
  deleteCheckpoint,
  insertCheckpoint,
  latestCheckpoint,
  readableCheckpoint,
  updateCheckpoint,
} from "./store";

const view = (c: CheckpointRow) => ({
  checkpoint_id: c.checkpoint_id,
  subject_id: c.subject_id,
  agent_id: c.agent_id,
  kind: c.kind,
  state: c.state,
  ttl_seconds: c.ttl_seconds,
  writer_id: c.writer_id,
  created_at: c.created_at,
  updated_at: c.updated_at,
  expires_at: c.expires_at,
});

/** Upsert on organization + subject + agent + kind. Shared by the route and the MCP tool; the caller commits. */
export function saveCheckpoint(db: Db, caller: Caller, body: z.infer<typeof checkpointBody>) {
  const now = clock.nowIso();
  const expiresAt = isoAt(clock.nowMs() + body.ttl_seconds * 1000);
  const existing = checkpointAt(db, body);
  const live = existing && existing.expires_at > now ? existing : null;
  if (live && live.writer_id !== caller.principalId)
    throw conflict("A checkpoint for this subject, agent and kind is held by another principal.");
  if (existing && !live) deleteCheckpoint(db, existing.checkpoint_id);
  let row: CheckpointRow;
  if (live) {
    row = { ...live, state: body.state, ttl_seconds: body.ttl_seconds, updated_at: now, expires_at: expiresAt };
    updateCheckpoint(db, live.checkpoint_id, row);
  } else {
    row = {
      checkpoint_id: newId(ID_PREFIX.checkpoint),
      subject_id: body.subject_id,
      agent_id: body.agent_id,
      kind: body.kind,
      state: body.state,
      ttl_seconds: body.ttl_seconds,
      writer_id: caller.principalId,
      created_at: now,
      updated_at: now,
      expires_at: expiresAt,
    };
    insertCheckpoint(db, row);
  }
  return { row, updated: !!live };
}

export const checkpointView = view;

export const checkpointRoutes = [
  orgRoute({
    method: "POST",
    path: "/v1/checkpoints",
    scope: "checkpoints:write",
    body: checkpointBody,
    overwrites: true,
    response: { 201: checkpointWriteResponse, 200: checkpointWriteResponse },
    summary: "Upsert a checkpoint on subject + agent + kind; a later write is 200 with updated: true.",
    operationId: "saveCheckpoint",
    tag: "Coordination",
    description:
      "Saves task state for a subject, agent and kind, replacing the earlier one (201 first, then 200 with `updated: " +
      "true` and the same `checkpoint_id`). It expires after `ttl_seconds`.",
    handler: (rc) =>
      commitWrite(rc, (db) => {
        const { row, updated } = saveCheckpoint(db, rc.caller, rc.body);
        rc.jobDue(expirySweepJob.name, Date.parse(row.expires_at));
        return {
          status: updated ? 200 : 201,
          data: { ...view(row), updated },
          audit: {
            action: updated ? "checkpoint.updated" : "checkpoint.created",
            resourceType: "checkpoint",
            resourceId: row.checkpoint_id,
            detail: { kind: row.kind, ttl_seconds: row.ttl_seconds, state_chars: row.state.length },
          },
        };
      }),
  }),

  orgRoute({
    method: "GET",
    path: "/v1/checkpoints",
    scope: "checkpoints:read",
    query: checkpointQuery,
    response: { 200: checkpointResponse },
    summary: "The latest unexpired checkpoint for subject_id and kind (agent_id optional); 404 once expired.",
    operationId: "findCheckpoint",
    tag: "Coordination",
    description:
      "Finds the latest checkpoint for `subject_id` and `kind` (and `agent_id` when given). An expired checkpoint " +
      "answers 404.",
    handler: ({ db, caller, query }) => {
      const row = latestCheckpoint(db, caller, query);
      if (!row) throw notFound("Checkpoint");
      return ok(view(row));
    },
  }),

  orgRoute({
    method: "GET",
    path: "/v1/checkpoints/:id",
    scope: "checkpoints:read",
    response: { 200: checkpointResponse },
    summary: "One unexpired checkpoint: for its writer, or the recipient of a handoff that references it.",
    operationId: "getCheckpoint",
    tag: "Coordination",
    description:
      "Reads one unexpired checkpoint: for its writer, or for the recipient of a handoff that references it.",
    handler: ({ db, caller, params }) => {
      const row = readableCheckpoint(db, caller, params.id);
      if (!row) throw notFound("Checkpoint");
      return ok(view(row));
    },
  }),

  orgRoute({
    method: "DELETE",
    path: "/v1/checkpoints/:id",
    scope: "checkpoints:write",
    response: { 200: checkpointDeleteResponse },
    summary: "Delete a checkpoint outright (its writer only).",
    operationId: "deleteCheckpoint",
    tag: "Coordination",
    description: "Deletes a checkpoint outright; only its writer may.",
    handler: (rc) => {
      const row = readableCheckpoint(rc.db, rc.caller, rc.params.id);
      if (!row || row.writer_id !== rc.caller.principalId) throw notFound("Checkpoint");
      return commitWrite(rc, (db) => {
        deleteCheckpoint(db, row.checkpoint_id);
        return {
          status: 200,
          data: { checkpoint_id: row.checkpoint_id, deleted: true },
          audit: { action: "checkpoint.deleted", resourceType: "checkpoint", resourceId: row.checkpoint_id },
        };
      });
    },
  }),
];
