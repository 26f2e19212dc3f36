// POST /v1/federation/push, called by the other deployment. The exchange is authenticated first
// (exchange.ts: peer, signature, status and direction, schema, sent_at); then the exchange's replay
// identity, per-event results, the bundle checks in DESIGN's order, and one transaction importing
// every accepted bundle with the log and the replay record.
import { sha256Hex } from "../../auth/credentials";
import { type Trust, lowerTrust } from "../../auth/trust";
import { clock } from "../../http/clock";
import { conflict } from "../../http/errors";
import { ID_PREFIX } from "../../http/ids";
import { describeZodError } from "../../http/validate";
import type { Db } from "../../sql/db";
import type { Caller, Reply, RequestCtx } from "../../org/request";
import { ok } from "../../org/request";
import { type Touched, touchedAll } from "../../org/outbox";
import { canonical, commitWrite, type WriteScope } from "../../org/write";
import { insertClaim, insertObservation, newRecordId } from "../memory/records";
import { contentHash, getObservation, type ObservationRow } from "../memory/store";
import { type FilterRow, passes } from "./filters";
import { signedExchange } from "./exchange";
import { type Bundle, bundleSchema, FEDERABLE_KINDS, federatedEvent, pushBody } from "./schema";
import { bundleSigningText, verify } from "./signing";
import {
  filtersOf,
  getExchange,
  importedAs,
  inboxHash,
  insertExchange,
  insertInbox,
  insertLog,
  type PeerRow,
  pinRemoteOrg,
  recordImport,
  touchPeer,
} from "./store";

type Status = "success" | "conflict" | "rejected";
interface EventResult {
  id: string | null;
  status: Status;
  reason?: string;
}
interface BundleResult {
  claim_id: string | null;
  status: Status;
  reason?: string;
  local_claim_id?: string;
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);
const idOf = (v: unknown, field: string) => (isObject(v) && typeof v[field] === "string" ? (v[field] as string) : null);

function eventResult(
  db: Db,
  peer: PeerRow,
  filters: FilterRow[],
  caller: Caller,
  raw: unknown,
  at: string,
): EventResult {
  const id = idOf(raw, "id");
  const parsed = federatedEvent.safeParse(raw);
  if (!parsed.success) return { id, status: "rejected", reason: describeZodError(parsed.error) };
  const e = parsed.data;
  const trust = e.payload.trust ? lowerTrust(e.payload.trust, caller.maxTrust) : undefined;
  if (!passes(filters, FEDERABLE_KINDS[e.kind], { ...e.payload, trust }))
    return { id, status: "rejected", reason: "No filter of this peer admits the event." };
  const hash = sha256Hex(canonical(e));
  const known = inboxHash(db, peer.peer_id, e.id);
  if (known && known !== hash)
    return { id, status: "conflict", reason: "This peer already sent this event id with another body." };
  if (!known) insertInbox(db, peer.peer_id, e, hash, at);
  return { id, status: "success" };
}

/** What importing an accepted bundle needs: the bundle, its capped trust and where each source comes from. */
interface Accepted {
  bundle: Bundle;
  trust: Trust;
  /** remote observation id -> local id of an observation this peer sent before. */
  existing: Map<string, string>;
}

/**
 * DESIGN's bundle checks, in order: signature; source organization (pinned on first use); an explicit
 * claim filter; trust capped at the pushing key's ceiling and meeting min_trust; replay identity;
 * complete graph; content hashes. Returns the refusal, or what the import needs.
 */
function checkBundle(
  db: Db,
  peer: PeerRow,
  filters: FilterRow[],
  caller: Caller,
  raw: unknown,
  state: { pinned: string | null; claims: Set<string> },
): BundleResult | Accepted {
  const claimId = isObject(raw) ? idOf(raw.claim, "claim_id") : null;
  const reject = (reason: string, status: Status = "rejected"): BundleResult => ({ claim_id: claimId, status, reason });
  const parsed = bundleSchema.safeParse(raw);
  if (!parsed.success) return reject(`Malformed bundle: ${describeZodError(parsed.error)}`);
  const b = parsed.data;
  if (!verify(peer.shared_secret, bundleSigningText(raw as Record<string, unknown>), b.signature))
    return reject("The bundle signature does not match its content.");
  if (state.pinned && state.pinned !== b.source_org_id)
    return reject("The bundle comes from another source organization than this peer's.");
  const facets = (r: { kind: string; subject_id: string }, trust?: Trust) => ({
    kind: r.kind,
    subject_id: r.subject_id,
    trust,
  });
  if (!passes(filters, "claim", facets(b.claim), { ignoreTrust: true }))
    return reject("No claim filter of this peer admits the claim.");
  const trust = lowerTrust(b.claim.trust, caller.maxTrust);
  if (!passes(filters, "claim", facets(b.claim, trust)))
    return reject("The claim's trust (capped at this key's ceiling) is below the filter's min_trust.");
  for (const o of b.observations)
    if (!passes(filters, "observation", facets(o, lowerTrust(o.trust, caller.maxTrust))))
      return reject(`No observation filter of this peer admits source ${o.observation_id}.`);
  if (state.claims.has(b.claim.claim_id) || importedAs(db, peer.peer_id, b.claim.claim_id))
    return reject("This peer already sent this claim.", "conflict");
  const sent = new Map(b.observations.map((o) => [o.observation_id, o]));
  if (sent.size !== b.observations.length) return reject("Malformed bundle: an observation appears twice.");
  const sourceIds = new Set(b.claim.sources.map((s) => s.observation_id));
  const extra = b.observations.find((o) => !sourceIds.has(o.observation_id));
  if (extra) return reject(`Malformed bundle: observation ${extra.observation_id} is not a source of the claim.`);
  const existing = new Map<string, string>();
  for (const id of sourceIds) {
    const localId = importedAs(db, peer.peer_id, id);
    if (localId) {
      const local = getObservation(db, localId);
      // Purged here on purpose: neither cited nor imported a second time (its (peer, remote id) stays taken).
      if (!local || local.purged_at != null)
        return reject(
          `Source ${id} was imported from this peer before and has been purged here; it is not imported again.`,
        );
      if (sent.has(id) && sent.get(id)!.content_hash !== local.content_hash)
        return reject(`Source ${id} differs from the observation this peer sent before.`);
      existing.set(id, local.observation_id);
    } else if (!sent.has(id))
      return reject(
        `Incomplete graph: source observation ${id} is neither in the bundle nor imported from this peer before.`,
      );
  }
  for (const o of b.observations)
    if (contentHash(o.content) !== o.content_hash)
      return reject(`Content hash of observation ${o.observation_id} does not match its content.`);
  return { bundle: b, trust, existing };
}

/** Import one accepted bundle: new local ids, federation provenance, trust capped. */
function importBundle(
  db: Db,
  write: WriteScope,
  peer: PeerRow,
  caller: Caller,
  a: Accepted,
  imported: Map<string, string>,
  at: string,
): { claimId: string; touched: Touched } {
  const touched: Touched[] = [];
  const local = (remoteId: string) => imported.get(remoteId) ?? a.existing.get(remoteId);
  for (const o of a.bundle.observations) {
    if (local(o.observation_id)) continue;
    const row: Omit<ObservationRow, "workspace_id"> = {
      observation_id: newRecordId(db, write, ID_PREFIX.observation),
      subject_id: o.subject_id,
      project_id: null,
      kind: o.kind,
      content: o.content,
      content_hash: o.content_hash,
      source_type: "federation",
      source_ref: `${peer.peer_id}:${o.observation_id}`,
      trust: lowerTrust(o.trust, caller.maxTrust),
      visibility: "team",
      author_id: caller.principalId,
      created_at: at,
      occurred_at: at,
      purged_at: null,
    };
    touched.push(insertObservation(db, row));
    recordImport(db, peer.peer_id, o.observation_id, "observation", row.observation_id, at);
    imported.set(o.observation_id, row.observation_id);
  }
  const c = a.bundle.claim;
  const claimId = newRecordId(db, write, ID_PREFIX.claim);
  touched.push(
    insertClaim(
      db,
      {
        claim_id: claimId,
        subject_id: c.subject_id,
        project_id: null,
        kind: c.kind,
        statement: c.statement,
        status: "active",
        visibility: "team",
        trust: a.trust,
        version: 1,
        valid_from: c.valid_from,
        valid_to: c.valid_to,
        superseded_by: null,
        disputes: "[]",
        author_id: caller.principalId,
        created_at: at,
        updated_at: at,
      },
      c.sources.map((s) => ({ observation_id: local(s.observation_id)!, relation: s.relation })),
    ),
  );
  recordImport(db, peer.peer_id, c.claim_id, "claim", claimId, at);
  return { claimId, touched: touchedAll(...touched) };
}

export function push(rc: RequestCtx): Reply {
  const { peer, body, signed } = signedExchange(rc, "push", pushBody);
  const bodyHash = sha256Hex(rc.rawBody!);
  const prior = getExchange(rc.db, peer.peer_id, body.exchange_id);
  if (prior) {
    if (prior.body_hash !== bodyHash) throw conflict("This exchange_id was already used with another body.");
    return ok({ ...(JSON.parse(prior.response) as object), replayed: true });
  }
  const filters = filtersOf(rc.db, peer.peer_id);
  return commitWrite(rc, (db, write) => {
    const at = clock.nowIso();
    const results = body.events.map((e) => eventResult(db, peer, filters, rc.caller, e, at));
    const state = { pinned: peer.remote_org_id, claims: new Set<string>() };
    const imported = new Map<string, string>();
    const touched: Touched[] = [];
    const bundles = (body.bundles ?? []).map((raw): BundleResult => {
      const checked = checkBundle(db, peer, filters, rc.caller, raw, state);
      if (!("bundle" in checked)) return checked;
      const { claimId: localClaimId, touched: wrote } = importBundle(db, write, peer, rc.caller, checked, imported, at);
      touched.push(wrote);
      state.claims.add(checked.bundle.claim.claim_id);
      if (!state.pinned) {
        state.pinned = checked.bundle.source_org_id;
        pinRemoteOrg(db, peer.peer_id, state.pinned);
      }
      return { claim_id: checked.bundle.claim.claim_id, status: "success", local_claim_id: localClaimId };
    });
    const all = [...results, ...bundles];
    const counts = {
      events: results.length,
      bundles: bundles.length,
      success: all.filter((r) => r.status === "success").length,
      conflict: all.filter((r) => r.status === "conflict").length,
      rejected: all.filter((r) => r.status === "rejected").length,
    };
    const data = { exchange_id: body.exchange_id, replayed: false, results, ...(body.bundles ? { bundles } : {}) };
    insertExchange(db, peer.peer_id, body.exchange_id, bodyHash, data, at);
    insertLog(db, {
      peerId: peer.peer_id,
      operation: "push",
      counts,
      cursorBefore: null,
      cursorAfter: null,
      requestId: rc.requestId,
      at,
      signed,
    });
    touchPeer(db, peer.peer_id, at);
    return {
      status: 200,
      data,
      touched: touchedAll(...touched),
      audit: {
        action: "federation.pushed",
        resourceType: "federation_peer",
        resourceId: peer.peer_id,
        detail: {
          exchange_id: body.exchange_id,
          ...counts,
          claims_imported: bundles.filter((b) => b.status === "success").length,
        },
      },
    };
  });
}
