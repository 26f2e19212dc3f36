// POST /v1/retention/apply: one bounded page of the active `retention` policy. Candidates are the
// records a rule matches (older than its max_age_days, of its kinds and visibility) that are not yet
// excluded, walked oldest first — observations, then claims — by (created_at, id) so a page costs
// its size and `next_after` resumes exactly where it stopped. A candidate an active legal hold covers
// (heldAmong: the one coverage rule) is counted `held` and left alone; the rest get
// retention_excluded_at (claims also bump their version). Nothing is deleted. `dry_run` counts only.
// Audited, never evented.
import { ADMIN_ROLES } from "../../auth/roles";
import { z } from "zod";
import { clock } from "../../http/clock";
import { decodeCursor, encodeCursor } from "../../http/cursor";
import { invalid } from "../../http/errors";
import { orgRoute } from "../../org/route";
import { touchedAll } from "../../org/outbox";
import { commitWrite } from "../../org/write";
import { changeClaim, excludeObservations } from "../memory/records";
import { POLICY_RULES } from "../governance/schema";
import { activePolicyRow } from "../governance/store";
import { heldAmong } from "./holds";
import { retentionApplyBody, retentionApplyResponse } from "./schema";
import { type RecordType, type RetentionMatch, retentionCandidates } from "./store";

const PHASES: readonly RecordType[] = ["observation", "claim"];
const DAY_MS = 86_400_000;

type Cursor = [RecordType, string, string];
const isCursor = (v: unknown): v is Cursor =>
  Array.isArray(v) && v.length === 3 && PHASES.includes(v[0]) && typeof v[1] === "string" && typeof v[2] === "string";

/** Each record type's rules as cutoffs from now. */
function matchesByType(
  rules: z.infer<typeof POLICY_RULES.retention>,
  nowMs: number,
): Record<RecordType, RetentionMatch[]> {
  const out: Record<RecordType, RetentionMatch[]> = { observation: [], claim: [] };
  for (const r of rules.rules)
    out[r.record_type].push({
      cutoff: new Date(nowMs - r.max_age_days * DAY_MS).toISOString(),
      kinds: r.kinds,
      visibility: r.visibility,
    });
  return out;
}

export const retentionRoutes = [
  orgRoute({
    method: "POST",
    path: "/v1/retention/apply",
    scope: "retention:write",
    roles: ADMIN_ROLES,
    response: { 200: retentionApplyResponse },
    body: retentionApplyBody,
    bodyOptional: true,
    summary:
      "Apply the active retention policy to one bounded page of records (resumable with after/next_after; dry_run counts only).",
    operationId: "applyRetention",
    tag: "Retention",
    description:
      "Applies the active retention policy to one bounded page of records, excluding them from retrieval; held " +
      "records are spared. Resume with `after`/`next_after`; `dry_run` only counts.",
    handler: (rc) =>
      commitWrite(rc, (db) => {
        const body = rc.body ?? retentionApplyBody.parse({});
        const policy = activePolicyRow(db, "retention");
        if (!policy) throw invalid("There is no active retention policy.");
        const byType = matchesByType(POLICY_RULES.retention.parse(JSON.parse(policy.rules)), clock.nowMs());
        const [phase, ...after]: Cursor = body.after ? decodeCursor(body.after, isCursor) : ["observation", "", ""];
        const page: { type: RecordType; id: string }[] = [];
        let last: Cursor | null = null;
        let done = false;
        for (let i = PHASES.indexOf(phase); i < PHASES.length; i++) {
          const type = PHASES[i];
          const from: [string, string] = type === phase ? (after as [string, string]) : ["", ""];
          const want = body.limit - page.length;
          const rows = retentionCandidates(db, type, byType[type], from, want + 1);
          for (const r of rows.slice(0, want)) {
            page.push({ type, id: r.id });
            last = [type, r.created_at, r.id];
          }
          if (rows.length > want) break; // this type has more: resume inside it
          if (i === PHASES.length - 1) done = true;
          if (page.length === body.limit) {
            // Full page exactly at the end of this type: resume at the start of the next one.
            if (!done) last = [PHASES[i + 1], "", ""];
            break;
          }
        }
        const ids = (type: RecordType) => page.filter((p) => p.type === type).map((p) => p.id);
        const held = heldAmong(db, { observations: ids("observation"), claims: ids("claim") });
        const observations = ids("observation").filter((id) => !held.observations.has(id));
        const claims = ids("claim").filter((id) => !held.claims.has(id));
        const at = clock.nowIso();
        const touched = body.dry_run
          ? undefined
          : touchedAll(
              excludeObservations(db, observations, at),
              ...claims.map((id) => changeClaim(db, id, { retention_excluded_at: at })),
            );
        const result = {
          policy_id: policy.policy_id,
          policy_version: policy.version,
          examined: page.length,
          excluded: observations.length + claims.length,
          held: held.observations.size + held.claims.size,
          next_after: done ? null : last ? encodeCursor(last) : (body.after ?? null),
          done,
          dry_run: body.dry_run,
        };
        return {
          status: 200,
          data: result,
          touched,
          audit: {
            action: body.dry_run ? "retention.dry_run" : "retention.applied",
            resourceType: "policy",
            resourceId: policy.policy_id,
            detail: {
              policy_version: policy.version,
              examined: result.examined,
              excluded: result.excluded,
              held: result.held,
              done,
            },
          },
        };
      }),
  }),
];
