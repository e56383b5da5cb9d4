import { withPublicApiCors } from "../login/cors/cors.js"
import { loginRoutes } from "../login/routes.js"
import { meRoutes } from "../me/routes.js"
import { withMeWriteLimit } from "../me/write-limit.js"
import { hostedLoginPasskeyRoutes } from "../passkeys/hosted-login/http.js"
import { transactionPasskeyRoutes } from "../passkeys/http.js"
import { hostedLoginRoutes } from "../hosted-login/http.js"
import { authorizeRoutes } from "../oidc/authorize/http.js"
import { discoveryRoutes } from "../oidc/discovery/http.js"
import { jwksRoutes } from "../oidc/jwks/http.js"
import { withPublicDocumentCors } from "../oidc/public-cors.js"
import { tokenSideRoutes } from "../oidc/issuer-routes.js"
import { managementRoutes } from "../management/routes.js"
import { meLinkRoutes, socialLoginRoutes } from "../social/http.js"
import { socialPageRoutes } from "../social/page.js"
import { openApiRoutes } from "../openapi/http.js"
import type { AppConfig } from "../platform/config.js"
import type { Route } from "./route.js"

/** The Public Authentication API: served under `/v1` on the Interaction Domain and at `{issuer}/v1`. */
export const publicApiRoutes = (): ReadonlyArray<Route> => [
  ...loginRoutes, ...transactionPasskeyRoutes, ...socialLoginRoutes, ...withMeWriteLimit([...meRoutes, ...meLinkRoutes]),
]

const underV1 = (routes: ReadonlyArray<Route>): Array<Route> =>
  routes.map((r) => ({ ...r, path: `/v1${r.path}` as const }))

/** Every route of every surface. Features register their route lists here. */
export const allRoutes = (config: AppConfig) => {
  // CORS wraps the whole Public API in one place (src/login/cors), OPTIONS preflights included.
  const publicApi = underV1(withPublicApiCors(publicApiRoutes()))
  const management = managementRoutes()
  const documented = () => [
    { name: "Management", server: `${config.publicScheme}://${config.managementHost}`, routes: management },
    { name: "Public", server: `${config.publicScheme}://${config.canonicalIssuerHost}/e/{environmentId}`, routes: publicApi },
  ]
  return {
    management: [...management, ...openApiRoutes(documented)],
    issuer: [...withPublicDocumentCors([...discoveryRoutes, ...jwksRoutes]), ...authorizeRoutes, ...tokenSideRoutes, ...publicApi],
    interaction: [...hostedLoginRoutes, ...hostedLoginPasskeyRoutes, ...socialPageRoutes, ...publicApi],
  }
}
