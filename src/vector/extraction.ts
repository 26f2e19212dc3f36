// Optional extraction: a Workers AI text model proposes candidate claims from an observation. Its
// output only ever becomes enrichment proposals for review (never canonical claims), and the raw
// response never leaves this module.
import { WORKERS_AI_EXTRACTION_MODEL } from "./config";
import { guardBackend } from "./types";

export type ExtractionAi = Pick<Ai, "run">;

export interface ProposedClaim {
  kind: "fact" | "preference" | "decision" | "instruction" | "summary";
  statement: string;
}

export const EXTRACTION_MAX_TOKENS = 256;
const KINDS = new Set(["fact", "preference", "decision", "instruction", "summary"]);

const PROMPT =
  "Extract at most 3 short standalone claims from the user's text. Answer only JSON: " +
  '[{"kind":"fact|preference|decision|instruction|summary","statement":"..."}]. Answer [] when there is none.';

export class WorkersAiExtractor {
  readonly provider = "workers-ai" as const;
  readonly model = WORKERS_AI_EXTRACTION_MODEL;
  constructor(
    private readonly ai: ExtractionAi,
    private readonly maxTokens = EXTRACTION_MAX_TOKENS,
  ) {}

  async propose(text: string): Promise<ProposedClaim[]> {
    const res = await guardBackend("extraction", () =>
      this.ai.run(
        WORKERS_AI_EXTRACTION_MODEL as keyof AiModels,
        {
          messages: [
            { role: "system", content: PROMPT },
            { role: "user", content: text.slice(0, 4000) },
          ],
          max_tokens: this.maxTokens,
        } as never,
      ),
    );
    return parseProposals((res as { response?: unknown })?.response);
  }
}

/** Tolerant parse of the model's answer: anything that is not a well-formed proposal is dropped. */
export function parseProposals(response: unknown): ProposedClaim[] {
  if (typeof response !== "string") return [];
  const start = response.indexOf("["),
    end = response.lastIndexOf("]");
  if (start < 0 || end <= start) return [];
  try {
    const list = JSON.parse(response.slice(start, end + 1));
    if (!Array.isArray(list)) return [];
    return list
      .filter((p) => p && KINDS.has(p.kind) && typeof p.statement === "string" && p.statement.trim())
      .slice(0, 3)
      .map((p) => ({ kind: p.kind, statement: String(p.statement).trim().slice(0, 2000) }));
  } catch {
    return [];
  }
}
