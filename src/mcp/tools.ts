// The nine MCP tools. Each (but svc_remember) mirrors one HTTP route and runs through that route's
// own checks and handler (executeRoute), so a tool can never do more than its key's scopes allow.
// Key management, membership, retention, webhook, federation, release and Atlas operations are
// deliberately absent.
import { z } from "zod";
import { targetInBody } from "../domains/memory/records";
import { checkpointRoutes } from "../domains/coordination/checkpoints";
import { handoffRoutes } from "../domains/coordination/handoffs";
import { CHECKPOINT_KINDS, checkpointBody, handoffBody } from "../domains/coordination/schema";
import { claimRoutes } from "../domains/memory/claims";
import { contextRoutes } from "../domains/memory/context";
import { appendObservation } from "../domains/memory/observations";
import {
  compileBody,
  consolidationBody,
  feedbackBody,
  memoriesQuery,
  OBSERVATION_KINDS,
  observationBody,
  observationSource,
} from "../domains/memory/schema";
import type { OrgRoute } from "../org/route";
import type { RouteCall } from "../org/execute";
import { commitWrite } from "../org/write";

type AnyRoute = OrgRoute<any, any>;

const find = (routes: readonly AnyRoute[], method: string, path: string): AnyRoute => {
  const r = routes.find((x) => x.method === method && x.path === path);
  if (!r) throw new Error(`no route ${method} ${path}`);
  return r;
};

/**
 * svc_remember appends an observation WITHOUT a domain event (SPEC): it is the agent's low-ceremony
 * scratch path, so event consumers (webhooks, federation, pollers) see only evidence appended
 * deliberately through POST /v1/observations. It is still audited and indexed like any observation.
 */
const rememberRoute: OrgRoute<typeof observationBody> = {
  auth: "key",
  method: "POST",
  path: "mcp:svc_remember",
  scope: "observations:write",
  body: observationBody,
  grantWritable: targetInBody,
  summary: "MCP svc_remember",
  // Never published (not in the route table): these only satisfy the route type.
  operationId: "svcRemember",
  tag: "MCP",
  description: "The svc_remember tool's append, without a domain event.",
  handler: (rc) =>
    commitWrite(rc, (db, write) => {
      const { row, data, touched } = appendObservation(db, write, rc.caller, rc.body);
      return {
        status: 201,
        data,
        audit: {
          action: "observation.appended",
          resourceType: "observation",
          resourceId: row.observation_id,
          detail: { via: "mcp" },
        },
        touched,
      };
    }),
};

export interface ToolDef {
  name: string;
  title: string;
  description: string;
  input: z.ZodType;
  output: z.ZodType;
  /** Every route the tool may run: its annotations derive from their flags (toolAnnotations). */
  runs: readonly AnyRoute[];
  /** Which route runs, and with what, for validated arguments. */
  route: (args: any) => { route: AnyRoute; call: RouteCall };
  /** A text block ready to paste into a prompt, answered beside the structured result as `context_text`. */
  contextText?: (data: any) => string;
}

/**
 * MCP tool annotations from the route flags, so a tool's hints can never disagree with what its routes
 * do: GET and readOnly routes only read; DELETE and overwrites routes change or lose existing state
 * (destructive) but repeat to the same state (idempotent); any other write adds a record per call.
 * The memory store is a closed world: no tool reaches outside it.
 */
export function toolAnnotations(routes: readonly AnyRoute[]) {
  const reads = (r: AnyRoute) => r.method === "GET" || r.readOnly === true;
  const replaces = (r: AnyRoute) => r.method === "DELETE" || r.overwrites === true;
  const readOnlyHint = routes.every(reads);
  return {
    readOnlyHint,
    destructiveHint: !readOnlyHint && routes.some(replaces),
    idempotentHint: routes.every((r) => reads(r) || replaces(r)),
    openWorldHint: false,
  };
}

/** svc_recall's items as lines an LLM can read in a prompt, each with its claim id for feedback. */
function recallText(data: {
  context_id: string;
  items: { claim_id: string; statement: string; kind: string; status: string; trust?: string }[];
}): string {
  if (!data.items.length) return `No relevant memory (context ${data.context_id}).`;
  const lines = data.items.map(
    (i) =>
      `- ${i.statement} (${i.kind}${i.status === "active" ? "" : `, ${i.status}`}${i.trust ? `, trust ${i.trust}` : ""}; ${i.claim_id})`,
  );
  return [`Relevant memory (context ${data.context_id}):`, ...lines].join("\n");
}

const loose = <T extends z.ZodRawShape>(shape: T) => z.looseObject(shape);
const claimOut = loose({ claim_id: z.string(), statement: z.string(), kind: z.string(), status: z.string() });

/**
 * GET /v1/memories' own query schema (one source of its fields and limits), strict for tool arguments.
 * Its `q` is called `query` here, as in svc_recall: one name per concept across tools; the HTTP API
 * keeps `q` and the tool maps it at this boundary.
 */
const { q: searchWords, ...searchFilters } = memoriesQuery.shape;
const searchInput = z.strictObject({ query: searchWords, ...searchFilters });
const toSearchQuery = ({ query, ...rest }: z.infer<typeof searchInput>) => ({
  ...rest,
  ...(query !== undefined ? { q: query } : {}),
});

/** svc_remember: the observation body with an agent's defaults (a note, from MCP). */
const rememberInput = observationBody.extend({
  kind: z.enum(OBSERVATION_KINDS).default("note").describe("What sort of evidence this is (default note)."),
  source: observationSource
    .default({ type: "mcp" })
    .describe('Where the evidence came from (default { type: "mcp" }).'),
});

const loadInput = z
  .strictObject({
    checkpoint_id: z.string().max(64).optional().describe("Load this exact checkpoint (e.g. one named in a handoff)."),
    subject_id: z.string().max(200).optional().describe("With kind: load the latest checkpoint for this subject."),
    kind: z.enum(CHECKPOINT_KINDS).optional().describe("With subject_id: which kind of checkpoint."),
    agent_id: z.string().max(200).optional().describe("Only a checkpoint saved by this agent_id."),
  })
  .refine((a) => a.checkpoint_id !== undefined || (a.subject_id !== undefined && a.kind !== undefined), {
    message: "give checkpoint_id, or subject_id and kind",
  });

export const TOOLS: ToolDef[] = [
  {
    name: "svc_remember",
    title: "Remember evidence",
    description:
      "Store a piece of evidence (an observation) about a subject: what a user said, a tool result, a document excerpt. " +
      "It is content-hashed and kept with its source and trust. Use svc_consolidate afterwards to derive claims from it.",
    input: rememberInput,
    output: loose({ observation_id: z.string(), content_hash: z.string() }),
    runs: [rememberRoute],
    route: (args) => ({ route: rememberRoute, call: { body: args } }),
  },
  {
    name: "svc_recall",
    title: "Recall context",
    description:
      "Get the claims relevant to a task, ranked and packed into a token budget. Pass the task or question as " +
      "`query` (only claims that match it are packed; an unrelated query packs nothing); optionally subject_id, project_id or " +
      "kinds to recall only those claims. Returns a context_id you can give feedback on or hand off.",
    input: compileBody,
    output: loose({
      context_id: z.string(),
      items: z.array(claimOut),
      token_budget: z.number(),
      tokens_used: z.number(),
      context_text: z.string().describe("The items as a text block ready to paste into a prompt."),
    }),
    runs: [find(contextRoutes, "POST", "/v1/context/compile")],
    route: (args) => ({ route: find(contextRoutes, "POST", "/v1/context/compile"), call: { body: args } }),
    contextText: recallText,
  },
  {
    name: "svc_search",
    title: "Search memories",
    description:
      "List or search current claims (active and disputed by default) by words, subject, project, status or kind. " +
      "Page with `after` set to the previous next_cursor.",
    input: searchInput,
    output: loose({ items: z.array(claimOut), has_more: z.boolean(), next_cursor: z.string().nullable() }),
    runs: [find(claimRoutes, "GET", "/v1/memories")],
    route: (args) => ({ route: find(claimRoutes, "GET", "/v1/memories"), call: { query: toSearchQuery(args) } }),
  },
  {
    name: "svc_evidence",
    title: "Show evidence",
    description:
      "Show the observations behind a claim, grouped as supporting, contradicting and qualifying, plus how many " +
      "sources you are not allowed to see.",
    input: z.strictObject({ claim_id: z.string().min(1).max(64).describe("The claim to show the evidence of.") }),
    output: loose({
      supporting: z.array(z.unknown()),
      contradicting: z.array(z.unknown()),
      qualifying: z.array(z.unknown()),
      hidden_source_count: z.number(),
    }),
    runs: [find(claimRoutes, "GET", "/v1/claims/:id/evidence")],
    route: (args) => ({
      route: find(claimRoutes, "GET", "/v1/claims/:id/evidence"),
      call: { params: { id: args.claim_id } },
    }),
  },
  {
    name: "svc_consolidate",
    title: "Consolidate claims",
    description:
      "Turn observations into claims about one subject (1 to 50 per call). Each claim names its source " +
      "observations and how each relates: supports, contradicts or qualifies. Deterministic; no model is used.",
    input: consolidationBody,
    output: loose({ claims: z.array(claimOut), model_used: z.boolean() }),
    runs: [find(claimRoutes, "POST", "/v1/consolidations")],
    route: (args) => ({ route: find(claimRoutes, "POST", "/v1/consolidations"), call: { body: args } }),
  },
  {
    name: "svc_feedback",
    title: "Give feedback",
    description:
      "Tell the service how a recalled context worked out: used, useful, irrelevant, incorrect or harmful, for the " +
      "whole context or one claim in it. Future recalls rank accordingly.",
    input: feedbackBody.extend({ context_id: z.string().min(1).max(64).describe("The context_id a recall returned.") }),
    output: loose({ feedback_id: z.string(), outcome: z.string() }),
    runs: [find(contextRoutes, "POST", "/v1/context/:id/feedback")],
    route: ({ context_id, ...body }) => ({
      route: find(contextRoutes, "POST", "/v1/context/:id/feedback"),
      call: { params: { id: context_id }, body },
    }),
  },
  {
    name: "svc_checkpoint_save",
    title: "Save checkpoint",
    description:
      "Save your task state so you (or an agent you hand off to) can resume: one checkpoint per subject, agent_id " +
      "and kind, overwritten on each save, expiring after ttl_seconds (60 to 2,592,000).",
    input: checkpointBody,
    output: loose({ checkpoint_id: z.string(), updated: z.boolean(), expires_at: z.string() }),
    runs: [find(checkpointRoutes, "POST", "/v1/checkpoints")],
    route: (args) => ({ route: find(checkpointRoutes, "POST", "/v1/checkpoints"), call: { body: args } }),
  },
  {
    name: "svc_checkpoint_load",
    title: "Load checkpoint",
    description:
      "Load a saved checkpoint: by checkpoint_id, or the latest for a subject_id and kind (optionally one agent_id).",
    input: loadInput,
    output: loose({ checkpoint_id: z.string(), state: z.string(), expires_at: z.string() }),
    runs: [find(checkpointRoutes, "GET", "/v1/checkpoints/:id"), find(checkpointRoutes, "GET", "/v1/checkpoints")],
    route: (args) =>
      args.checkpoint_id !== undefined
        ? { route: find(checkpointRoutes, "GET", "/v1/checkpoints/:id"), call: { params: { id: args.checkpoint_id } } }
        : {
            route: find(checkpointRoutes, "GET", "/v1/checkpoints"),
            call: { query: { subject_id: args.subject_id, kind: args.kind, agent_id: args.agent_id } },
          },
  },
  {
    name: "svc_handoff",
    title: "Hand off work",
    description:
      "Offer work to another principal, optionally with a context_id from svc_recall and a checkpoint_id from " +
      "svc_checkpoint_save; the recipient can then read both.",
    input: handoffBody,
    output: loose({ handoff_id: z.string(), status: z.string() }),
    runs: [find(handoffRoutes, "POST", "/v1/handoffs")],
    route: (args) => ({ route: find(handoffRoutes, "POST", "/v1/handoffs"), call: { body: args } }),
  },
];

export const TOOLS_BY_NAME = new Map(TOOLS.map((t) => [t.name, t]));

const jsonSchema = (schema: z.ZodType, io: "input" | "output") => {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as Record<
    string,
    unknown
  >;
  return rest;
};

/** The tools/list entries; annotations from protocol 2025-03-26 on, outputSchema from 2025-06-18 on. */
export function toolList(version: string) {
  return TOOLS.map((t) => ({
    name: t.name,
    title: t.title,
    description: t.description,
    inputSchema: jsonSchema(t.input, "input"),
    ...(version >= "2025-06-18" ? { outputSchema: jsonSchema(t.output, "output") } : {}),
    ...(version >= "2025-03-26" ? { annotations: { title: t.title, ...toolAnnotations(t.runs) } } : {}),
  }));
}
