// The Memory Atlas (POST /v1/memory-views/compile, DESIGN "Memory Atlas") drawn with Cytoscape.js.
// Node types differ by colour and shape, edge types by colour and line style; a table lists the
// same nodes and edges for keyboard and screen-reader use.
import cytoscape from "cytoscape";
import { ApiFailure, api } from "./api";
import { clip, errorBox, field, h, select, table } from "./dom";
import { guarded } from "./auth";
// Types only (erased at build): a node or edge type the route adds without a style here fails tsc.
import type { EdgeType, NodeType } from "../../src/domains/atlas/graph";

const LENSES = [
  "evidence_trace",
  "workspace_graph",
  "review_queue",
  "neighborhood",
  "conflict_freshness",
  "scope_preview",
  "knowledge_release",
];

// Every node and edge type has its own colour (no two legend entries alike); edges add a line style.
export const NODE_STYLE: Record<NodeType, { color: string; shape: cytoscape.Css.NodeShape }> = {
  claim: { color: "#1f6feb", shape: "round-rectangle" },
  observation: { color: "#2da44e", shape: "ellipse" },
  subject: { color: "#bf8700", shape: "diamond" },
  project: { color: "#8250df", shape: "hexagon" },
  context: { color: "#57606a", shape: "rectangle" },
  release: { color: "#cf222e", shape: "star" },
  channel: { color: "#e16f24", shape: "triangle" },
  approval: { color: "#1b7c83", shape: "pentagon" },
  hold: { color: "#24292f", shape: "octagon" },
  proposal: { color: "#bf3989", shape: "vee" },
};
export const EDGE_STYLE: Record<EdgeType, { color: string; line: "solid" | "dashed" | "dotted" }> = {
  supports: { color: "#116329", line: "solid" },
  contradicts: { color: "#ff8182", line: "solid" },
  qualifies: { color: "#d4a72c", line: "dashed" },
  "selected-in": { color: "#afb8c1", line: "dotted" },
  "released-as": { color: "#953800", line: "dashed" },
  about: { color: "#54aeff", line: "dotted" },
  supersedes: { color: "#c297ff", line: "solid" },
  related: { color: "#0a3069", line: "dashed" },
  // The route also joins review-queue claims to their approvals and releases to their channels.
  "submitted-as": { color: "#76e3ea", line: "dotted" },
  "published-in": { color: "#ffb77c", line: "dotted" },
  // A legal hold points at the record it keeps; an observation at the enrichment it proposed.
  holds: { color: "#7d8c00", line: "solid" },
  "proposed-as": { color: "#f5a3d8", line: "dotted" },
};

function legend(): HTMLElement {
  const item = (name: string, color: string, line?: string) => {
    const el = h("span", { class: line ? "edge" : null, "data-color": color }, name);
    el.style.setProperty("--c", color);
    if (line) el.style.setProperty("--line", line);
    return el;
  };
  return h(
    "div",
    { "aria-hidden": "true", id: "atlas-legend" },
    h(
      "div",
      { class: "legend" },
      "Nodes:",
      Object.entries(NODE_STYLE).map(([t, s]) => item(t, s.color)),
    ),
    h(
      "div",
      { class: "legend" },
      "Edges:",
      Object.entries(EDGE_STYLE).map(([t, s]) => item(t, s.color, s.line)),
    ),
  );
}

/**
 * Cytoscape.js measures its container when it starts, so the graph may only be created once the page
 * is in the document: atlasPage returns the first draw's start function for the router to call after
 * mounting (a redraw from the form starts at once, the page being mounted by then).
 */
export async function atlasPage(main: HTMLElement, params: URLSearchParams): Promise<(() => void) | undefined> {
  const out = h("section", { "aria-label": "Atlas result" });
  const form = guarded(
    h(
      "form",
      { "aria-label": "Compile an Atlas view", class: "inline" },
      select("Lens", "lens", LENSES),
      field("Focus claim id (evidence_trace)", "focus_id", { value: params.get("focus_id") ?? "", size: 30 }),
      field("Subject id (neighborhood)", "subject_id", { value: params.get("subject_id") ?? "", size: 20 }),
      field("Workspace id (workspace_graph)", "workspace_id", { value: params.get("workspace_id") ?? "", size: 20 }),
      field("Channel id (knowledge_release)", "channel_id", { value: params.get("channel_id") ?? "", size: 20 }),
      field("Max nodes", "max_nodes", {
        type: "number",
        min: 25,
        max: 300,
        value: params.get("max_nodes") ?? "100",
        size: 4,
      }),
      h("button", { type: "submit" }, "Draw"),
    ),
    async (v) => {
      await draw(out, v);
    },
  );
  (form.elements.namedItem("lens") as HTMLSelectElement).value = params.get("lens") ?? "workspace_graph";
  main.append(h("h1", null, "Memory Atlas"), form, legend(), out);
  return draw(out, Object.fromEntries(new FormData(form).entries()) as Record<string, string>);
}

/** Fetches and lists a view; returns the function that draws its graph (already called when `out` is in the document). */
async function draw(out: HTMLElement, v: Record<string, string>): Promise<(() => void) | undefined> {
  delete (window as any).__atlas;
  const body: Record<string, unknown> = { lens: v.lens, max_nodes: Number(v.max_nodes || 100) };
  if (v.lens === "evidence_trace") body.focus_id = v.focus_id;
  if (v.lens === "neighborhood") body.subject_id = v.subject_id;
  // Each lens takes only its own argument (the route refuses the others with 400).
  if (v.lens === "workspace_graph" && v.workspace_id) body.workspace_id = v.workspace_id;
  if (v.lens === "knowledge_release" && v.channel_id) body.channel_id = v.channel_id;
  let view: any;
  try {
    view = await api("POST", "/v1/memory-views/compile", { body });
  } catch (e) {
    if (e instanceof ApiFailure && e.status === 404 && e.message === "Unknown endpoint.")
      out.replaceChildren(
        h(
          "p",
          { class: "notice", id: "atlas-unavailable", role: "alert" },
          "This server has no Memory Atlas route yet (POST /v1/memory-views/compile answers 404 Unknown endpoint).",
        ),
      );
    else out.replaceChildren(errorBox((e as Error).message));
    return undefined;
  }
  const labelOf = new Map<string, string>(view.nodes.map((n: any) => [n.id, n.label]));
  const graph = h("div", {
    id: "atlas-graph",
    role: "img",
    "aria-label": `Graph of ${view.nodes.length} nodes and ${view.edges.length} edges; the tables below list them.`,
  });
  out.replaceChildren(
    h(
      "p",
      { id: "atlas-summary" },
      `${view.nodes.length} nodes, ${view.edges.length} edges`,
      view.truncated
        ? ` — truncated at max_nodes; withheld ${view.withheld.nodes} nodes, ${view.withheld.edges} edges.`
        : ".",
    ),
    graph,
    h(
      "details",
      null,
      h("summary", null, "Nodes and edges as tables"),
      table(
        ["Node", "Type", "Label", "Status", "Trust", "Kind"],
        view.nodes.map((n: any) => [n.id, n.type, clip(n.label), n.status ?? "", n.trust ?? "", n.kind ?? ""]),
        "Nodes",
      ),
      table(
        ["From", "Edge", "To"],
        view.edges.map((e: any) => [
          clip(labelOf.get(e.source) ?? e.source),
          e.type,
          clip(labelOf.get(e.target) ?? e.target),
        ]),
        "Edges",
      ),
    ),
  );
  const start = () => {
    const cy = cytoscape({
      container: graph,
      elements: [
        ...view.nodes.map((n: any) => ({ data: { id: n.id, type: n.type, label: short(n.label) } })),
        ...view.edges.map((e: any, i: number) => ({
          data: { id: `e${i}`, source: e.source, target: e.target, type: e.type },
        })),
      ],
      style: [
        {
          selector: "node",
          style: {
            label: "data(label)",
            "font-size": 12,
            "text-background-color": "#fff",
            "text-background-opacity": 0.85,
            "text-background-padding": "2px",
            "text-wrap": "ellipsis",
            "text-max-width": "120px",
            "text-valign": "bottom",
            "text-margin-y": 4,
          },
        },
        ...Object.entries(NODE_STYLE).map(([type, s]) => ({
          selector: `node[type = "${type}"]`,
          style: { "background-color": s.color, shape: s.shape },
        })),
        { selector: "edge", style: { width: 2, "curve-style": "bezier", "target-arrow-shape": "triangle" } },
        ...Object.entries(EDGE_STYLE).map(([type, s]) => ({
          selector: `edge[type = "${type}"]`,
          style: { "line-color": s.color, "target-arrow-color": s.color, "line-style": s.line },
        })),
      ] as any,
      layout: layoutFor(view),
    });
    // A small graph is fitted to the box at a zoom that makes labels huge and overlapping: cap it.
    if (cy.zoom() > 1.3) {
      cy.zoom(1.3);
      cy.center();
    }
    // For the browser test: what was drawn, and (after the first frame) that it is on the canvas.
    const count = (items: any[]) =>
      items.reduce((m: Record<string, number>, x: any) => ({ ...m, [x.type]: (m[x.type] ?? 0) + 1 }), {});
    const drawn = {
      lens: view.lens,
      nodes: cy.nodes().length,
      edges: cy.edges().length,
      nodeTypes: count(view.nodes),
      edgeTypes: count(view.edges),
      painted: false,
    };
    cy.one("render", () => {
      drawn.painted = true;
    });
    (window as any).__atlas = drawn;
  };
  if (!graph.isConnected) return start;
  start();
  return undefined;
}

/**
 * An evidence trace reads as layers (sources -> claim -> runs and releases); other views use the
 * force-directed layout, spaced so labels stay apart, and a grid once they are large.
 */
function layoutFor(view: { lens: string; nodes: unknown[] }): cytoscape.LayoutOptions {
  if (view.nodes.length > 60) return { name: "grid", padding: 30 };
  if (view.lens === "evidence_trace") return { name: "breadthfirst", directed: true, padding: 30, spacingFactor: 1.1 };
  return {
    name: "cose",
    animate: false,
    padding: 30,
    nodeRepulsion: () => 1_000_000,
    idealEdgeLength: () => 120,
    componentSpacing: 120,
  };
}

const short = (s: string) => (s && s.length > 40 ? s.slice(0, 39) + "…" : (s ?? ""));
