// THE background job list, beside the route table: the org alarm runs these, in this order, each
// when its own stored due time has come (src/org/jobs.ts). Append new jobs (index drain, enrichment).
import { expirySweepJob } from "./domains/coordination/expiry";
import { searchSnapshotsJob } from "./domains/memory/search";
import { webhookDeliveryJob } from "./domains/webhooks/delivery";
import type { BackgroundJob } from "./org/jobs";
import { recordOwnersJob } from "./org/maintenance";
import { indexDrainJob } from "./domains/indexing/background";

export const BACKGROUND_JOBS: readonly BackgroundJob[] = [
  expirySweepJob,
  recordOwnersJob,
  webhookDeliveryJob,
  searchSnapshotsJob,
  indexDrainJob,
];
