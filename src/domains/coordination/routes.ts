import { checkpointRoutes } from "./checkpoints";
import { handoffRoutes } from "./handoffs";
import { leaseRoutes } from "./leases";

export const coordinationRoutes = [...checkpointRoutes, ...leaseRoutes, ...handoffRoutes];
