import { claimRoutes } from "./claims";
import { contextRoutes } from "./context";
import { observationRoutes } from "./observations";

export const memoryRoutes = [...observationRoutes, ...claimRoutes, ...contextRoutes];
