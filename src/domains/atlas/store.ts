// The Atlas's reads of non-memory tables (context runs, releases, channels). Memory-table reads live
// in src/domains/memory/records.ts and are authorized there by retrievable.
import type { Db } from "../../org/db";
import type { Caller } from "../../org/request";
import { runItemsRetrievable } from "../memory/records";

export interface RunSummary { context_id: string; query: string | null; created_at: string }

/**
 * Context runs that selected a claim, that the caller may read (its own, or delegated to it by a
 * pending or accepted handoff, as GET /v1/context/:id decides) and whose every claim it may still
 * retrieve (records.ts runItemsRetrievable: decided in the walk, so incomplete runs cannot fill the
 * LIMIT), newest first.
 */
export function readableRunsSelecting(db: Db, caller: Caller, claimId: string, limit: number) {
  const [whole, ...wholeArgs] = runItemsRetrievable(caller, "r");
  return db.all<RunSummary>(
    `SELECT r.context_id, r.query, r.created_at FROM context_runs r
      WHERE r.context_id IN (SELECT context_id FROM context_items WHERE claim_id = ?)
        AND (r.actor_id = ? OR EXISTS (SELECT 1 FROM handoffs h WHERE h.context_id = r.context_id AND h.from_principal_id = r.actor_id
              AND h.to_principal_id = ? AND h.status IN ('pending', 'accepted')))
        AND ${whole}
      ORDER BY r.created_at DESC, r.context_id DESC LIMIT ?`,
    claimId, caller.principalId, caller.principalId, ...wholeArgs, limit);
}

export interface ChannelSummary { channel_id: string; name: string; status: string }

export const channelById = (db: Db, id: string) =>
  db.first<ChannelSummary>("SELECT channel_id, name, status FROM channels WHERE channel_id = ?", id);

export const channelsByIds = (db: Db, ids: string[]) =>
  db.all<ChannelSummary>("SELECT channel_id, name, status FROM channels WHERE channel_id IN (SELECT value FROM json_each(?))", JSON.stringify(ids));

/** Channels, oldest first (the GET /v1/channels order), disabled ones left out. */
export const openChannels = (db: Db, limit: number) =>
  db.all<ChannelSummary>("SELECT channel_id, name, status FROM channels WHERE status != 'disabled' ORDER BY created_at, channel_id LIMIT ?", limit);

export interface HoldSummary { hold_id: string; target_type: "claim" | "observation"; target_id: string; reason: string; status: string }

/** Active legal holds naming any of these records, newest first (the legal_holds_active_by_target index). */
export const activeHoldsOn = (db: Db, targetIds: string[], limit: number) => targetIds.length
  ? db.all<HoldSummary>(
    `SELECT hold_id, target_type, target_id, reason, status FROM legal_holds
      WHERE status = 'active' AND target_id IN (SELECT value FROM json_each(?)) ORDER BY created_at DESC, hold_id DESC LIMIT ?`,
    JSON.stringify(targetIds), limit)
  : [];
