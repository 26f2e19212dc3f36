import type { D1Migration } from "cloudflare:test";
import type { EdgeEnv } from "../src/env";

declare global {
  namespace Cloudflare {
    interface Env extends EdgeEnv {
      TEST_D1_MIGRATIONS: D1Migration[];
      TEST_D1_MIGRATION_FILES: string[];
    }
  }
}
