/**
 * The admin API (`/admin/*`, docs/admin_api.md): the handlers it gives the server, which binds them to the
 * endpoint table (`lib/http/endpoints.ts`). The rest of this folder is the admin API's own: token changes and
 * their audit, explain, the request log and the operations routes (targets, reload, usage, config, metrics).
 *
 * @module
 */
export { handleAlerts } from "./alerts.ts";
export { handleAudit } from "./audit.ts";
export { handleExplain } from "./explain.ts";
export { handleConfig, handleMetrics, handleReload, handleTargets, handleUsage } from "./operations.ts";
export { handleRequests } from "./requests.ts";
export { handleTeam, handleTeams } from "./team_changes.ts";
export { handleToken, handleTokenRotate, handleTokens } from "./tokens.ts";
