// THE route table: every route of the service, in one list. Routing, the 405 allow-list, scope and
// role checks, validation and docs/API.md are derived from it. Anything absent does not exist.
import { healthRoutes } from "./domains/health/routes";
import { identityRoutes } from "./domains/identity/routes";
import { eventRoutes } from "./domains/events/routes";
import { memoryRoutes } from "./domains/memory/routes";
import { coordinationRoutes } from "./domains/coordination/routes";
import { webhookRoutes } from "./domains/webhooks/routes";
import { mcpRoutes } from "./mcp/routes";
import { accessRoutes } from "./domains/access/routes";
import { portabilityRoutes } from "./domains/portability/routes";
import { auditRoutes } from "./domains/audit/routes";
import { dashboardLoginRoute, dashboardRoutes } from "./domains/dashboard/routes";
import { governanceRoutes } from "./domains/governance/routes";
import { federationRoutes } from "./domains/federation/routes";
import { retentionRoutes } from "./domains/retention/routes";
import { atlasRoutes } from "./domains/atlas/routes";
import { modelRoutes } from "./domains/models/routes";
import { indexingRoutes } from "./domains/indexing/routes";
import { type OrgRoute, type RouteDef, routeId } from "./org/route";

export const ROUTES: readonly RouteDef[] = [
  ...healthRoutes,
  ...memoryRoutes,
  ...coordinationRoutes,
  ...identityRoutes,
  ...eventRoutes,
  ...webhookRoutes,
  ...accessRoutes,
  ...mcpRoutes,
  ...portabilityRoutes,
  ...auditRoutes,
  dashboardLoginRoute,
  ...dashboardRoutes,
  ...governanceRoutes,
  ...federationRoutes,
  ...retentionRoutes,
  ...atlasRoutes,
  ...modelRoutes,
  ...indexingRoutes,
];

export const ORG_ROUTES = new Map<string, OrgRoute>(
  ROUTES.filter((r): r is OrgRoute => r.auth === "key").map((r) => [routeId(r), r]),
);
