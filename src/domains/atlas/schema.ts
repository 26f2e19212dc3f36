// The Memory Atlas request (DESIGN part 2 "Memory Atlas"): a lens plus the one argument each lens takes.
import { z } from "zod";
import { EDGE_TYPES, NODE_TYPES } from "./graph";

export const LENSES = [
  "evidence_trace",
  "neighborhood",
  "conflict_freshness",
  "workspace_graph",
  "review_queue",
  "scope_preview",
  "knowledge_release",
] as const;
export type Lens = (typeof LENSES)[number];

export const MAX_NODES = { min: 25, max: 300, default: 100 } as const;

const ref = (what: string) => z.string().min(1, `must be a ${what} id`).max(200, `must be a ${what} id`);

/** Which optional argument belongs to which lens: a required one is named here, others are refused. */
const ARGUMENT_OF: Record<
  "focus_id" | "subject_id" | "workspace_id" | "channel_id",
  { lens: Lens; required: boolean }
> = {
  focus_id: { lens: "evidence_trace", required: true },
  subject_id: { lens: "neighborhood", required: true },
  workspace_id: { lens: "workspace_graph", required: false },
  channel_id: { lens: "knowledge_release", required: false },
};

export const atlasBody = z
  .strictObject({
    lens: z.enum(LENSES),
    focus_id: ref("claim").optional(),
    subject_id: z.string().min(1).max(500).optional(),
    workspace_id: ref("workspace").optional(),
    channel_id: ref("channel").optional(),
    max_nodes: z.number().int().min(MAX_NODES.min).max(MAX_NODES.max).default(MAX_NODES.default),
  })
  .superRefine((b, ctx) => {
    for (const [field, rule] of Object.entries(ARGUMENT_OF) as [
      keyof typeof ARGUMENT_OF,
      (typeof ARGUMENT_OF)[keyof typeof ARGUMENT_OF],
    ][]) {
      const given = b[field] !== undefined;
      if (rule.lens === b.lens && rule.required && !given)
        ctx.addIssue({ code: "custom", path: [field], message: `is required for the ${rule.lens} lens` });
      if (rule.lens !== b.lens && given)
        ctx.addIssue({ code: "custom", path: [field], message: `applies only to the ${rule.lens} lens` });
    }
  });

export type AtlasBody = z.infer<typeof atlasBody>;

/** The compiled view (published in docs/openapi.json; checked against every answer of the test suite). */
const bucket = z.enum(["0", "1-9", "10-99", "100+"]);
export const atlasResponse = z
  .strictObject({
    lens: z.enum(LENSES),
    focus: z.string().optional(),
    nodes: z.array(
      z.strictObject({
        id: z.string(),
        type: z.enum(NODE_TYPES),
        label: z.string(),
        status: z.string().optional(),
        trust: z.string().optional(),
        kind: z.string().optional(),
      }),
    ),
    edges: z.array(
      z.strictObject({
        source: z.string(),
        target: z.string(),
        type: z.enum(EDGE_TYPES),
      }),
    ),
    truncated: z.boolean(),
    withheld: z.strictObject({ nodes: bucket, edges: bucket }).describe("Counts left out, only as buckets"),
  })
  .meta({ id: "MemoryView" });
