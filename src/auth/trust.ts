// Trust levels, ascending (DESIGN): low < medium < high < verified.
import { z } from "zod";

export const TRUST_LEVELS = ["low", "medium", "high", "verified"] as const;
export type Trust = (typeof TRUST_LEVELS)[number];
export const trustSchema = z.enum(TRUST_LEVELS);

export const DEFAULT_OBSERVATION_TRUST: Trust = "medium";
export const DEFAULT_KEY_CEILING: Trust = "high";

export const trustRank = (t: Trust): number => TRUST_LEVELS.indexOf(t);
export const trustAtMost = (t: Trust, ceiling: Trust): boolean => trustRank(t) <= trustRank(ceiling);
export const lowerTrust = (a: Trust, b: Trust): Trust => (trustRank(a) <= trustRank(b) ? a : b);
