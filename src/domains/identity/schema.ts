import { z } from "zod";
import { ROLES } from "../../auth/roles";
import { SCOPES } from "../../auth/scope-names";
import { ALL_SCOPES, scopesSchema } from "../../auth/scopes";
import { trustSchema } from "../../auth/trust";
import { ID_PREFIX } from "../../http/ids";
import { count, idOf, pageOf, principalId, timestamp } from "../../http/shapes";
import { limitParam, nonEmpty } from "../../http/validate";

export const mintKeyBody = z.strictObject({
  label: nonEmpty(200),
  scopes: scopesSchema,
  max_trust: trustSchema.optional(),
  principal_id: z.string().max(64).optional(),
});

export const listQuery = z.object({
  limit: limitParam(1, 200, 50),
  after: z.string().max(512).optional(),
});

// Response schemas (published in docs/openapi.json; checked against every answer of the test suite).
const grantedScopes = z.union([z.literal(ALL_SCOPES), z.array(z.enum(SCOPES))]);

export const principalResponse = z
  .strictObject({
    principal_id: principalId,
    key_id: z.string().describe("The API key id, or the dashboard session id"),
    scopes: grantedScopes,
    max_trust: trustSchema,
    role: z.enum(ROLES),
    org_id: idOf(ID_PREFIX.org).describe("The caller's organization (organizations have an id, no name)"),
    username: z
      .string()
      .nullable()
      .describe(
        "The operator account's username: the session's account, or the principal's; null for a principal without one",
      ),
  })
  .meta({ id: "CurrentPrincipal" });

export const keyResponse = z
  .strictObject({
    key_id: idOf(ID_PREFIX.key),
    principal_id: principalId,
    label: z.string(),
    scopes: grantedScopes,
    max_trust: trustSchema,
    status: z.enum(["active", "revoked"]),
    created_at: timestamp,
    revoked_at: timestamp.nullable(),
  })
  .meta({ id: "Key" });
export const mintedKeyResponse = keyResponse
  .extend({ key: z.string().startsWith("svc_sk_").describe("The raw key: shown once, never again") })
  .meta({ id: "MintedKey" });
export const revokedKeyResponse = keyResponse
  .extend({
    already_revoked: z.boolean(),
    cascade: z
      .strictObject({ keys_revoked: count, grants_revoked: count, webhooks_disabled: count, accounts_disabled: count })
      .nullable()
      .describe(
        "Set when this was the principal's last credential (no other active key, no dashboard account): what it created, revoked with it",
      ),
  })
  .meta({ id: "RevokedKey" });
export const keyListResponse = pageOf("keys", keyResponse).meta({ id: "KeyList" });

export const principalListResponse = pageOf(
  "principals",
  z
    .strictObject({
      principal_id: principalId,
      kind: z.enum(["agent", "human"]),
      display_name: z.string(),
      role: z.enum(ROLES),
      created_at: timestamp,
      memberships: z.array(
        z.strictObject({
          membership_id: idOf(ID_PREFIX.membership),
          workspace_id: idOf(ID_PREFIX.workspace).nullable(),
          role: z.enum(ROLES),
        }),
      ),
    })
    .meta({ id: "Principal" }),
).meta({ id: "PrincipalList" });
