// Governance and released knowledge: policies, claim approvals, channels, releases, channel compile.
import { approvalRoutes } from "./approvals";
import { channelCompileRoutes } from "./channel-compile";
import { channelAdminRoutes } from "./channels";
import { policyRoutes } from "./policies";
import { releaseRoutes } from "./releases";

export const governanceRoutes = [
  ...policyRoutes,
  ...approvalRoutes,
  ...channelAdminRoutes,
  ...releaseRoutes,
  ...channelCompileRoutes,
];
