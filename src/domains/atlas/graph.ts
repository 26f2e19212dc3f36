// The Atlas's graph under construction. Every node offered here has already been authorized by the
// caller's lens (retrievable / canRetrieve / readableRun): the graph only decides what fits in
// max_nodes and which edges survive. An edge is kept when both ends are in the view; an edge between
// authorized candidates of which one did not fit is counted as withheld; any other edge is dropped
// silently (it would name something the caller cannot see).

export const NODE_TYPES = [
  "claim",
  "observation",
  "subject",
  "project",
  "context",
  "release",
  "channel",
  "approval",
  "hold",
  "proposal",
] as const;
export type NodeType = (typeof NODE_TYPES)[number];
export const EDGE_TYPES = [
  "supports",
  "contradicts",
  "qualifies",
  "selected-in",
  "released-as",
  "about",
  "related",
  "supersedes",
  "submitted-as",
  "published-in",
  "holds",
  "proposed-as",
] as const;
export type EdgeType = (typeof EDGE_TYPES)[number];

export interface AtlasNode {
  id: string;
  type: NodeType;
  label: string;
  status?: string;
  trust?: string;
  kind?: string;
}

export interface AtlasEdge {
  source: string;
  target: string;
  type: EdgeType;
}

export type Bucket = "0" | "1-9" | "10-99" | "100+";

/** Counts leave the Atlas only as these buckets. */
export const bucket = (n: number): Bucket => (n <= 0 ? "0" : n < 10 ? "1-9" : n < 100 ? "10-99" : "100+");

/** A fetch that asks for this many more than fit can tell every bucket apart (100+ needs 100 over). */
export const fetchCap = (maxNodes: number) => maxNodes + 100;

export const subjectNodeId = (subjectId: string) => `subject:${subjectId}`;

const LABEL_MAX = 160;
export const labelOf = (text: string | null | undefined, fallback: string) => {
  const t = (text ?? "").replace(/\s+/g, " ").trim();
  if (!t) return fallback;
  return t.length > LABEL_MAX ? `${t.slice(0, LABEL_MAX - 1)}…` : t;
};

export class AtlasGraph {
  private readonly nodes = new Map<string, AtlasNode>();
  private readonly candidates = new Set<string>();
  private readonly edges = new Map<string, AtlasEdge>();
  private readonly withheldEdges = new Set<string>();
  private nodesLeftOut = 0;
  /** Set by a lens when its bounded fetch itself stopped short of everything authorized. */
  moreExisted = false;

  /** `sees` says which node types the caller may see at all; a node of another type is never a candidate. */
  constructor(
    readonly maxNodes: number,
    readonly sees: (type: NodeType) => boolean = () => true,
  ) {}

  has(id: string) {
    return this.nodes.has(id);
  }
  /** The ids of the nodes in the view, of the given types. */
  idsOf(...types: NodeType[]) {
    return [...this.nodes.values()].filter((n) => types.includes(n.type)).map((n) => n.id);
  }
  get size() {
    return this.nodes.size;
  }
  get full() {
    return this.nodes.size >= this.maxNodes;
  }

  /** Offer an authorized node: kept while there is room, otherwise counted as withheld. */
  add(node: AtlasNode): boolean {
    if (!this.sees(node.type)) return false;
    if (this.nodes.has(node.id)) return true;
    if (this.candidates.has(node.id)) return false;
    this.candidates.add(node.id);
    if (this.nodes.size >= this.maxNodes) {
      this.nodesLeftOut++;
      return false;
    }
    this.nodes.set(node.id, node);
    return true;
  }

  /** Offer an edge between two nodes offered before. */
  edge(source: string, target: string, type: EdgeType) {
    if (source === target) return;
    const key = `${source}\u0000${target}\u0000${type}`;
    if (this.nodes.has(source) && this.nodes.has(target)) this.edges.set(key, { source, target, type });
    else if (
      (this.nodes.has(source) || this.candidates.has(source)) &&
      (this.nodes.has(target) || this.candidates.has(target))
    )
      this.withheldEdges.add(key);
  }

  view(lens: string, focus?: string) {
    const withheldNodes = this.nodesLeftOut + (this.moreExisted ? 100 : 0);
    return {
      lens,
      ...(focus !== undefined ? { focus } : {}),
      nodes: [...this.nodes.values()],
      edges: [...this.edges.values()],
      truncated: withheldNodes > 0 || this.withheldEdges.size > 0,
      withheld: { nodes: bucket(withheldNodes), edges: bucket(this.withheldEdges.size) },
    };
  }
}
