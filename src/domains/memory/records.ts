// The memory records' writers, and the by-id lookups they and the readers share. Every other read of
// projects, observations, claims, claim_sources, claims_fts and claim_ranking lives next to its user
// and applies a read rule of src/access/retrieval.ts in the same statement (test/records.test.ts scans
// src/ for one that does not).
//
// Writers (insertProject, insertObservation, insertClaim, changeClaim, tombstone, excludeObservations,
// restoreObservations) each return the ids they touched; the route hands them to commitWrite as
// `touched`, which turns them into outbox rows per topic (src/org/outbox.ts OUTBOX_TOPICS). Every claim
// state change bumps `version`. The by-id lookups (getProject, getObservation, getClaim,
// observationsByIds, projectByReference, projectWorkspace) read a row whatever the caller: a reader
// authorizes what they return with canRetrieve (or projectNameable) before using it.
import { type WriteTarget, canWrite } from "../../access/policy";
import { isShared, projectNameable } from "../../access/retrieval";
import { unresolved } from "../../http/errors";
import { clock } from "../../http/clock";
import { type Db, list, sql } from "../../sql/db";
import type { Touched } from "../../org/outbox";
import type { Caller } from "../../org/request";
import { getMeta } from "../../org/meta";
import { recordIdFor } from "../../registry/shards";
import { type RecordPrefix, takeReservedId } from "../../org/reserved-ids";
import type { WriteScope } from "../../org/write";
import { stemsOf, storedTerm, type TermStats } from "./fts";

export interface ProjectRow {
  project_id: string;
  reference: string;
  created_by: string;
  created_at: string;
  /** The workspace whose memberships scope this project's records; fixed at creation. */
  workspace_id?: string | null;
}

export interface ObservationRow {
  observation_id: string;
  subject_id: string;
  project_id: string | null;
  kind: string;
  content: string | null;
  content_hash: string;
  source_type: string;
  source_ref: string | null;
  trust: string;
  visibility: string;
  author_id: string;
  created_at: string;
  /** When what it records happened (event time); its created_at unless the writer said otherwise. */
  occurred_at: string;
  purged_at: string | null;
  /** Set by retention apply: out of every retrieval until a legal hold restores it. */
  retention_excluded_at?: string | null;
  /** Copied from the project at insert (null: no workspace); read by the one read predicate. */
  workspace_id: string | null;
}

export interface ClaimRow {
  seq: number;
  claim_id: string;
  subject_id: string;
  project_id: string | null;
  kind: string;
  statement: string;
  status: string;
  visibility: string;
  trust: string;
  version: number;
  valid_from: string;
  valid_to: string | null;
  superseded_by: string | null;
  disputes: string;
  author_id: string;
  created_at: string;
  updated_at: string;
  /** Event time: the latest of its source observations' occurred_at (fixed at insert). */
  occurred_at: string;
  /** Set by retention apply: out of every retrieval until a legal hold restores it. */
  retention_excluded_at?: string | null;
  /** Copied from the project at insert (null: no workspace); read by the one read predicate. */
  workspace_id: string | null;
}

export interface SourceRow {
  claim_id: string;
  position: number;
  observation_id: string;
  relation: string;
}

const created = (...ids: string[]): Touched => ({ created: ids, changed: [] });
const changed = (...ids: string[]): Touched => ({ created: [], changed: ids });

// ---- projects -----------------------------------------------------------------------------------

/** The workspace of a project (null: none, or no such project: the handler answers for that). */
export const projectWorkspace = (db: Db, projectId: string | null | undefined): string | null =>
  projectId
    ? (db.first<{ workspace_id: string | null }>("SELECT workspace_id FROM projects WHERE project_id = ?", projectId)
        ?.workspace_id ?? null)
    : null;

/**
 * The write target a request body names (appends and consolidations): for grantWritable routes. A
 * project the caller may not name (missing, or a hidden workspace's: projectNameable) and may not
 * write into answers 400 UNRESOLVED_REFERENCE here, before the write check, so a 403 never confirms it.
 */
export function targetInBody(rc: {
  db: Db;
  caller: Caller;
  body: { subject_id: string; project_id?: string | null };
}): WriteTarget {
  const projectId = rc.body.project_id ?? null;
  const project = projectId === null ? null : getProject(rc.db, projectId);
  const target = { subject_id: rc.body.subject_id, project_id: projectId, workspace_id: project?.workspace_id ?? null };
  if (projectId !== null && (!project || (!projectNameable(rc.db, rc.caller, project) && !canWrite(rc.caller, target))))
    throw unresolved("project", [projectId]);
  return target;
}

export const getProject = (db: Db, projectId: string) =>
  db.first<ProjectRow>("SELECT * FROM projects WHERE project_id = ?", projectId);

export const projectByReference = (db: Db, reference: string) =>
  db.first<ProjectRow>("SELECT * FROM projects WHERE reference = ?", reference);

export function insertProject(db: Db, p: ProjectRow): Touched {
  db.run(
    "INSERT INTO projects (project_id, reference, created_by, created_at, workspace_id) VALUES (?, ?, ?, ?, ?)",
    p.project_id,
    p.reference,
    p.created_by,
    p.created_at,
    p.workspace_id ?? null,
  );
  return created(p.project_id);
}

// ---- observations -------------------------------------------------------------------------------

export const getObservation = (db: Db, id: string) =>
  db.first<ObservationRow>("SELECT * FROM observations WHERE observation_id = ?", id);

export const observationsByIds = (db: Db, ids: string[]) =>
  db.all<ObservationRow>(
    "SELECT * FROM observations WHERE observation_id IN (SELECT value FROM json_each(?))",
    JSON.stringify(ids),
  );

/**
 * The id of a project, observation or claim this organization creates in `write`: one registered ahead
 * of use when the reserve has one (src/org/reserved-ids.ts; noted on the write), else a fresh one in
 * the organization's own registry shard (recordIdFor), registered after the write commits. Every
 * organization has its org_id stored at bootstrap.
 */
export function newRecordId(db: Db, write: WriteScope, prefix: RecordPrefix): string {
  const reserved = takeReservedId(db, prefix, write.takenFromReserve);
  if (reserved) return reserved;
  const orgId = getMeta(db, "org_id");
  if (!orgId) throw new Error("organization has no org_id");
  return recordIdFor(orgId, prefix);
}

/**
 * A new observation, or a restored one (import) with its own id, timestamps and tombstone. Without an
 * event time it happened when it was written (occurred_at = created_at).
 */
export function insertObservation(
  db: Db,
  o: Omit<ObservationRow, "workspace_id" | "occurred_at"> & { occurred_at?: string | null },
): Touched {
  db.run(sql`INSERT INTO observations (observation_id, subject_id, project_id, kind, content, content_hash, source_type,
      source_ref, trust, visibility, author_id, created_at, occurred_at, purged_at, workspace_id)
    VALUES (${o.observation_id}, ${o.subject_id}, ${o.project_id}, ${o.kind}, ${o.content}, ${o.content_hash}, ${o.source_type},
      ${o.source_ref}, ${o.trust}, ${o.visibility}, ${o.author_id}, ${o.created_at}, ${o.occurred_at ?? o.created_at}, ${o.purged_at},
      (SELECT workspace_id FROM projects WHERE project_id = ${o.project_id}))`);
  return created(o.observation_id);
}

/**
 * Tombstone an observation: content gone; id, hash and provenance kept. Enrichment proposals are text
 * derived from that content, so they go with it.
 */
export function tombstone(db: Db, observationId: string): Touched {
  db.run(
    "UPDATE observations SET content = NULL, purged_at = ? WHERE observation_id = ? AND purged_at IS NULL",
    clock.nowIso(),
    observationId,
  );
  db.run("DELETE FROM enrichment_proposals WHERE observation_id = ?", observationId);
  return changed(observationId);
}

/** Exclude observations from retrieval (retention apply). */
export function excludeObservations(db: Db, ids: string[], at: string): Touched {
  if (!ids.length) return changed();
  db.run(
    "UPDATE observations SET retention_excluded_at = ? WHERE observation_id IN (SELECT value FROM json_each(?)) AND retention_excluded_at IS NULL",
    at,
    JSON.stringify(ids),
  );
  return changed(...ids);
}

/** Bring excluded observations back into retrieval (a legal hold covers them). */
export function restoreObservations(db: Db, ids: string[]): Touched {
  if (!ids.length) return changed();
  db.run(
    "UPDATE observations SET retention_excluded_at = NULL WHERE observation_id IN (SELECT value FROM json_each(?))",
    JSON.stringify(ids),
  );
  return changed(...ids);
}

// ---- claims -------------------------------------------------------------------------------------

export const getClaim = (db: Db, id: string) => db.first<ClaimRow>("SELECT * FROM claims WHERE claim_id = ?", id);

/** A claim to write; without occurred_at, it is the latest of its source observations' (else its created_at). */
export type NewClaim = Omit<ClaimRow, "seq" | "workspace_id" | "occurred_at"> & { occurred_at?: string };

/** A claim with its sources in order, and its full-text index entry. Also reports its write position (seq). */
export function insertClaim(
  db: Db,
  c: NewClaim,
  sources: { observation_id: string; relation: string }[],
): Touched & { seq: number } {
  const { seq, workspace_id } = db.first<{
    seq: number;
    workspace_id: string | null;
  }>(sql`INSERT INTO claims (claim_id, subject_id,
      project_id, kind, statement, status, visibility, trust, version, valid_from, valid_to, superseded_by, disputes, author_id,
      created_at, updated_at, occurred_at, workspace_id)
    VALUES (${c.claim_id}, ${c.subject_id}, ${c.project_id}, ${c.kind}, ${c.statement}, ${c.status}, ${c.visibility}, ${c.trust},
      ${c.version}, ${c.valid_from}, ${c.valid_to}, ${c.superseded_by}, ${c.disputes}, ${c.author_id}, ${c.created_at}, ${c.updated_at},
      coalesce(${c.occurred_at ?? null},
        (SELECT max(occurred_at) FROM observations WHERE observation_id IN ${list(sources.map((s) => s.observation_id))}), ${c.created_at}),
      (SELECT workspace_id FROM projects WHERE project_id = ${c.project_id})) RETURNING seq, workspace_id`)!;
  db.run("INSERT INTO claims_fts (rowid, statement) VALUES (?, ?)", seq, c.statement);
  // The statement's terms, as claims_fts holds them: ranking and search read these, never re-tokenize.
  // (The claim's row in claim_ranking was just written by the database's trigger.)
  const terms = stemsOf(c.statement).map(storedTerm);
  db.run("UPDATE claim_ranking SET stems = ? WHERE seq = ?", terms.join(" "), seq);
  // Workspace records are readable by the workspace's members only: they stay out of the statistics.
  if (isShared({ visibility: c.visibility, workspace_id })) countSharedTerms(db, c.subject_id, terms, 1);
  sources.forEach((s, position) =>
    db.run(
      "INSERT INTO claim_sources (claim_id, position, observation_id, relation) VALUES (?, ?, ?, ?)",
      c.claim_id,
      position,
      s.observation_id,
      s.relation,
    ),
  );
  return { ...created(c.claim_id), seq };
}

/**
 * claim_ranking (0022_claim_ranking): one narrow row per claim that compile's and search's candidate
 * reads use instead of claims + claim_stems. RANKING_COPY are the claims columns it copies; triggers on
 * claims (0022) keep them in step on every insert, update and delete, whatever statement makes it, and
 * insertClaim adds the stems. Read only through `retrievable` (the columns keep the claims names, so
 * the one rule applies as is).
 */
const RANKING_COPY =
  "seq, claim_id, subject_id, project_id, kind, trust, status, valid_to, retention_excluded_at, visibility, workspace_id, author_id, created_at, occurred_at";

/**
 * The rows where claim_ranking differs from claims (copied columns, size, presence): empty unless a
 * writer forgot it. Checked by test/records.test.ts after every kind of claim write.
 */
export function rankingDrift(db: Db): unknown[] {
  const cols = `${RANKING_COPY}, bytes`;
  const fromClaims = `SELECT ${cols} FROM (SELECT *, length(CAST(statement AS BLOB)) AS bytes FROM claims)`;
  return db.all(`SELECT 'claims' AS side, * FROM (${fromClaims} EXCEPT SELECT ${cols} FROM claim_ranking)
    UNION ALL SELECT 'claim_ranking', * FROM (SELECT ${cols} FROM claim_ranking EXCEPT ${fromClaims})`);
}

export type ClaimChange = Partial<Pick<ClaimRow, "status" | "valid_to" | "superseded_by" | "retention_excluded_at">>;

/** A claim's state change (status move, expiry, retention exclusion or restoration): every change bumps its version. */
export function changeClaim(db: Db, claimId: string, change: ClaimChange): Touched {
  // Retention exclusion takes a team claim out of the shared statistics (nobody may retrieve it);
  // restoring it puts it back.
  if ("retention_excluded_at" in change) {
    const was = db.first<
      Pick<ClaimRow, "subject_id" | "visibility" | "workspace_id" | "retention_excluded_at" | "statement"> & {
        stems: string | null;
      }
    >(
      sql`SELECT c.subject_id, c.visibility, c.workspace_id, c.retention_excluded_at, c.statement, r.stems FROM claims c
        LEFT JOIN claim_ranking r ON r.seq = c.seq WHERE c.claim_id = ${claimId}`,
    );
    if (was) {
      const before = isShared(was);
      const after = isShared({ ...was, retention_excluded_at: change.retention_excluded_at });
      const terms =
        was.stems != null ? (was.stems ? was.stems.split(" ") : []) : stemsOf(was.statement).map(storedTerm);
      if (before !== after) countSharedTerms(db, was.subject_id, terms, after ? 1 : -1);
    }
  }
  const sets = Object.keys(change).map((k) => `${k} = ?`);
  db.run(
    `UPDATE claims SET ${sets.join(", ")}, version = version + 1, updated_at = ? WHERE claim_id = ?`,
    ...Object.values(change),
    clock.nowIso(),
    claimId,
  );
  return changed(claimId);
}

// ---- ranking statistics -------------------------------------------------------------------------
// bm25 and term weights count shared claims (src/access/retrieval.ts isShared), in any status: every
// reader of the organization may retrieve those, so no score, order or count depends on a record the
// caller cannot retrieve. Kept for the whole organization (claim_terms, claim_corpus) and per subject
// (claim_subject_terms, claim_subject_corpus: a compile filtered to one subject ranks by how rare a word
// is among that subject's claims, as a ranking over that subject's records alone would) by insertClaim
// and changeClaim (retention exclusion and restoration) in the writer's transaction (claims never
// change visibility, subject or leave the table).

/** A team claim's terms (stored form, in order) and length join (by 1) or leave (by -1) the shared statistics. */
function countSharedTerms(db: Db, subjectId: string, terms: string[], by: 1 | -1) {
  const distinct = [...new Set(terms)];
  db.run(sql`INSERT INTO claim_terms (term, claims) SELECT value, ${by} FROM json_each(${JSON.stringify(distinct)}) WHERE true
    ON CONFLICT (term) DO UPDATE SET claims = claims + excluded.claims`);
  db.run(sql`INSERT INTO claim_subject_terms (subject_id, term, claims) SELECT ${subjectId}, value, ${by} FROM json_each(${JSON.stringify(distinct)}) WHERE true
    ON CONFLICT (subject_id, term) DO UPDATE SET claims = claims + excluded.claims`);
  if (by < 0) {
    db.run(sql`DELETE FROM claim_terms WHERE claims <= 0 AND term IN ${list(distinct)}`);
    db.run(
      sql`DELETE FROM claim_subject_terms WHERE subject_id = ${subjectId} AND claims <= 0 AND term IN ${list(distinct)}`,
    );
  }
  db.run(sql`INSERT INTO claim_corpus (id, claims, tokens) VALUES (1, ${by}, ${by * terms.length})
    ON CONFLICT (id) DO UPDATE SET claims = claims + excluded.claims, tokens = tokens + excluded.tokens`);
  db.run(sql`INSERT INTO claim_subject_corpus (subject_id, claims, tokens) VALUES (${subjectId}, ${by}, ${by * terms.length})
    ON CONFLICT (subject_id) DO UPDATE SET claims = claims + excluded.claims, tokens = tokens + excluded.tokens`);
}

/**
 * The shared statistics for the given stem keys: one indexed lookup per term, never a count. With a
 * subject: that subject's shared claims alone, when it has any (else the organization's).
 */
export function sharedTermStats(db: Db, stems: string[], subjectId?: string): TermStats {
  const keys = list([...new Set(stems)].map(storedTerm));
  const subject =
    subjectId === undefined
      ? null
      : db.first<{ claims: number; tokens: number }>(
          sql`SELECT claims, tokens FROM claim_subject_corpus WHERE subject_id = ${subjectId} AND claims > 0`,
        );
  const corpus =
    subject ?? db.first<{ claims: number; tokens: number }>(sql`SELECT claims, tokens FROM claim_corpus WHERE id = 1`);
  const byTerm = new Map(
    db
      .all<{ term: string; claims: number }>(
        subject
          ? sql`SELECT term, claims FROM claim_subject_terms WHERE subject_id = ${subjectId} AND term IN ${keys}`
          : sql`SELECT term, claims FROM claim_terms WHERE term IN ${keys}`,
      )
      .map((r) => [r.term, r.claims]),
  );
  return { rows: corpus?.claims ?? 0, tokens: corpus?.tokens ?? 0, held: (stem) => byTerm.get(storedTerm(stem)) ?? 0 };
}
