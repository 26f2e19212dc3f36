import { z } from "zod";
import { scopesSchema } from "../../auth/scopes";
import { trustSchema } from "../../auth/trust";
import { limitParam, nonEmpty } from "../../http/validate";

export const mintKeyBody = z.strictObject({
  label: nonEmpty(200),
  scopes: scopesSchema,
  max_trust: trustSchema.optional(),
  principal_id: z.string().max(64).optional(),
});

export const listQuery = z.object({
  limit: limitParam(1, 200, 50),
  after: z.string().max(512).optional(),
});
