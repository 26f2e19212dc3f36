// The in-process benches' synthetic organization: claims written straight through the product's writer,
// 50 per batch 4 ms apart over 20 subjects, team-visible, each with its local vector.
import { insertClaim } from "../src/domains/memory/records";
import type { Db } from "../src/sql/db";
import { embedLocally } from "../src/vector/local-embedder";
import type { VectorIndex, VectorItem } from "../src/vector/types";

export interface SeedClaims {
  db: Db;
  storage: DurableObjectStorage;
  index: Pick<VectorIndex, "upsert">;
  author: string;
  /** The first batch's time (ms). */
  t0: number;
  /** Writes one statement (and may draw more from the same generator after it). */
  statement: () => string;
}

/** Claims `from` to `to` (exclusive), ids `claim_<i as 32 hex digits>`, 1,000 per transaction. */
export async function seedClaims(s: SeedClaims, from: number, to: number): Promise<void> {
  for (let start = from; start < to; start += 1000) {
    const vecs: VectorItem[] = [];
    s.storage.transactionSync(() => {
      for (let i = start; i < Math.min(to, start + 1000); i++) {
        const b = Math.floor(i / 50);
        const at = new Date(s.t0 + b * 4).toISOString();
        const statement = s.statement();
        const claim_id = `claim_${i.toString(16).padStart(32, "0")}`;
        insertClaim(
          s.db,
          {
            claim_id,
            subject_id: `subject-${b % 20}`,
            project_id: null,
            kind: "fact",
            statement,
            status: "active",
            visibility: "team",
            trust: "medium",
            version: 1,
            valid_from: at,
            valid_to: null,
            superseded_by: null,
            disputes: "[]",
            author_id: s.author,
            created_at: at,
            updated_at: at,
          },
          [],
        );
        vecs.push({ id: claim_id, values: embedLocally(statement), metadata: {} });
      }
    });
    await s.index.upsert(vecs);
  }
}
