// Path matching over the route table. itty-router matches the path pattern; the table decides the
// method, so a known path with the wrong method is a 405 listing the methods the table allows.
import { IttyRouter } from "itty-router";
import type { RouteDef } from "./route";

export type Match =
  | { kind: "route"; route: RouteDef; params: Record<string, string> }
  | { kind: "method_not_allowed"; allowed: string[] }
  | { kind: "unknown" };

export function buildMatcher(routes: readonly RouteDef[]) {
  const byPath = new Map<string, RouteDef[]>();
  for (const r of routes) byPath.set(r.path, [...(byPath.get(r.path) ?? []), r]);
  const router = IttyRouter();
  // Literal segments win over parameters: /v1/webhooks/deliver before /v1/webhooks/:id.
  const specificity = (path: string) => path.split("/").map((seg) => (seg.startsWith(":") ? "1" : "0")).join("");
  const paths = [...byPath.keys()].sort((a, b) => (specificity(a) < specificity(b) ? -1 : specificity(a) > specificity(b) ? 1 : 0));
  for (const path of paths)
    router.all(path, (req) => ({ path, params: { ...(req.params as Record<string, string>) } }));

  // Paths without parameters resolve from a map (the hot routes are literal); the rest go to itty.
  const literal = new Map([...byPath.keys()].filter((p) => !p.includes(":")).map((p) => [p, p]));

  return async function match(request: Request, url: URL): Promise<Match> {
    const exact = literal.get(url.pathname);
    const hit = exact !== undefined
      ? { path: exact, params: {} }
      : ((await router.fetch(request)) as { path: string; params: Record<string, string> } | undefined);
    if (!hit) return { kind: "unknown" };
    const candidates = byPath.get(hit.path)!;
    const route = candidates.find((r) => r.method === request.method);
    if (!route) return { kind: "method_not_allowed", allowed: candidates.map((r) => r.method) };
    return { kind: "route", route, params: hit.params };
  };
}
