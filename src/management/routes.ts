import type { Route } from "../http/route.js"
import { apiKeyRoutes } from "./api-keys/http.js"
import { auditEventRoutes } from "./audit-events/http.js"
import { userRoutes } from "./users/http.js"
import { clientRoutes } from "./clients/http.js"
import { connectionRoutes } from "./connections/http.js"
import { domainRoutes } from "./domains/http.js"
import { environmentRoutes } from "./environments/http.js"
import { projectRoutes } from "./projects/http.js"
import { workspaceRoutes } from "./workspaces/http.js"
import { webhookRoutes } from "../webhooks/http.js"
import { usageRoutes } from "./usage/http.js"
import { userDataJobRoutes } from "./user-data-jobs/http.js"
import { impersonationRoutes } from "./impersonation/http.js"
import { billingRoutes } from "../billing/http.js"
import { bounceRoutes } from "../bounces/http.js"

/** Every Management API route (host MANAGEMENT_HOST, prefix /v1). */
export const managementRoutes = (): ReadonlyArray<Route> => [...workspaceRoutes, ...projectRoutes, ...environmentRoutes, ...apiKeyRoutes, ...clientRoutes, ...connectionRoutes, ...domainRoutes, ...userRoutes, ...auditEventRoutes, ...webhookRoutes, ...usageRoutes, ...userDataJobRoutes, ...impersonationRoutes, ...billingRoutes, ...bounceRoutes]
