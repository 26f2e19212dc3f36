// POST /v1/memory-views/compile: the Memory Atlas (SPEC "Memory Atlas", DESIGN part 2). Read-only.
import { orgRoute } from "../../org/route";
import { ok } from "../../org/request";
import { compileView } from "./lenses";
import { atlasBody, atlasResponse } from "./schema";

export const atlasRoutes = [
  orgRoute({
    method: "POST",
    path: "/v1/memory-views/compile",
    scope: "views:compile",
    body: atlasBody,
    readOnly: true,
    response: { 200: atlasResponse },
    summary: "Compile an authorized, bounded graph view of memory through one of seven lenses.",
    operationId: "compileMemoryView",
    tag: "Atlas",
    description:
      "Compiles a bounded graph of memory through one of seven lenses (evidence trace, neighborhood, workspace graph " +
      "…). Authorization runs before traversal: hidden records contribute no node, edge or count, and an unauthorized " +
      "focus is 404.",
    handler: ({ db, caller, body }) => ok(compileView(db, caller, body)),
  }),
];
