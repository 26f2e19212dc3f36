import { z } from "zod";
import { PERMISSIONS } from "../../access/policy";
import { roleSchema } from "../../auth/roles";
import { limitParam, nonEmpty } from "../../http/validate";

const id = z.string().min(1).max(64);

export const workspaceBody = z.strictObject({ name: nonEmpty(100) });

export const membershipBody = z.strictObject({
  principal_id: id,
  role: roleSchema,
  /** Absent: the organization itself (sets the principal's organization role). */
  workspace_id: id.optional(),
});

export const membershipListQuery = z.object({
  workspace_id: z.string().max(64).optional(),
  limit: limitParam(1, 200, 50),
  after: z.string().max(512).optional(),
});

/** Exactly one target: the organization, a project (null: unscoped memory) or a subject. */
export const grantBody = z.union([
  z.strictObject({ principal_id: id, permissions: z.array(z.enum(PERMISSIONS)).min(1).max(4), organization: z.literal(true) }),
  z.strictObject({ principal_id: id, permissions: z.array(z.enum(PERMISSIONS)).min(1).max(4), project: id.nullable() }),
  z.strictObject({ principal_id: id, permissions: z.array(z.enum(PERMISSIONS)).min(1).max(4), subject: nonEmpty(200) }),
], { error: "must be { principal_id, permissions, and exactly one of organization: true, project (id or null), subject }" });

export const listQuery = z.object({ limit: limitParam(1, 200, 50), after: z.string().max(512).optional() });

export const simulateBody = z.strictObject({
  principal_id: id,
  action: z.enum(["read", "write"]),
  /** An observation or claim id to decide on... */
  record_id: id.optional(),
  /** ...or a target: the organization, a project (null: unscoped memory) or a subject. */
  project: id.nullable().optional(),
  subject: nonEmpty(200).optional(),
}).refine((b) => [b.record_id, b.project, b.subject].filter((x) => x !== undefined).length <= 1,
  { message: "give at most one of record_id, project, subject" });
