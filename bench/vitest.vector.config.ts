// In-process microbench of the local vector index's query (bench/vector-query.test.ts), kept out of
// `npm test`:   npx vitest run --config bench/vitest.vector.config.ts
// The test suite's config (Workers pool, bindings) with only this file included.
import base from "../vitest.config";

base.test = { ...base.test, include: ["bench/vector-query.test.ts"], testTimeout: 3_600_000 };
export default base;
