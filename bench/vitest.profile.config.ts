// In-process profile of compile and search (bench/inproc-profile.test.ts), kept out of `npm test`:
//   npx vitest run --config bench/vitest.profile.config.ts
// The test suite's config (Workers pool, bindings) with only this file included.
import base from "../vitest.config";

base.test = {
  ...base.test,
  include: ["bench/inproc-profile.test.ts"],
  testTimeout: 3_600_000,
  // PROFILE_SIZES=1000,50000 profiles only those sizes (default 1k, 50k, 200k).
  provide: { profileSizes: process.env.PROFILE_SIZES ? process.env.PROFILE_SIZES.split(",").map(Number) : undefined },
};
export default base;
