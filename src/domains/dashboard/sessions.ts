// Dashboard sessions: the public password login (its edge half in ./login.ts), the second factor that
// replaces a staged session with a full one (passkey or recovery code), and logging out.
import { clock } from "../../http/clock";
import { ApiError, invalid, notFound } from "../../http/errors";
import type { IndexWrite, Reply, RequestCtx } from "../../org/request";
import { type PublicRoute, orgRoute } from "../../org/route";
import { commitWrite } from "../../org/write";
import type { Db } from "../../sql/db";
import { ANY_CREDENTIAL } from "./current-account";
import { loginAtEdge } from "./login";
import { sessionResponse, sessionRevokedResponse } from "./schema";
import { type AccountRow, insertSession, revokeSessions, sessionView } from "./store";
import { countFailure, loginClient, resetFailures } from "./throttle";

export const dashboardLoginRoute: PublicRoute = {
  auth: "public",
  method: "POST",
  path: "/v1/dashboard-sessions",
  response: { 201: sessionResponse },
  summary:
    "Public (no Authorization header): exchange username and password for a dashboard session (stage password_change, staged or full).",
  operationId: "createDashboardSession",
  tag: "Dashboard",
  description:
    "Logs a human in with username and password (no Authorization header) and returns a short-lived dashboard " +
    "session: `password_change` for a temporary password, `staged` when a passkey is enrolled, else `full`. Unknown " +
    "users and wrong passwords answer alike.",
  edge: loginAtEdge,
};

/**
 * A second factor, in one transaction: `attempt` spends what it presents (a challenge, a recovery code)
 * and answers what the full session's reply adds, or null when it failed. Success replaces the calling
 * staged session with a full one and resets this client's failure count. Failure commits what the attempt spent
 * with a login_failed audit entry, is counted as a login failure of this client for the progressive delay, and is 400
 * `failure`; the staged session stays usable.
 */
/** The login throttle's client of this request (throttle.ts loginClient): failures count on its queue. */
const clientOf = (rc: RequestCtx) => loginClient(rc.headers["cf-connecting-ip"]);

export async function completeSecondFactor(
  rc: RequestCtx,
  account: AccountRow,
  method: string,
  attempt: (db: Db) => Record<string, unknown> | null,
  failure: string,
): Promise<Reply> {
  const staged = rc.caller.session!;
  const refusal = invalid(failure);
  let writes: IndexWrite[] = [];
  let reply: Reply;
  try {
    reply = commitWrite(rc, (db) => {
      const extra = attempt(db);
      if (!extra)
        return {
          refused: refusal,
          audit: {
            action: "dashboard_session.login_failed",
            resourceType: "operator_account",
            resourceId: account.account_id,
            detail: { method },
          },
        };
      const old = revokeSessions(db, account.account_id, staged.sessionId);
      const full = insertSession(db, account.account_id, "full");
      writes = [
        { op: "add_credential", keyHash: full.row.key_hash, keyId: full.row.session_id, kind: "dashboard_session" },
        ...old.map((keyHash): IndexWrite => ({ op: "remove_credential", keyHash })),
      ];
      return {
        status: 201,
        data: { ...sessionView(full), ...extra },
        audit: {
          action: "dashboard_session.created",
          resourceType: "dashboard_session",
          resourceId: full.row.session_id,
          detail: { account_id: account.account_id, stage: "full", method, replaces: staged.sessionId },
        },
      };
    });
  } catch (err) {
    if (err === refusal) await countSecondFactorFailure(rc, account);
    throw err;
  }
  await resetFailures(rc.env.INDEX_DB, account.username, clientOf(rc)).catch((err) =>
    console.error("login failure reset failed", err),
  );
  return { ...reply, indexWrites: writes };
}

async function countSecondFactorFailure(rc: RequestCtx, account: AccountRow): Promise<void> {
  try {
    await countFailure(rc.env.INDEX_DB, account.username, clientOf(rc));
  } catch (err) {
    console.error("login failure count failed", err);
    throw new ApiError("UNAVAILABLE", "Storage is unavailable.");
  }
}

export const logoutRoute = orgRoute({
  method: "DELETE",
  path: "/v1/dashboard-sessions/current",
  scope: null,
  stages: ANY_CREDENTIAL,
  ownAccount: true,
  response: { 200: sessionRevokedResponse },
  summary: "Revoke the calling dashboard session (log out). An API key has no session: 404.",
  operationId: "deleteDashboardSession",
  tag: "Dashboard",
  description: "Logs out: revokes the calling dashboard session. An API key has no session and gets 404.",
  handler: (rc) => {
    const session = rc.caller.session;
    if (!session) throw notFound("Dashboard session");
    let revoked: string[] = [];
    const reply = commitWrite(rc, (db) => {
      revoked = revokeSessions(db, session.accountId, session.sessionId);
      return {
        status: 200,
        data: { session_id: session.sessionId, revoked_at: clock.nowIso() },
        audit: {
          action: "dashboard_session.revoked",
          resourceType: "dashboard_session",
          resourceId: session.sessionId,
        },
      };
    });
    return { ...reply, indexWrites: revoked.map((keyHash) => ({ op: "remove_credential", keyHash })) };
  },
});
