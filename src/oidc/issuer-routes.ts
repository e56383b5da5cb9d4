import { withPublicApiCors } from "../login/cors/cors.js"
import { introspectionRoutes } from "./introspect/http.js"
import { logoutRoutes } from "./logout/http.js"
import { revocationRoutes } from "./revoke/http.js"
import { tokenRoutes } from "./token/http.js"
import { userinfoRoutes } from "./userinfo/http.js"

/**
 * The issuer's token-side endpoints (spec: OIDC / OAuth 2.0): token, userinfo, introspect,
 * revoke, logout. The three a browser client (web_spa) calls with fetch get the Public API's
 * CORS rules (registered Origins only, OPTIONS preflight); introspection is server-to-server
 * and logout a navigation.
 */
export const tokenSideRoutes = [
  ...withPublicApiCors([...tokenRoutes, ...userinfoRoutes, ...revocationRoutes]),
  ...introspectionRoutes,
  ...logoutRoutes,
]
