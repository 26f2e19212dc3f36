// The SQL of governance (policies, channels, claim approvals and knowledge releases), their rows, API
// views and the lookups every governance route shares. Reads seen through the claim they govern are in
// ./claim-reads.ts.
import type { DutyFacts } from "../../access/duty";
import { type Db, sql } from "../../sql/db";
import { creatorsOf } from "../identity/store";
import type { ApprovalRules, PolicyType, ReleaseRules } from "./schema";

// Policies ---------------------------------------------------------------------------------------

export interface PolicyRow {
  policy_id: string;
  type: PolicyType;
  name: string;
  rules: string;
  status: string;
  version: number;
  created_by: string;
  created_at: string;
  updated_at: string;
}

export const getPolicy = (db: Db, id: string) =>
  db.first<PolicyRow>(sql`SELECT * FROM policies WHERE policy_id = ${id}`);

export const activePolicyRow = (db: Db, type: PolicyType) =>
  db.first<PolicyRow>(sql`SELECT * FROM policies WHERE type = ${type} AND status = 'active'`);

/** The rules of the active policy of a type, or null when none is active. */
export function activeRules(db: Db, type: "approval"): ApprovalRules | null;
export function activeRules(db: Db, type: "release"): ReleaseRules | null;
export function activeRules(db: Db, type: PolicyType): unknown {
  const row = activePolicyRow(db, type);
  return row ? JSON.parse(row.rules) : null;
}

/** What separation of duty (src/access/duty.ts) reads of the organization: its active policies and creation chains. */
export const dutyFacts = (db: Db): DutyFacts => ({
  activeRules: (type) => (type === "approval" ? activeRules(db, "approval") : activeRules(db, "release")),
  creatorsOf: (principalId, max) => creatorsOf(db, principalId, max),
});

export const policyNameTaken = (db: Db, name: string) => !!db.first(sql`SELECT 1 FROM policies WHERE name = ${name}`);

export const insertPolicy = (db: Db, p: PolicyRow) =>
  db.run(sql`INSERT INTO policies (policy_id, type, name, rules, status, version, created_by, created_at, updated_at)
    VALUES (${p.policy_id}, ${p.type}, ${p.name}, ${p.rules}, ${p.status}, ${p.version}, ${p.created_by}, ${p.created_at}, ${p.updated_at})`);

export const updatePolicy = (
  db: Db,
  policyId: string,
  p: { status: string; rules: string; version: number; updated_at: string },
) =>
  db.run(sql`UPDATE policies SET status = ${p.status}, rules = ${p.rules}, version = ${p.version}, updated_at = ${p.updated_at}
    WHERE policy_id = ${policyId}`);

/** The policy as it now is, one more entry of its history (changed by `by` at its updated_at). */
export const recordPolicyVersion = (db: Db, p: PolicyRow, by: string) =>
  db.run(sql`INSERT INTO policy_versions (policy_id, version, rules, status, changed_by, changed_at)
    VALUES (${p.policy_id}, ${p.version}, ${p.rules}, ${p.status}, ${by}, ${p.updated_at})`);

/** Policies after a (created_at, policy_id) pair, optionally of one type and status, oldest first. */
export const policiesAfter = (
  db: Db,
  f: { after: readonly [string, string]; type?: string; status?: string; limit: number },
) =>
  db.all<PolicyRow>(sql`SELECT * FROM policies WHERE (created_at, policy_id) > (${f.after[0]}, ${f.after[1]})
    ${f.type ? sql`AND type = ${f.type}` : sql``} ${f.status ? sql`AND status = ${f.status}` : sql``}
    ORDER BY created_at, policy_id LIMIT ${f.limit}`);

export const policyView = (p: PolicyRow) => ({
  policy_id: p.policy_id,
  type: p.type,
  name: p.name,
  rules: JSON.parse(p.rules),
  status: p.status,
  version: p.version,
  created_by: p.created_by,
  created_at: p.created_at,
  updated_at: p.updated_at,
});

// Channels ---------------------------------------------------------------------------------------

export interface ChannelRow {
  channel_id: string;
  name: string;
  audiences: string;
  min_trust: string;
  gateway_principal_id: string;
  status: string;
  version: number;
  created_by: string;
  created_at: string;
  updated_at: string;
}

export const getChannel = (db: Db, id: string) =>
  db.first<ChannelRow>(sql`SELECT * FROM channels WHERE channel_id = ${id}`);

export const channelNameTaken = (db: Db, name: string) => !!db.first(sql`SELECT 1 FROM channels WHERE name = ${name}`);

/** The channel, not disabled, whose gateway the principal is (at most one). */
export const liveChannelOfGateway = (db: Db, principalId: string) =>
  db.first<{ channel_id: string }>(
    sql`SELECT channel_id FROM channels WHERE gateway_principal_id = ${principalId} AND status != 'disabled'`,
  );

export const insertChannel = (db: Db, c: ChannelRow) =>
  db.run(sql`INSERT INTO channels (channel_id, name, audiences, min_trust, gateway_principal_id, status, version, created_by, created_at, updated_at)
    VALUES (${c.channel_id}, ${c.name}, ${c.audiences}, ${c.min_trust}, ${c.gateway_principal_id}, ${c.status}, ${c.version},
      ${c.created_by}, ${c.created_at}, ${c.updated_at})`);

export const updateChannelStatus = (
  db: Db,
  channelId: string,
  c: { status: string; version: number; updated_at: string },
) =>
  db.run(sql`UPDATE channels SET status = ${c.status}, version = ${c.version}, updated_at = ${c.updated_at}
    WHERE channel_id = ${channelId}`);

/** Channels after a (created_at, channel_id) pair, optionally of one status, oldest first. */
export const channelsAfter = (db: Db, f: { after: readonly [string, string]; status?: string; limit: number }) =>
  db.all<ChannelRow>(sql`SELECT * FROM channels WHERE (created_at, channel_id) > (${f.after[0]}, ${f.after[1]})
    ${f.status ? sql`AND status = ${f.status}` : sql``} ORDER BY created_at, channel_id LIMIT ${f.limit}`);

export const channelView = (c: ChannelRow) => ({
  channel_id: c.channel_id,
  name: c.name,
  audiences: JSON.parse(c.audiences) as string[],
  min_trust: c.min_trust,
  gateway_principal_id: c.gateway_principal_id,
  status: c.status,
  version: c.version,
  created_by: c.created_by,
  created_at: c.created_at,
  updated_at: c.updated_at,
});

// Claim approvals --------------------------------------------------------------------------------

export interface ApprovalRow {
  approval_id: string;
  claim_id: string;
  claim_version: number;
  status: string;
  evidence: string;
  note: string | null;
  submitted_by: string;
  decided_by: string | null;
  decided_at: string | null;
  decision_note: string | null;
  created_at: string;
}

export const getApproval = (db: Db, id: string) =>
  db.first<ApprovalRow>(sql`SELECT * FROM claim_approvals WHERE approval_id = ${id}`);

/** Whether this version of the claim already waits for a decision. */
export const hasPendingApproval = (db: Db, claimId: string, claimVersion: number) =>
  !!db.first(
    sql`SELECT 1 FROM claim_approvals WHERE claim_id = ${claimId} AND claim_version = ${claimVersion} AND status = 'pending'`,
  );

export const insertApproval = (db: Db, a: ApprovalRow) =>
  db.run(sql`INSERT INTO claim_approvals (approval_id, claim_id, claim_version, status, evidence, note, submitted_by, created_at)
    VALUES (${a.approval_id}, ${a.claim_id}, ${a.claim_version}, ${a.status}, ${a.evidence}, ${a.note}, ${a.submitted_by}, ${a.created_at})`);

/** The decision (its status: approved or rejected), who took it, when, and its note. */
export const recordApprovalDecision = (
  db: Db,
  approvalId: string,
  d: { status: string; decided_by: string; decided_at: string; decision_note: string | null },
) =>
  db.run(sql`UPDATE claim_approvals SET status = ${d.status}, decided_by = ${d.decided_by}, decided_at = ${d.decided_at},
      decision_note = ${d.decision_note}
    WHERE approval_id = ${approvalId}`);

// Knowledge releases -----------------------------------------------------------------------------

export interface Snapshot {
  subject_id: string;
  kind: string;
  statement: string;
  trust: string;
  valid_to: string | null;
  evidence: { observation_id: string; relation: string; content_hash: string }[];
}

export interface ReleaseRow {
  seq: number;
  release_id: string;
  channel_id: string;
  claim_id: string;
  claim_version: number;
  status: string;
  snapshot: string;
  created_by: string;
  approved_by: string | null;
  approved_at: string | null;
  activated_at: string | null;
  revoked_by: string | null;
  revoked_at: string | null;
  created_at: string;
}

export const getRelease = (db: Db, id: string) =>
  db.first<ReleaseRow>(sql`SELECT * FROM knowledge_releases WHERE release_id = ${id}`);

/** A new release (its seq is the table's own). */
export const insertRelease = (db: Db, r: ReleaseRow) =>
  db.run(sql`INSERT INTO knowledge_releases (release_id, channel_id, claim_id, claim_version, status, snapshot, created_by, created_at)
    VALUES (${r.release_id}, ${r.channel_id}, ${r.claim_id}, ${r.claim_version}, ${r.status}, ${r.snapshot}, ${r.created_by}, ${r.created_at})`);

/** The claim's active release in the channel (at most one), or null. */
export const activeReleaseOf = (db: Db, channelId: string, claimId: string) =>
  db.first<{ release_id: string }>(
    sql`SELECT release_id FROM knowledge_releases WHERE channel_id = ${channelId} AND claim_id = ${claimId} AND status = 'active'`,
  );

export const markReleaseApproved = (db: Db, releaseId: string, by: string, at: string) =>
  db.run(
    sql`UPDATE knowledge_releases SET status = 'approved', approved_by = ${by}, approved_at = ${at} WHERE release_id = ${releaseId}`,
  );

export const markReleaseActive = (db: Db, releaseId: string, at: string) =>
  db.run(sql`UPDATE knowledge_releases SET status = 'active', activated_at = ${at} WHERE release_id = ${releaseId}`);

export const markReleaseRevoked = (db: Db, releaseId: string, by: string, at: string) =>
  db.run(
    sql`UPDATE knowledge_releases SET status = 'revoked', revoked_by = ${by}, revoked_at = ${at} WHERE release_id = ${releaseId}`,
  );

/**
 * A channel's active releases in release order, with only the snapshot fields ranking reads (the
 * evidence list is not parsed): what channel compile serves.
 */
export const activeReleaseSnapshots = (db: Db, channelId: string) =>
  db.all<
    Pick<ReleaseRow, "seq" | "release_id" | "claim_id" | "claim_version" | "created_at"> &
      Pick<Snapshot, "statement" | "kind" | "subject_id" | "trust">
  >(sql`SELECT seq, release_id, claim_id, claim_version, created_at, json_extract(snapshot, '$.statement') AS statement,
      json_extract(snapshot, '$.kind') AS kind, json_extract(snapshot, '$.subject_id') AS subject_id,
      json_extract(snapshot, '$.trust') AS trust
    FROM knowledge_releases WHERE channel_id = ${channelId} AND status = 'active' ORDER BY seq`);
