// Channel compile: what a public-facing gateway reads. Only the channel's bound gateway principal may
// call it (others 403), only while the channel is active (else 403). It serves the snapshots of the
// channel's active releases that are still eligible now (the one eligibility rule, checked for every
// release), under compile's filters (subject_id, project_id, kinds, as POST /v1/context/compile and GET
// /v1/memories apply them), ranked by compile's own scoring (memory/ranking.ts rankTexts, which with a
// query serves only snapshots holding a query word: the relevance floor, lexical here) and packed the
// same way. Beyond the eligibility check and the released claim's project (fixed for a claim's life)
// it never reads canonical memory, and it records no context run.
import { clock } from "../../http/clock";
import { forbidden, invalid, notFound } from "../../http/errors";
import { orgRoute } from "../../org/route";
import { ok } from "../../org/request";
import { DEGRADED } from "../memory/context";
import { pack, rankTexts } from "../memory/ranking";
import { compileMeta } from "../memory/responses";
import { eligibilityContext, ineligibility } from "./eligibility";
import { channelCompileBody, channelCompileResponse } from "./schema";
import { activeReleaseSnapshots, getChannel } from "./store";

export const channelCompileRoutes = [
  orgRoute({
    method: "POST",
    path: "/v1/channels/:id/context/compile",
    scope: "channel:compile",
    body: channelCompileBody,
    response: { 200: channelCompileResponse },
    responseMeta: compileMeta,
    bodyOptional: true,
    readOnly: true,
    summary:
      "Rank the channel's active, still-eligible released snapshots into a token budget; its gateway principal only.",
    operationId: "compileChannelContext",
    tag: "Governance",
    description:
      "Ranks the channel's active, still-eligible released snapshots into a token budget, never canonical memory. " +
      "Only the channel's gateway principal may call it.",
    handler: ({ db, caller, params, body }) => {
      const channel = getChannel(db, params.id);
      if (!channel) throw notFound("Channel");
      if (channel.gateway_principal_id !== caller.principalId)
        throw forbidden("Only the channel's gateway principal may compile it.");
      if (channel.status !== "active") throw forbidden(`The channel is ${channel.status}.`);
      const audiences = JSON.parse(channel.audiences) as string[];
      if (body.audience !== undefined && !audiences.includes(body.audience))
        throw invalid(
          `Invalid field "audience": not an audience of this channel (${audiences.map((a) => `"${a}"`).join(", ")}).`,
        );
      const releases = activeReleaseSnapshots(db, channel.channel_id);
      const eligibility = eligibilityContext(
        db,
        releases.map((r) => r.claim_id),
      );
      // The released claim's project (the snapshot has none) comes with its eligibility facts.
      const projectOf = (r: (typeof releases)[number]) => eligibility.facts.get(r.claim_id)?.project_id ?? null;
      const passes = (r: (typeof releases)[number]) =>
        (body.subject_id === undefined || r.subject_id === body.subject_id) &&
        (body.project_id === undefined || projectOf(r) === body.project_id) &&
        (!body.kinds?.length || body.kinds.includes(r.kind as never));
      const texts = releases
        .filter((r) => passes(r) && ineligibility(eligibility, r, channel.min_trust) === null)
        .map((r) => ({
          seq: r.seq,
          release_id: r.release_id,
          claim_id: r.claim_id,
          statement: r.statement,
          kind: r.kind,
          subject_id: r.subject_id,
          project_id: projectOf(r),
          trust: r.trust,
          status: "active",
          created_at: r.created_at,
          feedback: null,
        }));
      const ranked = rankTexts(texts, { query: body.query }, clock.nowMs());
      const items = pack(ranked, body.token_budget, body.max_items);
      return ok(
        {
          channel_id: channel.channel_id,
          items: items.map(({ candidate: c, ...i }) => ({
            release_id: c.release_id,
            claim_id: c.claim_id,
            statement: c.statement,
            kind: c.kind,
            trust: c.trust,
            score: i.score,
            tokens: i.tokens,
          })),
          token_budget: body.token_budget,
          tokens_used: items.reduce((n, i) => n + i.tokens, 0),
        },
        { degraded: DEGRADED, floor_removed: texts.length - ranked.length },
      );
    },
  }),
];
