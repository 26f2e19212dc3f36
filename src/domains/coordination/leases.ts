// Leases: exclusive, expiring holds on a resource. Acquire is atomic because the Durable Object runs
// one request's synchronous transaction at a time, and a partial unique index allows one live row.
import { ADMIN_ROLES } from "../../auth/roles";
import { clock, isoAt } from "../../http/clock";
import { pageOf, positionAfter } from "../../http/cursor";
import { conflict, forbidden, notFound } from "../../http/errors";
import { ID_PREFIX, newId } from "../../http/ids";
import { orgRoute } from "../../org/route";
import type { RequestCtx } from "../../org/request";
import { ok } from "../../org/request";
import { commitWrite } from "../../org/write";
import { leaseAcquireResponse, leaseBody, leaseListQuery, leaseListResponse, leaseReleaseResponse } from "./schema";
import { expirySweepJob } from "./expiry";
import {
  endLeaseAtExpiry,
  getLease,
  insertLease,
  type LeaseRow,
  leasePosition,
  liveLeasesAfter,
  releaseLease,
  renewLease,
  unreleasedLease,
} from "./store";

const view = (l: LeaseRow) => ({
  lease_id: l.lease_id,
  resource_type: l.resource_type,
  resource_id: l.resource_id,
  holder_id: l.holder_id,
  ttl_seconds: l.ttl_seconds,
  acquired_at: l.acquired_at,
  expires_at: l.expires_at,
  released_at: l.released_at,
});

function release(rc: RequestCtx, lease: LeaseRow, action: string) {
  return commitWrite(rc, (db) => {
    const now = clock.nowIso();
    const live = lease.released_at == null && lease.expires_at > now;
    if (live) releaseLease(db, lease.lease_id, now);
    return {
      status: 200,
      data: { ...view(getLease(db, lease.lease_id)!), released: true, already_released: !live },
      audit: {
        action,
        resourceType: "lease",
        resourceId: lease.lease_id,
        detail: { holder_id: lease.holder_id, was_live: live },
      },
    };
  });
}

export const leaseRoutes = [
  orgRoute({
    method: "POST",
    path: "/v1/leases",
    scope: "leases:write",
    body: leaseBody,
    response: { 201: leaseAcquireResponse, 200: leaseAcquireResponse },
    summary: "Acquire or renew a lease; a live lease of another principal is 409.",
    operationId: "acquireLease",
    tag: "Coordination",
    description:
      "Takes an exclusive lease on a resource for `ttl_seconds`, or renews the caller's own. A live lease held by " +
      "another principal is 409 `CONFLICT`.",
    handler: (rc) =>
      commitWrite(rc, (db) => {
        const now = clock.nowIso();
        const expiresAt = isoAt(clock.nowMs() + rc.body.ttl_seconds * 1000);
        const current = unreleasedLease(db, rc.body.resource_type, rc.body.resource_id);
        let row: LeaseRow;
        let renewed = false;
        if (current && current.expires_at > now) {
          if (current.holder_id !== rc.caller.principalId)
            throw conflict("The resource is leased by another principal.");
          renewLease(db, current.lease_id, expiresAt, rc.body.ttl_seconds);
          row = { ...current, expires_at: expiresAt, ttl_seconds: rc.body.ttl_seconds };
          renewed = true;
        } else {
          if (current) endLeaseAtExpiry(db, current.lease_id);
          row = {
            lease_id: newId(ID_PREFIX.lease),
            resource_type: rc.body.resource_type,
            resource_id: rc.body.resource_id,
            holder_id: rc.caller.principalId,
            ttl_seconds: rc.body.ttl_seconds,
            acquired_at: now,
            expires_at: expiresAt,
            released_at: null,
          };
          insertLease(db, row);
        }
        rc.jobDue(expirySweepJob.name, Date.parse(expiresAt));
        return {
          status: renewed ? 200 : 201,
          data: { ...view(row), renewed },
          events: [
            {
              kind: "lease.acquired",
              resourceType: "lease",
              resourceId: row.lease_id,
              payload: {
                resource_type: row.resource_type,
                resource_id: row.resource_id,
                holder_id: row.holder_id,
                expires_at: row.expires_at,
                renewed,
              },
            },
          ],
          audit: {
            action: renewed ? "lease.renewed" : "lease.acquired",
            resourceType: "lease",
            resourceId: row.lease_id,
          },
        };
      }),
  }),

  orgRoute({
    method: "GET",
    path: "/v1/leases",
    scope: "leases:read",
    query: leaseListQuery,
    response: { 200: leaseListResponse },
    summary: "Unreleased, unexpired leases of the organization, with an opaque cursor.",
    operationId: "listLeases",
    tag: "Coordination",
    description: "Lists the organization's leases that are neither released nor expired, paged with an opaque cursor.",
    handler: ({ db, query }) => {
      // The cursor names the page's last lease (resolved to its place here; released since or not).
      const after = query.after
        ? positionAfter(
            query.after,
            ID_PREFIX.lease,
            (id) => leasePosition(db, id),
            () => {
              throw notFound("Lease");
            },
          )
        : 0;
      const rows = liveLeasesAfter(db, {
        now: clock.nowIso(),
        after,
        resourceType: query.resource_type,
        limit: query.limit + 1,
      });
      const { page, ...more } = pageOf(rows, query.limit, (l) => [l.lease_id]);
      return ok({ leases: page.map(view), ...more });
    },
  }),

  orgRoute({
    method: "DELETE",
    path: "/v1/leases/:id",
    scope: "leases:write",
    response: { 200: leaseReleaseResponse },
    summary: "Release a lease you hold.",
    operationId: "releaseLease",
    tag: "Coordination",
    description: "Releases a lease the caller holds before its TTL runs out.",
    handler: (rc) => {
      const lease = getLease(rc.db, rc.params.id);
      if (!lease) throw notFound("Lease");
      if (lease.holder_id !== rc.caller.principalId)
        throw forbidden("Only the holder may release a lease; an owner or admin may force-release it.");
      return release(rc, lease, "lease.released");
    },
  }),

  orgRoute({
    method: "POST",
    path: "/v1/leases/:id/force-release",
    scope: "leases:write",
    roles: ADMIN_ROLES,
    response: { 200: leaseReleaseResponse },
    summary: "Release any organization-scoped lease (owner or admin).",
    operationId: "forceReleaseLease",
    tag: "Coordination",
    description: "Releases any organization-scoped lease regardless of its holder; owner or admin only.",
    handler: (rc) => {
      const lease = getLease(rc.db, rc.params.id);
      if (!lease) throw notFound("Lease");
      return release(rc, lease, "lease.force_released");
    },
  }),
];
