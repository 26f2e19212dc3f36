import { z } from "zod";
import { ID_PREFIX } from "../../http/ids";
import { count, idOf, pageOf, principalId, timestamp } from "../../http/shapes";
import { intRange, limitParam, nonEmpty } from "../../http/validate";

export const CHECKPOINT_KINDS = ["task_state", "conversation", "workflow", "cursor"] as const;
export const MAX_STATE_CHARS = 64_000;

export const checkpointBody = z.strictObject({
  subject_id: nonEmpty(200).describe("What the work is about (the same subject_id as its observations)."),
  agent_id: nonEmpty(200).describe("Your agent's own stable name; one checkpoint per subject, agent and kind."),
  kind: z.enum(CHECKPOINT_KINDS).describe("What sort of state this is."),
  state: z
    .string()
    .max(MAX_STATE_CHARS, `must be at most ${MAX_STATE_CHARS} characters`)
    .describe("The state to resume from, as text (e.g. JSON), up to 64,000 characters."),
  ttl_seconds: intRange(60, 2_592_000).describe("Seconds until it expires, 60 to 2,592,000 (30 days)."),
});

export const checkpointQuery = z.object({
  subject_id: nonEmpty(200),
  kind: z.enum(CHECKPOINT_KINDS),
  agent_id: nonEmpty(200).optional(),
});

export const leaseBody = z.strictObject({
  resource_type: nonEmpty(200),
  resource_id: nonEmpty(500),
  ttl_seconds: intRange(10, 86_400),
});

export const leaseListQuery = z.object({
  resource_type: z.string().max(200).optional(),
  limit: limitParam(1, 200, 50),
  after: z.string().max(512).optional(),
});

export const handoffBody = z.strictObject({
  to_principal_id: nonEmpty(64).describe("The principal (prn_ id) who should pick up the work."),
  context_id: nonEmpty(64).optional().describe("A context_id from a recall, for the recipient to read."),
  checkpoint_id: nonEmpty(64).optional().describe("A checkpoint_id from a checkpoint save, for the recipient to load."),
  note: z.string().max(2000).optional().describe("What the recipient should do next."),
});

export const resolveHandoffBody = z.strictObject({ status: z.enum(["accepted", "rejected"]) });

export const handoffListQuery = z.object({ limit: limitParam(1, 200, 50), after: z.string().max(512).optional() });

// Response schemas (published in docs/openapi.json; checked against every answer of the test suite).
const checkpointId = idOf(ID_PREFIX.checkpoint);

export const checkpointResponse = z
  .strictObject({
    checkpoint_id: checkpointId,
    subject_id: z.string(),
    agent_id: z.string(),
    kind: z.enum(CHECKPOINT_KINDS),
    state: z.string(),
    ttl_seconds: count,
    writer_id: principalId,
    created_at: timestamp,
    updated_at: timestamp,
    expires_at: timestamp,
  })
  .meta({ id: "Checkpoint" });
export const checkpointWriteResponse = checkpointResponse
  .extend({ updated: z.boolean().describe("true on the second and later write (status 200)") })
  .meta({ id: "SavedCheckpoint" });
export const checkpointDeleteResponse = z
  .strictObject({ checkpoint_id: checkpointId, deleted: z.literal(true) })
  .meta({ id: "DeletedCheckpoint" });

export const leaseResponse = z
  .strictObject({
    lease_id: idOf(ID_PREFIX.lease),
    resource_type: z.string(),
    resource_id: z.string(),
    holder_id: principalId,
    ttl_seconds: count,
    acquired_at: timestamp,
    expires_at: timestamp,
    released_at: timestamp.nullable(),
  })
  .meta({ id: "Lease" });
export const leaseAcquireResponse = leaseResponse
  .extend({ renewed: z.boolean().describe("true when the caller already held it (status 200)") })
  .meta({ id: "AcquiredLease" });
export const leaseReleaseResponse = leaseResponse
  .extend({ released: z.literal(true), already_released: z.boolean() })
  .meta({ id: "ReleasedLease" });
export const leaseListResponse = pageOf("leases", leaseResponse).meta({ id: "LeaseList" });

export const handoffResponse = z
  .strictObject({
    handoff_id: idOf(ID_PREFIX.handoff),
    from_principal_id: principalId,
    to_principal_id: principalId,
    context_id: idOf(ID_PREFIX.context).nullable(),
    checkpoint_id: checkpointId.nullable(),
    note: z.string().nullable(),
    status: z.enum(["pending", "accepted", "rejected"]),
    created_at: timestamp,
    resolved_at: timestamp.nullable(),
  })
  .meta({ id: "Handoff" });
export const handoffListResponse = pageOf("handoffs", handoffResponse).meta({ id: "HandoffList" });
