// Who is calling, as authorization sees it: the principal behind the credential, with what it holds.
// Loaded with the key on every request (src/domains/identity/store.ts loadCaller), never cached.
import type { Role } from "../auth/roles";
import type { SessionStage } from "../auth/stages";
import type { Trust } from "../auth/trust";

export const PERMISSIONS = ["read", "write", "approve", "admin"] as const;
export type Permission = (typeof PERMISSIONS)[number];

export interface GrantTarget {
  type: "organization" | "project" | "subject";
  /** project id (null: unscoped memory) or subject id; null for the organization. */
  id: string | null;
}

export interface HeldGrant extends GrantTarget {
  grantId: string;
  permissions: Permission[];
}

export interface Caller {
  principalId: string;
  keyId: string;
  scopes: string[];
  maxTrust: Trust;
  role: Role;
  /** Active grants held by the principal, loaded with the key on every request. */
  grants: HeldGrant[];
  /** Live workspace memberships: workspace id -> role, loaded with the key on every request. */
  workspaces: Record<string, Role>;
  /** Set when the credential is a dashboard session (keyId is then its session_id). */
  session?: { sessionId: string; accountId: string; stage: SessionStage };
}
