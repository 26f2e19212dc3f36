// What federation reads of the memory records: only shared ones (src/access/retrieval.ts sharedWhere:
// team, of no workspace, not excluded by retention) ever cross, since a peer is in no workspace and
// is not any principal's grantee. Each read applies the rule in its statement, so a record that may
// not cross is simply absent.
import { sharedWhere } from "../../access/retrieval";
import { clock } from "../../http/clock";
import type { Db } from "../../sql/db";
import type { ClaimRow, ObservationRow, SourceRow } from "../memory/records";

/** What a federation filter judges (kind, subject, trust), without content: cheap for a long scan. */
export interface RecordFacets {
  id: string;
  kind: string;
  subject_id: string;
  trust: string;
}

/** Facets of the shared records among the ids of observations and of claims. */
export function sharedFacets(db: Db, ids: { observations: string[]; claims: string[] }): RecordFacets[] {
  return db.all<RecordFacets>(
    `SELECT o.observation_id AS id, o.kind, o.subject_id, o.trust FROM observations o
      WHERE o.observation_id IN (SELECT value FROM json_each(?)) AND ${sharedWhere("o")}
     UNION ALL
     SELECT c.claim_id AS id, c.kind, c.subject_id, c.trust FROM claims c
      WHERE c.claim_id IN (SELECT value FROM json_each(?)) AND ${sharedWhere("c")}`,
    JSON.stringify(ids.observations),
    JSON.stringify(ids.claims),
  );
}

/** The shared claims among ids that are active and valid now (what a bundle may carry). */
export const sharedActiveClaims = (db: Db, ids: string[]) =>
  db.all<ClaimRow>(
    `SELECT c.* FROM claims c WHERE c.claim_id IN (SELECT value FROM json_each(?)) AND ${sharedWhere("c")}
        AND c.status = 'active' AND (c.valid_to IS NULL OR c.valid_to > ?)`,
    JSON.stringify(ids),
    clock.nowIso(),
  );

/** Every source of each shared claim, in order (a bundle carries them all, or the claim does not cross). */
export function sharedClaimSources(db: Db, claimIds: string[]): Map<string, SourceRow[]> {
  const out = new Map<string, SourceRow[]>();
  for (const r of db.all<SourceRow>(
    `SELECT s.* FROM claim_sources s JOIN claims c ON c.claim_id = s.claim_id
      WHERE s.claim_id IN (SELECT value FROM json_each(?)) AND ${sharedWhere("c")} ORDER BY s.claim_id, s.position`,
    JSON.stringify(claimIds),
  ))
    out.set(r.claim_id, [...(out.get(r.claim_id) ?? []), r]);
  return out;
}

/** The shared observations among ids (a source that is not shared is absent: its claim does not cross). */
export const sharedObservations = (db: Db, ids: string[]) =>
  db.all<ObservationRow>(
    `SELECT o.* FROM observations o WHERE o.observation_id IN (SELECT value FROM json_each(?)) AND ${sharedWhere("o")}`,
    JSON.stringify(ids),
  );
