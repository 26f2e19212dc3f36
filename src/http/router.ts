// Path matching over the route table. itty-router matches the path pattern; the table decides the
// method, so a known path with the wrong method is a 405 listing the methods the table allows.
// An `:id` segment matches only its record's id form (DESIGN's id table: prefix + 32 lowercase hex),
// so `/v1/observations/batch` is an unknown path (404), not a wrong method on `/v1/observations/:id`.
import { IttyRouter } from "itty-router";
import { ID_PREFIX, isId } from "./ids";

/** What the matcher reads of a route-table entry (src/org/route.ts RouteDef). */
export interface Routed {
  method: string;
  path: string;
}

export type Match<R extends Routed> =
  | { kind: "route"; route: R; params: Record<string, string> }
  | { kind: "method_not_allowed"; allowed: string[] }
  | { kind: "unknown" };

const idOf = (prefix: string) => (value: string) => isId(prefix, value);

/**
 * What an `:id` segment accepts, by the collection segment before it. A route with an `:id` after
 * any other segment fails at startup (and in every test), so each new collection declares its form here.
 */
export const ID_FORMS: Readonly<Record<string, (value: string) => boolean>> = {
  observations: idOf(ID_PREFIX.observation),
  claims: idOf(ID_PREFIX.claim),
  context: idOf(ID_PREFIX.context),
  checkpoints: idOf(ID_PREFIX.checkpoint),
  keys: idOf(ID_PREFIX.key),
  grants: idOf(ID_PREFIX.grant),
  memberships: idOf(ID_PREFIX.membership),
  leases: idOf(ID_PREFIX.lease),
  handoffs: idOf(ID_PREFIX.handoff),
  webhooks: idOf(ID_PREFIX.webhook),
  deliveries: idOf(ID_PREFIX.delivery),
  events: idOf(ID_PREFIX.event),
  workspaces: idOf(ID_PREFIX.workspace),
  "dashboard-sessions": idOf(ID_PREFIX.session),
  passkeys: idOf(ID_PREFIX.passkey),
  policies: idOf(ID_PREFIX.policy),
  "claim-approvals": idOf(ID_PREFIX.approval),
  channels: idOf(ID_PREFIX.channel),
  "knowledge-releases": idOf(ID_PREFIX.release),
  "legal-holds": idOf(ID_PREFIX.hold),
  "identity-mappings": idOf(ID_PREFIX.mapping),
  peers: idOf(ID_PREFIX.peer),
  "operator-accounts": idOf(ID_PREFIX.account),
  // "~" names unscoped memory (records with no project).
  projects: (v) => v === "~" || isId(ID_PREFIX.project, v),
  // Subject ids are caller-chosen strings.
  subjects: (v) => v.length > 0,
};

/** For one path pattern: each parameter's name and the id form it must have. */
function paramForms(path: string): [string, (value: string) => boolean][] {
  const segments = path.split("/");
  return segments.flatMap((seg, i) => {
    if (!seg.startsWith(":")) return [];
    const form = ID_FORMS[segments[i - 1] ?? ""];
    if (!form)
      throw new Error(
        `Route ${path}: declare the id form of "${segments[i - 1]}/${seg}" in ID_FORMS (src/http/router.ts).`,
      );
    return [[seg.slice(1), form] as [string, (value: string) => boolean]];
  });
}

export function buildMatcher<R extends Routed>(routes: readonly R[]) {
  const byPath = new Map<string, R[]>();
  for (const r of routes) byPath.set(r.path, [...(byPath.get(r.path) ?? []), r]);
  const forms = new Map([...byPath.keys()].map((p) => [p, paramForms(p)]));
  const router = IttyRouter();
  // Literal segments win over parameters: /v1/webhooks/deliver before /v1/webhooks/:id.
  const specificity = (path: string) =>
    path
      .split("/")
      .map((seg) => (seg.startsWith(":") ? "1" : "0"))
      .join("");
  const paths = [...byPath.keys()].sort((a, b) =>
    specificity(a) < specificity(b) ? -1 : specificity(a) > specificity(b) ? 1 : 0,
  );
  for (const path of paths)
    router.all(path, (req) => {
      const params = { ...(req.params as Record<string, string>) };
      // Returning nothing lets the next pattern try; none left means an unknown path.
      return forms.get(path)!.every(([name, ok]) => ok(params[name] ?? "")) ? { path, params } : undefined;
    });

  // Paths without parameters resolve from a map (the hot routes are literal); the rest go to itty.
  const literal = new Map([...byPath.keys()].filter((p) => !p.includes(":")).map((p) => [p, p]));

  return async function match(request: Request, url: URL): Promise<Match<R>> {
    const exact = literal.get(url.pathname);
    const hit =
      exact !== undefined
        ? { path: exact, params: {} }
        : ((await router.fetch(request)) as { path: string; params: Record<string, string> } | undefined);
    if (!hit) return { kind: "unknown" };
    const candidates = byPath.get(hit.path)!;
    const route = candidates.find((r) => r.method === request.method);
    if (!route) return { kind: "method_not_allowed", allowed: candidates.map((r) => r.method) };
    return { kind: "route", route, params: hit.params };
  };
}
