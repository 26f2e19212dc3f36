import { directoryRoutes } from "./directories";
import { grantRoutes } from "./grants";
import { membershipRoutes } from "./memberships";
import { simulateRoutes } from "./simulate";

export const accessRoutes = [...membershipRoutes, ...directoryRoutes, ...grantRoutes, ...simulateRoutes];
