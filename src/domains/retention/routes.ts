// Legal holds, retention and identity mappings (SPEC governance section; DESIGN part 2).
import { retentionRoutes as applyRoutes } from "./apply";
import { holdRoutes } from "./holds";
import { mappingRoutes } from "./mappings";

export const retentionRoutes = [...holdRoutes, ...applyRoutes, ...mappingRoutes];
