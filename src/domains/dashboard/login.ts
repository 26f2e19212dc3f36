// Password login: POST /v1/dashboard-sessions, the one public route that takes a body. The front Worker
// finds the organization through the D1 username index, takes the next attempt slot of the username's
// queue for this client (throttle.ts; counting the attempt) and waits for it, then asks the
// organization's Durable Object (RPC `login`) to verify the password and issue a session. Unknown
// usernames and wrong passwords get the same answer after the same work.
import { ApiError } from "../../http/errors";
import { dataResponse, errorResponse } from "../../http/envelope";
import type { EdgeEnv, LoginResult } from "../../env";
import type { PublicRequest } from "../../org/route";
import { parseJsonBody, parseWith } from "../../http/validate";
import { clock } from "../../http/clock";
import { addCredential, orgOfUsername } from "../../index-db";
import type { Db } from "../../sql/db";
import { getMeta } from "../../org/meta";
import { insertAudit } from "../../org/write";
import { DUMMY_HASH, hashPassword, pepperOf, verifyPassword } from "../identity/passwords";
import { loginBody } from "./schema";
import type { SessionStage } from "../../auth/stages";
import { accountByUsername, insertSession, revokeSessions, sessionView, upgradePasswordHash } from "./store";
import { forgiveFailure, loginClient, resetFailures, takeAttemptSlot } from "./throttle";

export const INVALID_LOGIN = "Invalid username or password.";

/** Inside the org Durable Object: verify the password and issue a session in the stage the account is in. */
export async function passwordLogin(
  deps: { db: Db; storage: DurableObjectStorage; env: EdgeEnv; requestId: string },
  username: string,
  password: string,
): Promise<LoginResult> {
  const { db, storage, env } = deps;
  const pepper = pepperOf(env);
  const account = accountByUsername(db, username);
  const check = await verifyPassword(password, account ?? DUMMY_HASH, pepper);
  const now = () => clock.nowIso();
  if (!account || !check.ok) {
    if (account)
      storage.transactionSync(() =>
        insertAudit(
          db,
          { actorId: account.principal_id, keyId: null, requestId: deps.requestId },
          {
            action: "dashboard_session.login_failed",
            resourceType: "operator_account",
            resourceId: account.account_id,
          },
          now(),
        ),
      );
    return { ok: false, error: { code: "UNAUTHENTICATED", message: INVALID_LOGIN } };
  }
  const upgraded = check.upgrade ? await hashPassword(password, pepper) : null;
  const issued = storage.transactionSync(() => {
    // The password may have changed while it was being verified: only the verified hash counts.
    const current = accountByUsername(db, username);
    if (!current || current.password_hash !== account.password_hash) return null;
    if (upgraded) upgradePasswordHash(db, current.account_id, upgraded);
    const stage: SessionStage = current.temporary_password
      ? "password_change"
      : current.has_passkey
        ? "staged"
        : "full";
    const session = insertSession(db, current.account_id, stage);
    insertAudit(
      db,
      { actorId: current.principal_id, keyId: session.row.session_id, requestId: deps.requestId },
      {
        action: "dashboard_session.created",
        resourceType: "dashboard_session",
        resourceId: session.row.session_id,
        detail: { account_id: current.account_id, stage, method: "password" },
      },
      now(),
    );
    return session;
  });
  if (!issued) return { ok: false, error: { code: "UNAUTHENTICATED", message: INVALID_LOGIN } };
  try {
    await addCredential(env.INDEX_DB, issued.row.key_hash, getMeta(db, "org_id")!, "dashboard_session", now());
  } catch (err) {
    console.error("credential index write failed", err);
    revokeSessions(db, issued.row.account_id, issued.row.session_id);
    return {
      ok: false,
      error: { code: "UNAVAILABLE", message: "The credential index is unavailable; no session was created." },
    };
  }
  return { ok: true, session: sessionView(issued) };
}

/** The public route's edge half. */
export async function loginAtEdge(env: EdgeEnv, requestId: string, req: PublicRequest): Promise<Response> {
  try {
    if (req.authorization != null)
      throw new ApiError("VALIDATION_ERROR", "POST /v1/dashboard-sessions is public: send no Authorization header.");
    const { username, password } = parseWith(loginBody, parseJsonBody(req.bodyText, false));
    const pepper = pepperOf(env);
    const client = loginClient(req.clientAddress);
    let orgId: string | null = null;
    let wait: number | null;
    try {
      orgId = await orgOfUsername(env.INDEX_DB, username);
      wait = await takeAttemptSlot(env.INDEX_DB, username, client);
    } catch (err) {
      console.error("login index failed", err);
      throw new ApiError("UNAVAILABLE", "Storage is unavailable.");
    }
    // Too many attempts of this client queued on this username (known or not): the uniform answer, nothing verified.
    if (wait === null) throw new ApiError("UNAUTHENTICATED", INVALID_LOGIN);
    if (wait > 0) await req.wait(wait);
    let result: LoginResult;
    if (orgId) {
      const stub = env.ORG.get(env.ORG.idFromName(orgId));
      result = (await stub.login({ username, password, requestId })) as LoginResult;
    } else {
      await verifyPassword(password, DUMMY_HASH, pepper);
      result = { ok: false, error: { code: "UNAUTHENTICATED", message: INVALID_LOGIN } };
    }
    if (!result.ok) throw new ApiError(result.error.code, result.error.message);
    await (
      result.session.stage === "full"
        ? resetFailures(env.INDEX_DB, username, client)
        : forgiveFailure(env.INDEX_DB, username, client)
    ).catch((err) => console.error("login failure reset failed", err));
    return dataResponse(requestId, 201, result.session);
  } catch (err) {
    if (err instanceof ApiError) return errorResponse(requestId, err);
    console.error("login failed", err);
    return errorResponse(requestId, { code: "INTERNAL", message: "Request could not be completed." });
  }
}
