import { originRegisteredInEnvironment } from "./login/clients.js"
import { loginRoutes } from "./login/routes.js"
import { meRoutes } from "./me/routes.js"
import { withMeWriteLimit } from "./me/write-limit.js"
import { hostedLoginPasskeyRoutes } from "./passkeys/hosted-login/http.js"
import { transactionPasskeyRoutes } from "./passkeys/http.js"
import { hostedLoginRoutes } from "./hosted-login/http.js"
import { authorizeRoutes } from "./oidc/authorize/http.js"
import { issuerFailurePage } from "./hosted-login/issuer-failure-page.js"
import { discoveryRoutes } from "./oidc/discovery/http.js"
import { jwksRoutes } from "./oidc/jwks/http.js"
import { browserTokenRoutes, serverTokenRoutes } from "./oidc/issuer-routes.js"
import { apiKeyRoutes } from "./management/api-keys/http.js"
import { auditEventRoutes } from "./management/audit-events/http.js"
import { userRoutes } from "./management/users/http.js"
import { clientRoutes } from "./management/clients/http.js"
import { connectionRoutes } from "./management/connections/http.js"
import { domainRoutes } from "./management/domains/http.js"
import { environmentRoutes } from "./management/environments/http.js"
import { projectRoutes } from "./management/projects/http.js"
import { workspaceRoutes } from "./management/workspaces/http.js"
import { usageRoutes } from "./management/usage/http.js"
import { userDataJobRoutes } from "./management/user-data-jobs/http.js"
import { impersonationRoutes } from "./management/impersonation/http.js"
import { webhookRoutes } from "./webhooks/http.js"
import { billingRoutes } from "./billing/http.js"
import { bounceRoutes } from "./bounces/http.js"
import { meLinkRoutes, socialLoginRoutes } from "./social/http.js"
import { socialPageRoutes } from "./social/page.js"
import { openApiRoutes } from "./openapi/http.js"
import { consoleRoutes } from "./console/routes.js"
import { faviconRoutes } from "./console/home/favicon.js"
import { homeRoutes } from "./console/home/page.js"
import type { AppConfig } from "./platform/config.js"
import type { SurfaceRoutes } from "./http/app.js"
import { withAnyOriginPreflights } from "./http/cors/any-origin.js"
import { withClientCors } from "./http/cors/client-origins.js"
import type { Route } from "./http/route.js"

// The route table: every feature's routes, registered here and handed to the HTTP app
// (src/http/app.ts), which imports no feature. Features never import this file.

/** Every Management API route (host MANAGEMENT_HOST, prefix /v1). */
export const managementRoutes = (): ReadonlyArray<Route> => [
  ...workspaceRoutes,
  ...projectRoutes,
  ...environmentRoutes,
  ...apiKeyRoutes,
  ...clientRoutes,
  ...connectionRoutes,
  ...domainRoutes,
  ...userRoutes,
  ...auditEventRoutes,
  ...webhookRoutes,
  ...usageRoutes,
  ...userDataJobRoutes,
  ...impersonationRoutes,
  ...billingRoutes,
  ...bounceRoutes,
]

/** The Public Authentication API: served under `/v1` on the Interaction Domain and at `{issuer}/v1`. */
export const publicApiRoutes = (): ReadonlyArray<Route> => [
  ...loginRoutes,
  ...transactionPasskeyRoutes,
  ...socialLoginRoutes,
  ...withMeWriteLimit([...meRoutes, ...meLinkRoutes]),
]

/**
 * Client-based CORS (src/http/cors/client-origins.ts): a cross-origin browser call needs an
 * Origin some active client of the Environment registers.
 */
const withPublicApiCors = (routes: ReadonlyArray<Route>) => withClientCors(originRegisteredInEnvironment, routes)

/** The issuer's public documents, discovery and JWKS: readable by any page (src/http/cors/any-origin.ts). */
const publicDocumentRoutes = [...discoveryRoutes, ...jwksRoutes]

const underV1 = (routes: ReadonlyArray<Route>): Array<Route> =>
  routes.map((r) => ({ ...r, path: `/v1${r.path}` as const }))

/** Every route of every surface. Features register their route lists here. */
export const allRoutes = (config: AppConfig): SurfaceRoutes => {
  // CORS wraps the whole Public API in one place, OPTIONS preflights included.
  const publicApi = underV1(withPublicApiCors(publicApiRoutes()))
  const management = managementRoutes()
  const documented = () => [
    { name: "Management", server: `${config.publicScheme}://${config.managementHost}`, routes: management },
    {
      name: "Public",
      server: `${config.publicScheme}://${config.canonicalIssuerHost}/e/{environmentId}`,
      routes: publicApi,
    },
  ]
  return {
    // `/` says what the host is and links the console and the API reference; every host has an icon.
    management: [
      ...management,
      ...openApiRoutes(documented),
      ...consoleRoutes,
      ...homeRoutes("management"),
      ...faviconRoutes,
    ],
    issuer: [
      ...withAnyOriginPreflights(publicDocumentRoutes),
      ...authorizeRoutes,
      ...withPublicApiCors(browserTokenRoutes),
      ...serverTokenRoutes,
      ...publicApi,
    ],
    issuerHost: [...homeRoutes("issuer"), ...faviconRoutes],
    issuerAnyOriginPaths: new Set(publicDocumentRoutes.map((r) => r.path)),
    issuerBrowserPages: { paths: new Set(authorizeRoutes.map((r) => r.path)), render: issuerFailurePage },
    interaction: [
      ...hostedLoginRoutes,
      ...hostedLoginPasskeyRoutes,
      ...socialPageRoutes,
      ...publicApi,
      ...faviconRoutes,
    ],
  }
}
