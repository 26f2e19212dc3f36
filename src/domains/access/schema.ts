import { z } from "zod";
import { PERMISSIONS } from "../../access/caller";
import { ROLES, roleSchema } from "../../auth/roles";
import { ID_PREFIX } from "../../http/ids";
import { count, idOf, pageOf, principalId, timestamp } from "../../http/shapes";
import { visibilitySchema } from "../../access/visibility";
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
export const grantBody = z.union(
  [
    z.strictObject({
      principal_id: id,
      permissions: z.array(z.enum(PERMISSIONS)).min(1).max(4),
      organization: z.literal(true),
    }),
    z.strictObject({
      principal_id: id,
      permissions: z.array(z.enum(PERMISSIONS)).min(1).max(4),
      project: id.nullable(),
    }),
    z.strictObject({
      principal_id: id,
      permissions: z.array(z.enum(PERMISSIONS)).min(1).max(4),
      subject: nonEmpty(200),
    }),
  ],
  {
    error:
      "must be { principal_id, permissions, and exactly one of organization: true, project (id or null), subject }",
  },
);

export const listQuery = z.object({ limit: limitParam(1, 200, 50), after: z.string().max(512).optional() });

export const simulateBody = z
  .strictObject({
    principal_id: id,
    action: z.enum(["read", "write"]),
    /** An observation or claim id to decide on... */
    record_id: id.optional(),
    /** ...or a target: the organization, a project (null: unscoped memory) or a subject. */
    project: id.nullable().optional(),
    subject: nonEmpty(200).optional(),
  })
  .refine((b) => [b.record_id, b.project, b.subject].filter((x) => x !== undefined).length <= 1, {
    message: "give at most one of record_id, project, subject",
  });

// Response schemas (published in docs/openapi.json; checked against every answer of the test suite).
const workspaceId = idOf(ID_PREFIX.workspace);
const projectId = idOf(ID_PREFIX.project);
const recordType = z.enum(["observation", "claim"]);

export const projectListResponse = pageOf(
  "projects",
  z.strictObject({ project_id: projectId, reference: z.string(), created_at: timestamp }).meta({ id: "Project" }),
).meta({ id: "ProjectList" });
export const projectReferencesResponse = z
  .strictObject({
    project_id: projectId.nullable().describe("null for unscoped memory (`~`)"),
    reference: z.string().nullable(),
    references: z.array(
      z.strictObject({ type: recordType, id: z.string(), subject_id: z.string(), created_at: timestamp }),
    ),
    has_more: z.boolean(),
    next_cursor: z.string().nullable(),
  })
  .meta({ id: "ProjectReferences" });
export const subjectListResponse = pageOf(
  "subjects",
  z.strictObject({ subject_id: z.string() }).meta({ id: "Subject" }),
).meta({ id: "SubjectList" });
export const subjectReferencesResponse = z
  .strictObject({
    subject_id: z.string(),
    namespaced: z.array(z.string()).describe("`subject:<id>` and `project:<reference>` of its readable records"),
    references: z.array(
      z.strictObject({ type: recordType, id: z.string(), project_id: projectId.nullable(), created_at: timestamp }),
    ),
    has_more: z.boolean(),
    next_cursor: z.string().nullable(),
  })
  .meta({ id: "SubjectReferences" });

export const workspaceResponse = z
  .strictObject({ workspace_id: workspaceId, name: z.string(), created_by: principalId, created_at: timestamp })
  .meta({ id: "Workspace" });
export const workspaceListResponse = pageOf("workspaces", workspaceResponse).meta({ id: "WorkspaceList" });

export const membershipResponse = z
  .strictObject({
    membership_id: idOf(ID_PREFIX.membership),
    principal_id: principalId,
    workspace_id: workspaceId.nullable(),
    role: z.enum(ROLES),
    created_by: principalId,
    created_at: timestamp,
  })
  .meta({ id: "Membership" });
export const membershipListResponse = pageOf("memberships", membershipResponse).meta({ id: "MembershipList" });
export const membershipRemovedResponse = membershipResponse
  .extend({
    removed: z.literal(true),
    removed_at: timestamp,
    keys_revoked: count,
    grants_revoked: count,
    webhooks_disabled: count,
    accounts_disabled: count.describe(
      "Dashboard accounts the principal created, directly or through principals it created",
    ),
  })
  .meta({ id: "RemovedMembership" });

export const grantResponse = z
  .strictObject({
    grant_id: idOf(ID_PREFIX.grant),
    principal_id: principalId,
    target: z.strictObject({ type: z.enum(["organization", "project", "subject"]), id: z.string().nullable() }),
    permissions: z.array(z.enum(PERMISSIONS)),
    status: z.enum(["active", "revoked"]),
    granted_by: principalId,
    delegated_from: idOf(ID_PREFIX.grant).nullable(),
    created_at: timestamp,
    revoked_at: timestamp.nullable(),
  })
  .meta({ id: "Grant" });
export const grantListResponse = pageOf("grants", grantResponse).meta({ id: "GrantList" });
export const grantRevokedResponse = grantResponse
  .extend({ already_revoked: z.boolean(), delegated_revoked: count })
  .meta({ id: "RevokedGrant" });

export const simulateResponse = z
  .strictObject({
    principal_id: principalId,
    action: z.enum(["read", "write"]),
    target: z.strictObject({
      type: z.enum(["observation", "claim", "subject", "project", "organization"]),
      id: z.string().nullable(),
    }),
    gates: z.strictObject({
      role: z.strictObject({ role: z.enum(ROLES), passed: z.boolean() }),
      visibility: z.union([
        z.strictObject({
          applies: z.literal(true),
          visibility: visibilitySchema,
          is_author: z.boolean(),
          passed: z.boolean(),
        }),
        z.strictObject({ applies: z.literal(false), passed: z.null() }),
      ]),
      grant: z.strictObject({ passed: z.boolean(), grant_ids: z.array(idOf(ID_PREFIX.grant)) }),
    }),
    decision: z.enum(["allow", "deny"]),
    note: z.string(),
  })
  .meta({ id: "AccessSimulation" });
