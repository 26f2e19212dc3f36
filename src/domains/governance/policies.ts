// Policies: typed (approval, release, retention), versioned with a history of every version, changed
// only with the current expected_version; at most one active per type; `retired` is final.
// Administration is audited, never evented (not one of SPEC's eleven kinds).
import { ADMIN_ROLES } from "../../auth/roles";
import { z } from "zod";
import { clock } from "../../http/clock";
import { afterPair, pageOf } from "../../http/cursor";
import { conflict, invalid, notFound } from "../../http/errors";
import { ID_PREFIX, newId } from "../../http/ids";
import { orgRoute } from "../../org/route";
import { describeZodError } from "../../http/validate";
import type { Db } from "../../sql/db";
import { ok } from "../../org/request";
import { commitWrite } from "../../org/write";
import {
  POLICY_RULES,
  policyBody,
  policyListQuery,
  policyListResponse,
  policyPatchBody,
  policyResponse,
  type PolicyType,
} from "./schema";
import {
  type PolicyRow,
  activePolicyRow,
  getPolicy,
  insertPolicy,
  policiesAfter,
  policyNameTaken,
  policyView,
  recordPolicyVersion,
  updatePolicy,
} from "./store";

/** 409 naming the active policy of `type` when there is one other than `self`. */
function requireNoOtherActive(db: Db, type: PolicyType, self?: string) {
  const active = activePolicyRow(db, type);
  if (active && active.policy_id !== self)
    throw conflict(
      `Policy ${active.policy_id} ("${active.name}") is already the active ${type} policy; retire it or set it to draft first.`,
    );
}

/** Rules given on a change must fit the policy's own type; the message names the field under "rules". */
function rulesFor(type: PolicyType, rules: unknown): string {
  const r = POLICY_RULES[type].safeParse(rules);
  if (!r.success)
    throw invalid(describeZodError(new z.ZodError(r.error.issues.map((i) => ({ ...i, path: ["rules", ...i.path] })))));
  return JSON.stringify(r.data);
}

export const policyRoutes = [
  orgRoute({
    method: "POST",
    path: "/v1/policies",
    scope: "governance:write",
    roles: ADMIN_ROLES,
    body: policyBody,
    response: { 201: policyResponse },
    summary: "Create a typed policy (approval, release or retention), draft or active; owner or admin.",
    operationId: "createPolicy",
    tag: "Governance",
    description:
      "Creates a typed, versioned policy (approval, release or retention rules), as a draft or active; owner or " +
      "admin.",
    handler: (rc) =>
      commitWrite(rc, (db) => {
        const at = clock.nowIso();
        const status = rc.body.status ?? "draft";
        if (status === "active") requireNoOtherActive(db, rc.body.type);
        if (policyNameTaken(db, rc.body.name)) throw conflict("A policy with this name already exists.");
        const row: PolicyRow = {
          policy_id: newId(ID_PREFIX.policy),
          type: rc.body.type,
          name: rc.body.name,
          rules: JSON.stringify(rc.body.rules),
          status,
          version: 1,
          created_by: rc.caller.principalId,
          created_at: at,
          updated_at: at,
        };
        insertPolicy(db, row);
        recordPolicyVersion(db, row, rc.caller.principalId);
        return {
          status: 201,
          data: policyView(row),
          audit: {
            action: "policy.created",
            resourceType: "policy",
            resourceId: row.policy_id,
            detail: { type: row.type, status: row.status, version: 1 },
          },
        };
      }),
  }),

  orgRoute({
    method: "GET",
    path: "/v1/policies",
    scope: "governance:read",
    query: policyListQuery,
    response: { 200: policyListResponse },
    summary: "List policies (filters type, status), oldest first.",
    operationId: "listPolicies",
    tag: "Governance",
    description: "Lists policies, optionally by type and status, oldest first.",
    handler: ({ db, query }) => {
      const rows = policiesAfter(db, {
        after: afterPair(query.after),
        type: query.type,
        status: query.status,
        limit: query.limit + 1,
      });
      const { page, ...rest } = pageOf(rows, query.limit, (p) => [p.created_at, p.policy_id]);
      return ok({ policies: page.map(policyView), ...rest });
    },
  }),

  orgRoute({
    method: "PATCH",
    path: "/v1/policies/:id",
    scope: "governance:write",
    roles: ADMIN_ROLES,
    body: policyPatchBody,
    response: { 200: policyResponse },
    summary: "Change a policy's status and/or rules with its current expected_version; owner or admin.",
    operationId: "updatePolicy",
    tag: "Governance",
    description:
      "Changes a policy's status and/or rules; `expected_version` must be the current version (409 otherwise). Owner " +
      "or admin.",
    handler: (rc) =>
      commitWrite(rc, (db) => {
        const p = getPolicy(db, rc.params.id);
        if (!p) throw notFound("Policy");
        if (p.status === "retired") throw invalid("A retired policy cannot change.");
        if (rc.body.expected_version !== p.version)
          throw conflict(`Stale expected_version ${rc.body.expected_version}: the policy is at version ${p.version}.`);
        const status = rc.body.status ?? p.status;
        if (status === "active") requireNoOtherActive(db, p.type, p.policy_id);
        const rules = rc.body.rules !== undefined ? rulesFor(p.type, rc.body.rules) : p.rules;
        const next: PolicyRow = { ...p, status, rules, version: p.version + 1, updated_at: clock.nowIso() };
        updatePolicy(db, p.policy_id, next);
        recordPolicyVersion(db, next, rc.caller.principalId);
        return {
          status: 200,
          data: policyView(next),
          audit: {
            action: "policy.changed",
            resourceType: "policy",
            resourceId: p.policy_id,
            detail: {
              type: p.type,
              from_status: p.status,
              status,
              version: next.version,
              rules_changed: rc.body.rules !== undefined,
            },
          },
        };
      }),
  }),
];
