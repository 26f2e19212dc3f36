// POST /v1/access/simulate (owner only): how the authorization module would decide for another
// principal, gate by gate. It impersonates nobody (no key of theirs is used) and discloses nothing of
// the record but the decision inputs: visibility, authorship as a yes/no, and the ids of the grants
// that apply.
import type { HeldGrant } from "../../access/caller";
import {
  type Guarded,
  canWrite,
  grantsCovering,
  loadGrants,
  principalWorkspaces,
  readsByVisibility,
  roleWrites,
} from "../../access/policy";
import { notFound } from "../../http/errors";
import { orgRoute } from "../../org/route";
import type { Caller } from "../../org/request";
import { ok } from "../../org/request";
import { getPrincipal } from "../identity/store";
import { canRetrieve, guarded } from "../../access/retrieval";
import { getClaim, getObservation, projectWorkspace } from "../memory/records";
import { unresolved } from "../memory/store";
import { simulateBody, simulateResponse } from "./schema";

export const simulateRoutes = [
  orgRoute({
    method: "POST",
    path: "/v1/access/simulate",
    scope: "grants:read",
    roles: ["owner"],
    body: simulateBody,
    readOnly: true,
    response: { 200: simulateResponse },
    summary: "Explain the visibility, grant and final decision for a principal on a record or target (owner only).",
    operationId: "simulateAccess",
    tag: "Access",
    description:
      "Explains whether a principal could read or write a record or target: the visibility gate, the grant gate and " +
      "the final decision, without disclosing the record. Owner only.",
    handler: ({ db, body }) => {
      const principal = getPrincipal(db, body.principal_id);
      if (!principal) throw unresolved("principal", [body.principal_id]);
      let record: Guarded | null = null;
      let recordRow: Parameters<typeof canRetrieve>[1] | null = null;
      let target: { type: string; id: string | null };
      if (body.record_id !== undefined) {
        const type = body.record_id.startsWith("obs_")
          ? "observation"
          : body.record_id.startsWith("claim_")
            ? "claim"
            : null;
        const row =
          type === "observation"
            ? getObservation(db, body.record_id)
            : type === "claim"
              ? getClaim(db, body.record_id)
              : null;
        if (!row) throw notFound("Record");
        recordRow = row;
        record = guarded(row);
        target = { type: type!, id: body.record_id };
      } else if (body.subject !== undefined) target = { type: "subject", id: body.subject };
      else if (body.project !== undefined) target = { type: "project", id: body.project };
      else target = { type: "organization", id: null };

      // The principal as the module sees it (scopes belong to keys, so they are not simulated).
      const grants: HeldGrant[] = loadGrants(db, principal.principal_id);
      const subject: Caller = {
        principalId: principal.principal_id,
        keyId: "",
        scopes: ["*"],
        maxTrust: "verified",
        role: principal.role,
        grants,
        workspaces: principalWorkspaces(db, principal.principal_id),
      };
      // A project target carries its workspace, as every real write into it is checked (workspace role).
      const scopeOf = record ?? {
        subject_id: body.subject ?? null,
        project_id: body.project === undefined ? undefined : body.project,
        workspace_id: projectWorkspace(db, body.project),
      };
      const applicable = grantsCovering(subject, body.action, scopeOf).map((g) => g.grantId);

      // Each gate is the policy's own part of the decision: visibility (authorship, team, workspace
      // roles), grants, and the role's write; the decision is the whole rule.
      const visibility = record
        ? {
            applies: true,
            visibility: record.visibility,
            is_author: record.owner === principal.principal_id,
            passed: readsByVisibility(subject, record),
          }
        : { applies: false, passed: null };
      const role = { role: principal.role, passed: body.action === "read" || roleWrites(principal.role) };
      const allowed =
        body.action === "read"
          ? recordRow
            ? canRetrieve(subject, recordRow)
            : true
          : canWrite(subject, scopeOf) && (recordRow ? canRetrieve(subject, recordRow) : true);
      return ok({
        principal_id: principal.principal_id,
        action: body.action,
        target,
        gates: { role, visibility, grant: { passed: applicable.length > 0, grant_ids: applicable } },
        decision: allowed ? "allow" : "deny",
        note: "Key scopes are checked per route and are not part of this simulation.",
      });
    },
  }),
];
