// Record visibility values (DESIGN): private (the writer, and explicit grants) and team (every
// principal of the organization holding the read scope). The rule itself is in ./policy.ts.
import { z } from "zod";

export const VISIBILITIES = ["private", "team"] as const;
export type Visibility = (typeof VISIBILITIES)[number];
export const DEFAULT_VISIBILITY: Visibility = "team";
export const visibilitySchema = z.enum(VISIBILITIES);
