// Federation request schemas and the wire shapes two deployments exchange (DESIGN part 2 "Federation").
import { z } from "zod";
import { trustSchema } from "../../auth/trust";
import { ID_PREFIX } from "../../http/ids";
import { count, idOf, pageOf, timestamp } from "../../http/shapes";
import { intRange, limitParam, nonEmpty } from "../../http/validate";
import { webhookUrlProblem } from "../webhooks/url-guard";
import { CLAIM_KINDS, MAX_CONTENT_CHARS, MAX_STATEMENT_CHARS, OBSERVATION_KINDS, RELATIONS } from "../memory/schema";

export const DIRECTIONS = ["push", "pull", "bidirectional"] as const;
export type Direction = (typeof DIRECTIONS)[number];
export const RESOURCE_TYPES = ["observation", "claim"] as const;
export type ResourceType = (typeof RESOURCE_TYPES)[number];

/** The only event kinds that ever cross, and the resource type each describes. */
export const FEDERABLE_KINDS = {
  "observation.appended": "observation",
  "claim.materialized": "claim",
  "claim.superseded": "claim",
  "claim.revoked": "claim",
  "claim.expired": "claim",
} as const satisfies Record<string, ResourceType>;
export type FederableKind = keyof typeof FEDERABLE_KINDS;

export const MAX_PEERS_PER_ORG = 100;
export const MAX_FILTERS_PER_PEER = 20;
export const MAX_EVENTS_PER_CALL = 200;
export const MAX_BUNDLES_PER_PUSH = 200;
/** |sent_at - now| beyond this is refused: the signature covers the body, not a header timestamp. */
export const SENT_AT_WINDOW_MS = 300_000;

const peerId = z.string().min(1, "must be a peer id").max(64, "must be a peer id");

export const createPeerBody = z.strictObject({
  endpoint: z
    .string()
    .max(2048, "must be at most 2048 characters")
    .superRefine((url, ctx) => {
      const problem = webhookUrlProblem(url);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    })
    .describe("the other deployment's base URL (webhook URL rules); one peer per endpoint"),
  shared_secret: z
    .string()
    .min(16, "must be at least 16 characters")
    .max(512, "must be at most 512 characters")
    .describe("HMAC-SHA256 key both sides hold; never returned"),
  direction: z.enum(DIRECTIONS).describe("what the peer may do here: pull our events, push us events, or both"),
  label: nonEmpty(200).optional(),
});

const kindsOf = { observation: OBSERVATION_KINDS, claim: CLAIM_KINDS } as const;

export const createFilterBody = z
  .strictObject({
    resource_type: z.enum(RESOURCE_TYPES),
    include_kinds: z
      .array(z.string())
      .min(1, "must list at least one kind")
      .max(20, "must have at most 20 entries")
      .optional()
      .describe("observation kinds or claim kinds (by resource_type); absent: every kind"),
    exclude_subjects: z
      .array(nonEmpty(200))
      .min(1, "must list at least one subject")
      .max(200, "must have at most 200 entries")
      .optional(),
    min_trust: trustSchema.optional(),
  })
  .superRefine((f, ctx) => {
    const allowed: readonly string[] = kindsOf[f.resource_type];
    (f.include_kinds ?? []).forEach((kind, i) => {
      if (!allowed.includes(kind))
        ctx.addIssue({
          code: "custom",
          path: ["include_kinds", i],
          message: `must be one of ${allowed.map((k) => `"${k}"`).join(", ")}`,
        });
    });
  });
export type FilterInput = z.infer<typeof createFilterBody>;

const isoTime = z.iso.datetime({ offset: true, error: "must be an ISO 8601 timestamp" });
const sentAt = isoTime.describe("when the peer signed the request; more than 300 s from this server's clock: 403");

/**
 * The pull body, signed like push: `x-svc-peer-signature` over its raw bytes, `sent_at` within the window
 * (both required unless an owner or admin holding "*" pulls unsigned: federation/exchange.ts).
 */
export const pullBody = z.strictObject({
  peer_id: peerId,
  sent_at: sentAt.optional(),
  limit: intRange(1, MAX_EVENTS_PER_CALL).default(MAX_EVENTS_PER_CALL),
  include_memory: z.boolean().default(false).describe("also answer signed claim bundles (needs a claim filter)"),
});

export const logQuery = z.object({
  peer_id: peerId,
  limit: limitParam(1, 200, 50),
  after: z.string().max(512).optional(),
});

const text = (max: number) => z.string().min(1, "must not be empty").max(max, `must be at most ${max} characters`);

/** Payload fields that may describe a federated event: metadata only, never content. */
const payloadValue = z.union([z.string().max(200), z.number(), z.boolean(), z.null()]);
export const federatedPayload = z.strictObject({
  subject_id: z.string().max(200).optional(),
  kind: z.string().max(50).optional(),
  trust: trustSchema.optional(),
  visibility: z.literal("team", { error: "only team records cross" }).optional(),
  status: z.string().max(50).optional(),
  version: z.number().int().optional(),
  project_id: payloadValue.optional(),
  superseded_by: payloadValue.optional(),
  valid_to: payloadValue.optional(),
});

/** One event as pull answers it and push accepts it. */
export const federatedEvent = z
  .strictObject({
    id: idOf(ID_PREFIX.event, "event"),
    kind: z.enum(Object.keys(FEDERABLE_KINDS) as [FederableKind, ...FederableKind[]]),
    resource_type: z.enum(RESOURCE_TYPES),
    resource_id: z.string().regex(/^(obs|claim)_[0-9a-f]{32}$/, "must be an observation or claim id"),
    payload: federatedPayload,
    created_at: isoTime,
  })
  .superRefine((e, ctx) => {
    if (FEDERABLE_KINDS[e.kind] !== e.resource_type)
      ctx.addIssue({
        code: "custom",
        path: ["resource_type"],
        message: `must be "${FEDERABLE_KINDS[e.kind]}" for ${e.kind}`,
      });
  })
  .meta({ id: "FederatedEvent" });
export type FederatedEvent = z.infer<typeof federatedEvent>;

export const bundleObservation = z.strictObject({
  observation_id: idOf(ID_PREFIX.observation, "observation"),
  subject_id: text(200),
  kind: z.enum(OBSERVATION_KINDS),
  content: text(MAX_CONTENT_CHARS),
  content_hash: z.string().regex(/^sha256:[0-9a-f]{64}$/, "must be sha256: + 64 lowercase hex"),
  source: z.strictObject({ type: text(100), ref: z.string().max(500).optional() }),
  trust: trustSchema,
  visibility: z.literal("team", { error: "only team records cross" }),
  created_at: isoTime,
});

export const bundleClaim = z.strictObject({
  claim_id: idOf(ID_PREFIX.claim, "claim"),
  subject_id: text(200),
  kind: z.enum(CLAIM_KINDS),
  statement: text(MAX_STATEMENT_CHARS),
  status: z.literal("active", { error: "only active claims are bundled" }),
  trust: trustSchema,
  visibility: z.literal("team", { error: "only team records cross" }),
  valid_from: isoTime,
  valid_to: isoTime.nullable(),
  sources: z
    .array(z.strictObject({ observation_id: idOf(ID_PREFIX.observation, "observation"), relation: z.enum(RELATIONS) }))
    .min(1, "must list at least one source")
    .max(50, "must have at most 50 entries"),
  created_at: isoTime,
});

/** A claim with its whole evidence graph, signed by the sending side (DESIGN "Bundle"). */
export const bundleSchema = z
  .strictObject({
    source_org_id: z.string().regex(/^org_[0-9a-f]{32}$/, "must be an organization id"),
    claim: bundleClaim,
    observations: z.array(bundleObservation).max(50, "must have at most 50 entries"),
    signature: z.string().max(200),
  })
  .meta({ id: "MemoryBundle" });
export type Bundle = z.infer<typeof bundleSchema>;

/**
 * The push body. Events and bundles are validated one by one after the exchange is accepted, so a
 * malformed entry is reported `rejected` without refusing its neighbours.
 */
export const pushBody = z.strictObject({
  peer_id: peerId,
  exchange_id: z.string().min(1, "must be 1 to 64 characters").max(64, "must be 1 to 64 characters"),
  sent_at: sentAt,
  events: z.array(z.unknown()).max(MAX_EVENTS_PER_CALL, "must have at most 200 entries"),
  bundles: z.array(z.unknown()).max(MAX_BUNDLES_PER_PUSH, "must have at most 200 entries").optional(),
});
export type PushBody = z.infer<typeof pushBody>;

// Response schemas (published in docs/openapi.json; checked against every answer of the test suite).
const peerRef = idOf(ID_PREFIX.peer);

export const peerResponse = z
  .strictObject({
    peer_id: peerRef,
    endpoint: z.string(),
    direction: z.enum(DIRECTIONS),
    status: z.enum(["active", "suspended"]),
    cursor: idOf(ID_PREFIX.event).nullable().describe("The last event id pulled"),
    remote_org_id: z.string().nullable(),
    label: z.string().nullable(),
    created_at: timestamp,
    suspended_at: timestamp.nullable(),
    last_exchange_at: timestamp.nullable(),
  })
  .meta({ id: "Peer" });
export const peerListResponse = z.strictObject({ peers: z.array(peerResponse) }).meta({ id: "PeerList" });
export const peerSuspendedResponse = peerResponse
  .extend({ already_suspended: z.boolean() })
  .meta({ id: "SuspendedPeer" });

export const filterResponse = z
  .strictObject({
    filter_id: idOf(ID_PREFIX.filter),
    peer_id: peerRef,
    resource_type: z.enum(RESOURCE_TYPES),
    include_kinds: z.array(z.string()).nullable(),
    exclude_subjects: z.array(z.string()).nullable(),
    min_trust: trustSchema.nullable(),
    created_at: timestamp,
  })
  .meta({ id: "PeerFilter" });
export const filterListResponse = z.strictObject({ filters: z.array(filterResponse) }).meta({ id: "PeerFilterList" });

export const pullResponse = z
  .strictObject({
    events: z.array(federatedEvent),
    cursor: idOf(ID_PREFIX.event).nullable(),
    has_more: z.boolean(),
    bundles: z.array(bundleSchema).optional().describe("With include_memory: signed claim bundles"),
  })
  .meta({ id: "FederationPull" });

const exchangeStatus = z.enum(["success", "conflict", "rejected"]);
export const pushResponse = z
  .strictObject({
    exchange_id: z.string(),
    replayed: z.boolean(),
    results: z.array(
      z.strictObject({ id: z.string().nullable(), status: exchangeStatus, reason: z.string().optional() }),
    ),
    bundles: z
      .array(
        z.strictObject({
          claim_id: z.string().nullable(),
          status: exchangeStatus,
          reason: z.string().optional(),
          local_claim_id: z.string().optional(),
        }),
      )
      .optional(),
  })
  .meta({ id: "FederationPushResult" });

export const logListResponse = pageOf(
  "entries",
  z
    .strictObject({
      log_id: idOf(ID_PREFIX.federationLog),
      peer_id: peerRef,
      operation: z.enum(["pull", "push"]),
      counts: z.strictObject({ events: count, success: count, conflict: count, rejected: count, bundles: count }),
      cursor_before: z.string().nullable(),
      cursor_after: z.string().nullable(),
      request_id: z.string(),
      created_at: timestamp,
      signed: z.boolean().nullable(),
    })
    .meta({ id: "FederationLogEntry" }),
).meta({ id: "FederationLog" });
