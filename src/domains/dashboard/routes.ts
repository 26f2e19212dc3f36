// The twelve dashboard routes of SPEC "Dashboard accounts" (DESIGN "Dashboard accounts, sessions,
// passkeys"), in the route table's order. Which credential stage may call each is declared by its
// `stages` flag and enforced by executeRoute; nothing here emits an event (accounts are not among SPEC's
// eleven kinds), every write audits metadata only.
import { passkeyLoginRoutes, passkeyRoutes } from "./passkeys";
import { passwordRoutes } from "./password";
import { recoveryCodeLoginRoute, replaceRecoveryCodesRoute } from "./recovery-codes";
import { logoutRoute } from "./sessions";

export { dashboardLoginRoute } from "./sessions";

export const dashboardRoutes = [
  ...passwordRoutes,
  ...passkeyRoutes,
  replaceRecoveryCodesRoute,
  ...passkeyLoginRoutes,
  recoveryCodeLoginRoute,
  logoutRoute,
];
