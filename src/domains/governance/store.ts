// Governance rows, their API views and the lookups every governance route shares.
import type { DutyFacts } from "../../access/duty";
import type { Db } from "../../sql/db";
import { creatorsOf } from "../identity/store";
import type { ApprovalRules, PolicyType, ReleaseRules } from "./schema";

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

export const getPolicy = (db: Db, id: string) => db.first<PolicyRow>("SELECT * FROM policies WHERE policy_id = ?", id);
export const getApproval = (db: Db, id: string) =>
  db.first<ApprovalRow>("SELECT * FROM claim_approvals WHERE approval_id = ?", id);
export const getChannel = (db: Db, id: string) =>
  db.first<ChannelRow>("SELECT * FROM channels WHERE channel_id = ?", id);
export const getRelease = (db: Db, id: string) =>
  db.first<ReleaseRow>("SELECT * FROM knowledge_releases WHERE release_id = ?", id);

export const activePolicyRow = (db: Db, type: PolicyType) =>
  db.first<PolicyRow>("SELECT * FROM policies WHERE type = ? AND status = 'active'", type);

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
