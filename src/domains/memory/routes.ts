import { claimRoutes } from "./claims";
import { contextRoutes } from "./context";
import { exportRoutes } from "./export";
import { observationRoutes } from "./observations";

export const memoryRoutes = [...observationRoutes, ...claimRoutes, ...contextRoutes, ...exportRoutes];
