// Creating an organization's first owner. Reached only through the OrgStore.bootstrap RPC that the
// operator tooling calls (npm run bootstrap / npm start); there is no HTTP route for it.
import type { BootstrapResult } from "../../env";
import { clock } from "../../http/clock";
import type { Db } from "../../sql/db";
import { getMeta, setMeta } from "../../org/meta";
import { insertAudit } from "../../org/write";
import { hashPassword, temporaryPassword } from "../identity/passwords";
import { insertKey, insertPrincipal } from "../identity/store";
import { insertAccount } from "./store";

export async function bootstrapOrganization(
  db: Db,
  storage: DurableObjectStorage,
  orgId: string,
  username: string,
  pepper: string,
): Promise<BootstrapResult> {
  const password = temporaryPassword();
  const hash = await hashPassword(password, pepper);
  return storage.transactionSync(() => {
    const existing = getMeta(db, "org_id");
    if (existing) throw new Error(`organization ${existing} is already bootstrapped`);
    setMeta(db, "org_id", orgId);
    const owner = insertPrincipal(db, "human", username, "owner");
    // Its first login is stage password_change (temporary_password = 1).
    insertAccount(db, owner.principal_id, username, null, hash);
    const { raw, keyHash, row } = insertKey(db, owner.principal_id, "bootstrap owner key", ["*"], "verified", null);
    const who = { actorId: owner.principal_id, keyId: null, requestId: null };
    insertAudit(
      db,
      who,
      [
        { action: "organization.bootstrapped", resourceType: "organization", resourceId: orgId },
        {
          action: "key.created",
          resourceType: "key",
          resourceId: row.key_id,
          detail: { scopes: ["*"], max_trust: "verified" },
        },
      ],
      clock.nowIso(),
    );
    return {
      org_id: orgId,
      principal_id: owner.principal_id,
      key_id: row.key_id,
      key_hash: keyHash,
      api_key: raw,
      owner_username: username,
      temporary_password: password,
    };
  });
}
