// The seven lenses of the Memory Atlas. Each one reads only authorized candidates (every memory read
// applies retrieval.ts's retrievable; context runs its heldOrDelegated), with LIMITs
// proportional to max_nodes (fetchCap), and hands them to AtlasGraph, which applies max_nodes and
// keeps only edges whose two ends are in the view. Nothing here counts or labels a hidden record.
// What decides whether a row is drawn belongs in its SQL walk, before the LIMIT: a filter in code
// after the LIMIT lets rows it drops (unreadable ones above all) crowd out rows it would keep.
import { isAdmin, workspaceVisible } from "../../access/policy";
import { hasScope } from "../../auth/scopes";
import { clock } from "../../http/clock";
import { notFound, unresolved } from "../../http/errors";
import type { Db } from "../../sql/db";
import type { Caller } from "../../org/request";
import type { ApprovalRow, ReleaseRow } from "../governance/store";
import { canRetrieve } from "../../access/retrieval";
import { retrievableProjects, retrievableSubjects } from "../access/directories";
import { type ClaimRow, type ObservationRow, getClaim } from "../memory/records";
import { type AtlasNode, AtlasGraph, type EdgeType, type NodeType, fetchCap, labelOf, subjectNodeId } from "./graph";
import type { AtlasBody, Lens } from "./schema";
import {
  activeHoldsOn,
  atlasClaims,
  channelById,
  channelsByIds,
  disputedClaims,
  disputingClaims,
  expiringClaims,
  openChannels,
  readableRunsSelecting,
  retrievableClaims,
  retrievableEvidence,
  retrievableProposals,
  rowsWithRetrievableClaim,
  sharedSourcePairs,
  subjectRetrievable,
} from "./store";

/** How far ahead conflict_freshness looks for claims whose validity is about to end. */
export const EXPIRY_HORIZON_DAYS = 7;

const claimNode = (c: ClaimRow): AtlasNode => ({
  id: c.claim_id,
  type: "claim",
  label: labelOf(c.statement, c.claim_id),
  status: c.status,
  trust: c.trust,
  kind: c.kind,
});
const observationNode = (o: ObservationRow): AtlasNode => ({
  id: o.observation_id,
  type: "observation",
  label: labelOf(o.content, o.purged_at ? "(purged)" : o.observation_id),
  trust: o.trust,
  kind: o.kind,
});
const subjectNode = (subjectId: string): AtlasNode => ({
  id: subjectNodeId(subjectId),
  type: "subject",
  label: subjectId,
});
const releaseNode = (r: ReleaseRow, channelName: string | undefined): AtlasNode => ({
  id: r.release_id,
  type: "release",
  label: channelName ? `release in ${channelName}` : "release",
  status: r.status,
});

const disputesOf = (c: ClaimRow): string[] => JSON.parse(c.disputes) as string[];

/** Edges among claims already offered: supersedes (newer -> older) and contradicts (disputing -> disputed). */
function claimToClaimEdges(g: AtlasGraph, claims: ClaimRow[]) {
  for (const c of claims) {
    if (c.superseded_by) g.edge(c.superseded_by, c.claim_id, "supersedes");
    for (const d of disputesOf(c)) g.edge(c.claim_id, d, "contradicts");
  }
}

/** `related` between claims sharing a readable source (one edge per pair), and between their subjects. */
function relatedEdges(
  g: AtlasGraph,
  pairs: { from_id: string; to_id: string; to_subject: string }[],
  subjectOf: Map<string, string>,
) {
  for (const p of pairs) {
    const [a, b] = p.from_id < p.to_id ? [p.from_id, p.to_id] : [p.to_id, p.from_id];
    g.edge(a, b, "related");
    const from = subjectOf.get(p.from_id);
    if (from !== undefined && from !== p.to_subject) {
      const [s, t] = from < p.to_subject ? [from, p.to_subject] : [p.to_subject, from];
      g.edge(subjectNodeId(s), subjectNodeId(t), "related");
    }
  }
}

type LensFn = (db: Db, caller: Caller, body: AtlasBody, g: AtlasGraph) => string | undefined;

const evidenceTrace: LensFn = (db, caller, body, g) => {
  const claim = getClaim(db, body.focus_id!);
  if (!claim || !canRetrieve(caller, claim)) throw notFound("Claim");
  const cap = fetchCap(g.maxNodes);
  g.add(claimNode(claim));
  for (const o of retrievableEvidence(db, caller, [claim.claim_id], cap)) {
    g.add(observationNode(o));
    g.edge(o.observation_id, claim.claim_id, o.relation as EdgeType);
  }
  // Complete readable runs only: the caller reads the run and every claim in it.
  for (const r of readableRunsSelecting(db, caller, claim.claim_id, cap)) {
    g.add({ id: r.context_id, type: "context", label: labelOf(r.query, `context run ${r.created_at}`) });
    g.edge(claim.claim_id, r.context_id, "selected-in");
  }
  // Current active releases: active, and pinned to the claim's current version (stale ones are omitted).
  const releases = !g.sees("release")
    ? []
    : rowsWithRetrievableClaim<ReleaseRow>(
        db,
        caller,
        "knowledge_releases",
        "g.claim_id = ? AND g.status = 'active' AND g.claim_version = c.version",
        [claim.claim_id],
        cap,
      );
  const channels = new Map(
    channelsByIds(db, [...new Set(releases.map((r) => r.channel_id))]).map((c) => [c.channel_id, c.name]),
  );
  for (const r of releases) {
    g.add(releaseNode(r, channels.get(r.channel_id)));
    g.edge(claim.claim_id, r.release_id, "released-as");
  }
  return claim.claim_id;
};

const neighborhood: LensFn = (db, caller, body, g) => {
  const subjectId = body.subject_id!;
  if (!subjectRetrievable(db, caller, subjectId)) throw notFound("Subject");
  const cap = fetchCap(g.maxNodes);
  g.add(subjectNode(subjectId));
  const claims = atlasClaims(db, caller, { subject_id: subjectId }, cap);
  for (const c of claims) {
    g.add(claimNode(c));
    g.edge(c.claim_id, subjectNodeId(subjectId), "about");
  }
  claimToClaimEdges(g, claims);
  const pairs = sharedSourcePairs(
    db,
    caller,
    claims.map((c) => c.claim_id),
    cap * 4,
  );
  // Subjects this subject's claims relate to (through a shared readable source).
  for (const p of pairs) if (p.to_subject !== subjectId) g.add(subjectNode(p.to_subject));
  relatedEdges(g, pairs, new Map(claims.map((c) => [c.claim_id, c.subject_id])));
  return subjectNodeId(subjectId);
};

const conflictFreshness: LensFn = (db, caller, _body, g) => {
  const cap = fetchCap(g.maxNodes);
  const disputed = disputedClaims(db, caller, cap);
  for (const c of disputed) g.add(claimNode(c));
  const disputedIds = new Set(disputed.map((c) => c.claim_id));
  // What contradicts them: claims that dispute them, and contradicting readable evidence (both
  // chosen in SQL before the LIMIT, so unrelated rows cannot fill it).
  const disputers = disputingClaims(db, caller, [...disputedIds], cap);
  for (const d of disputers) g.add(claimNode(d));
  for (const o of retrievableEvidence(db, caller, [...disputedIds], cap, "contradicts")) {
    g.add(observationNode(o));
    g.edge(o.observation_id, o.claim_id, "contradicts");
  }
  const horizon = new Date(clock.nowMs() + EXPIRY_HORIZON_DAYS * 86_400_000).toISOString();
  const expiring = expiringClaims(db, caller, horizon, cap);
  for (const c of expiring) g.add(claimNode(c));
  claimToClaimEdges(g, [...disputed, ...disputers, ...expiring]);
  return undefined;
};

const workspaceGraph: LensFn = (db, caller, body, g) => {
  if (body.workspace_id !== undefined && !workspaceVisible(db, caller, body.workspace_id))
    throw unresolved("workspace", [body.workspace_id]);
  const cap = fetchCap(g.maxNodes);
  const claims = atlasClaims(
    db,
    caller,
    body.workspace_id !== undefined ? { workspace_id: body.workspace_id } : null,
    cap,
  );
  for (const c of claims) {
    g.add(claimNode(c));
    g.add(subjectNode(c.subject_id));
    g.edge(c.claim_id, subjectNodeId(c.subject_id), "about");
  }
  claimToClaimEdges(g, claims);
  relatedEdges(
    g,
    sharedSourcePairs(
      db,
      caller,
      claims.map((c) => c.claim_id),
      cap * 4,
      true,
    ),
    new Map(claims.map((c) => [c.claim_id, c.subject_id])),
  );
  return body.workspace_id;
};

const reviewQueue: LensFn = (db, caller, _body, g) => {
  const cap = fetchCap(g.maxNodes);
  // Not even the claims under review are drawn for a key that may not see the approvals or drafts:
  // an undisputed claim in this lens would say that one exists.
  const approvals = g.sees("approval")
    ? rowsWithRetrievableClaim<ApprovalRow>(db, caller, "claim_approvals", "g.status = 'pending'", [], cap)
    : [];
  const drafts = g.sees("release")
    ? rowsWithRetrievableClaim<ReleaseRow>(db, caller, "knowledge_releases", "g.status = 'draft'", [], cap)
    : [];
  const disputed = disputedClaims(db, caller, cap);
  const claims = new Map(
    retrievableClaims(db, caller, [...new Set([...approvals, ...drafts].map((r) => r.claim_id))]).map((c) => [
      c.claim_id,
      c,
    ]),
  );
  for (const c of disputed) claims.set(c.claim_id, c);
  const channels = new Map(
    channelsByIds(db, [...new Set(drafts.map((r) => r.channel_id))]).map((c) => [c.channel_id, c.name]),
  );
  for (const a of approvals) {
    g.add({ id: a.approval_id, type: "approval", label: `approval of version ${a.claim_version}`, status: a.status });
    const c = claims.get(a.claim_id);
    if (c) {
      g.add(claimNode(c));
      g.edge(c.claim_id, a.approval_id, "submitted-as");
    }
  }
  for (const r of drafts) {
    g.add(releaseNode(r, channels.get(r.channel_id)));
    const c = claims.get(r.claim_id);
    if (c) {
      g.add(claimNode(c));
      g.edge(c.claim_id, r.release_id, "released-as");
    }
  }
  for (const c of disputed) g.add(claimNode(c));
  // Enrichment proposals, each from an observation the caller may retrieve (none until the ledger exists).
  for (const p of retrievableProposals(db, caller, cap)) {
    g.add({
      id: p.proposal_id,
      type: "proposal",
      label: labelOf(p.statement, p.proposal_id),
      status: p.proposal_status,
      kind: p.proposal_kind,
    });
    g.add(observationNode(p));
    g.edge(p.observation_id, p.proposal_id, "proposed-as");
  }
  return undefined;
};

const scopePreview: LensFn = (db, caller, _body, g) => {
  const cap = fetchCap(g.maxNodes);
  for (const p of retrievableProjects(db, caller, ["", ""], cap))
    g.add({ id: p.project_id, type: "project", label: labelOf(p.reference, p.project_id) });
  for (const s of retrievableSubjects(db, caller, "", cap)) g.add(subjectNode(s.subject_id));
  return undefined;
};

const knowledgeRelease: LensFn = (db, caller, body, g) => {
  const cap = fetchCap(g.maxNodes);
  let channels;
  if (!g.sees("channel")) {
    // A key that cannot list channels learns nothing of them, not even whether an id exists.
    if (body.channel_id !== undefined) throw unresolved("channel", [body.channel_id]);
    return undefined;
  }
  if (body.channel_id !== undefined) {
    const channel = channelById(db, body.channel_id);
    if (!channel) throw unresolved("channel", [body.channel_id]);
    channels = [channel];
  } else channels = openChannels(db, cap);
  for (const c of channels) g.add({ id: c.channel_id, type: "channel", label: c.name, status: c.status });
  const names = new Map(channels.map((c) => [c.channel_id, c.name]));
  const releases = rowsWithRetrievableClaim<ReleaseRow>(
    db,
    caller,
    "knowledge_releases",
    "g.channel_id IN (SELECT value FROM json_each(?)) AND g.status = 'active' AND g.claim_version = c.version",
    [JSON.stringify(channels.map((c) => c.channel_id))],
    cap,
  );
  const claims = new Map(
    retrievableClaims(db, caller, [...new Set(releases.map((r) => r.claim_id))]).map((c) => [c.claim_id, c]),
  );
  for (const r of releases) {
    const c = claims.get(r.claim_id);
    if (!c) continue;
    g.add(releaseNode(r, names.get(r.channel_id)));
    g.add(claimNode(c));
    g.edge(c.claim_id, r.release_id, "released-as");
    g.edge(r.release_id, r.channel_id, "published-in");
  }
  return body.channel_id;
};

const LENS: Record<Lens, LensFn> = {
  evidence_trace: evidenceTrace,
  neighborhood,
  conflict_freshness: conflictFreshness,
  workspace_graph: workspaceGraph,
  review_queue: reviewQueue,
  scope_preview: scopePreview,
  knowledge_release: knowledgeRelease,
};

/**
 * Which node types a caller sees at all. Memory records are authorized row by row in each lens
 * (retrievable); governance records only by keys that could list them (GET /v1/claim-approvals needs
 * approvals:read, GET /v1/knowledge-releases and /v1/channels releases:read); legal holds only by
 * those who administer them (owner or admin role, and a key holding retention:write, what POST
 * /v1/legal-holds takes). A hold's coverage of dependents is implied, not drawn.
 */
const TYPE_READ_RULE: Partial<Record<NodeType, (caller: Caller) => boolean>> = {
  approval: (c) => hasScope(c.scopes, "approvals:read"),
  release: (c) => hasScope(c.scopes, "releases:read"),
  channel: (c) => hasScope(c.scopes, "releases:read"),
  hold: (c) => isAdmin(c) && hasScope(c.scopes, "retention:write"),
};
const seesType = (caller: Caller) => (type: NodeType) => TYPE_READ_RULE[type]?.(caller) ?? true;

function holdsOfView(db: Db, g: AtlasGraph) {
  for (const h of activeHoldsOn(db, g.idsOf("claim", "observation"), fetchCap(g.maxNodes))) {
    g.add({ id: h.hold_id, type: "hold", label: labelOf(h.reason, "legal hold"), status: h.status });
    g.edge(h.hold_id, h.target_id, "holds");
  }
}

/** Compile one view: the lens fills a graph bounded by max_nodes; the graph renders the response. */
export function compileView(db: Db, caller: Caller, body: AtlasBody) {
  const g = new AtlasGraph(body.max_nodes, seesType(caller));
  const focus = LENS[body.lens](db, caller, body, g);
  if (g.sees("hold")) holdsOfView(db, g);
  return g.view(body.lens, focus);
}
