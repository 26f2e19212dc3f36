import { z } from "zod";

export const PROBE_TEXT_MAX = 2000;

export const probeBody = z.strictObject({
  kind: z.enum(["embedding", "extraction"], { error: 'must be one of "embedding", "extraction"' }),
  text: z.string().min(1, "must not be empty").max(PROBE_TEXT_MAX, `must be at most ${PROBE_TEXT_MAX} characters`),
});
