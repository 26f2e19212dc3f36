// The import structure of src/ (docs/architecture.md "What each folder may import"): no cycle between
// top-level folders, domain folders and the files at the root of src/, and nothing below the domains
// imports a domain. Type imports count: a type is a dependency for a reader and for every tool.
import { describe, expect, it } from "vitest";

declare global {
  /** Vite's compile-time glob import (vitest transforms it; typed here rather than pulling in vite/client). */
  interface ImportMeta {
    glob(pattern: string, opts: { query: string; import: string; eager: true }): Record<string, unknown>;
  }
}

const SOURCES = import.meta.glob("../src/**/*.ts", { query: "?raw", import: "default", eager: true }) as Record<
  string,
  string
>;

/** Folders that stand below the domains: none of their files may import from src/domains. */
const BELOW_DOMAINS = [
  "access",
  "auth",
  "generated",
  "http",
  "index-db",
  "org",
  "registry",
  "sql",
  "text",
  "vector",
  "env.ts",
];

/** Every relative module a source names: import and export ... from, side-effect imports, import("…") types. */
const SPECIFIER =
  /(?:^|[\s;])(?:import|export)\s[^;]*?\sfrom\s*["']([^"']+)["']|(?:^|[\s;])import\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g;

/** The file a relative specifier names, as a path under src/ (extension-less specifiers are .ts modules). */
function resolve(from: string, specifier: string, files: ReadonlySet<string>): string {
  const parts = from.split("/").slice(0, -1);
  for (const seg of specifier.split("/")) {
    if (seg === "..") parts.pop();
    else if (seg !== ".") parts.push(seg);
  }
  const path = parts.join("/");
  return [`${path}.ts`, `${path}/index.ts`].find((candidate) => files.has(candidate)) ?? path;
}

/** The part of the house a file belongs to: a top-level folder, a domain folder, or a root file itself. */
function partOf(file: string): string {
  const [top, second, third] = file.split("/");
  if (second === undefined) return top;
  return top === "domains" && third !== undefined ? `domains/${second}` : top;
}

/** file -> files it imports, for sources keyed by their path under src/ ("org/write.ts"). */
function importGraph(sources: Record<string, string>): Map<string, string[]> {
  const files = new Set(Object.keys(sources));
  const graph = new Map<string, string[]>();
  for (const [file, text] of Object.entries(sources)) {
    // Generated tables hold no imports worth reading (and megabytes of data).
    const specifiers = file.startsWith("generated/")
      ? []
      : [...text.matchAll(SPECIFIER)].map((m) => m[1] ?? m[2] ?? m[3]);
    graph.set(
      file,
      specifiers.filter((s) => s.startsWith(".")).map((s) => resolve(file, s, files)),
    );
  }
  return graph;
}

/**
 * Every cycle between parts (strongly connected parts, each sorted), with the file imports that close it.
 * A part is a folder of the house by default; with `(file) => file` every file is its own part.
 */
function partCycles(
  graph: Map<string, string[]>,
  part: (file: string) => string = partOf,
): { parts: string[]; imports: string[] }[] {
  const edges = new Map<string, Map<string, string[]>>();
  for (const [file, targets] of graph)
    for (const target of targets) {
      const [a, b] = [part(file), part(target)];
      if (a === b) continue;
      const out = edges.get(a) ?? new Map<string, string[]>();
      edges.set(a, out.set(b, [...(out.get(b) ?? []), `${file} -> ${target}`]));
    }
  // Tarjan's strongly connected components over the parts.
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const cycles: { parts: string[]; imports: string[] }[] = [];
  const visit = (v: string) => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    for (const w of edges.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (stack.includes(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const parts: string[] = [];
    let w: string;
    do parts.unshift((w = stack.pop()!));
    while (w !== v);
    if (parts.length < 2) return;
    const imports = parts.flatMap((a) => parts.flatMap((b) => edges.get(a)?.get(b) ?? []));
    cycles.push({ parts: parts.sort(), imports });
  };
  for (const v of [...graph.keys()].map(part)) if (!index.has(v)) visit(v);
  return cycles;
}

/** Imports of src/domains from a part that stands below the domains. */
const domainImportsBelow = (graph: Map<string, string[]>): string[] =>
  [...graph].flatMap(([file, targets]) =>
    BELOW_DOMAINS.includes(partOf(file))
      ? targets.filter((t) => t.startsWith("domains/")).map((t) => `${file} -> ${t}`)
      : [],
  );

const SRC = Object.fromEntries(Object.entries(SOURCES).map(([path, text]) => [path.replace("../src/", ""), text]));

describe("the import structure of src/", () => {
  const graph = importGraph(SRC);

  it("reads the tree it checks", () => {
    expect(graph.get("org/write.ts")).toContain("sql/db.ts");
    expect(graph.get("worker.ts")).toContain("routes.ts");
  });

  it("has no cycle between top-level folders, domain folders and root files", () => {
    expect(partCycles(graph)).toEqual([]);
  });

  it("has no cycle between files, inside a folder or across folders", () => {
    expect(partCycles(graph, (file) => file)).toEqual([]);
  });

  it("lets nothing below the domains import a domain", () => {
    expect(domainImportsBelow(graph)).toEqual([]);
  });

  it("finds a cycle closed by a type import, or through a root file, and a domain import from below", () => {
    const sources = {
      "org/write.ts":
        'import { clock } from "../http/clock";\nimport type { Sender } from "../domains/webhooks/delivery";',
      "http/clock.ts": "export const clock = 1;",
      "domains/webhooks/delivery.ts":
        'import { commitWrite } from "../../org/write";\nexport type Sender = () => void;',
      "domains/memory/routes.ts": 'import { type Reply } from "../../org/request";',
      "org/request.ts": 'export interface Reply { status: import("../routes").Status }',
      "routes.ts": 'export * from "./domains/memory/routes";\nexport type Status = number;',
    };
    const fake = importGraph(sources);
    expect(partCycles(fake)).toEqual([
      {
        parts: ["domains/memory", "domains/webhooks", "org", "routes.ts"],
        imports: expect.arrayContaining([
          "org/write.ts -> domains/webhooks/delivery.ts",
          "domains/webhooks/delivery.ts -> org/write.ts",
          "org/request.ts -> routes.ts",
          "routes.ts -> domains/memory/routes.ts",
          "domains/memory/routes.ts -> org/request.ts",
        ]),
      },
    ]);
    expect(domainImportsBelow(fake)).toEqual(["org/write.ts -> domains/webhooks/delivery.ts"]);
    expect(
      partCycles(
        importGraph({ ...sources, "org/a.ts": 'import "./b";', "org/b.ts": 'import type { A } from "./a";' }),
        (f) => f,
      ),
    ).toContainEqual({ parts: ["org/a.ts", "org/b.ts"], imports: ["org/a.ts -> org/b.ts", "org/b.ts -> org/a.ts"] });
  });
});
