import { introspectionRoutes } from "./introspect/http.js"
import { logoutRoutes } from "./logout/http.js"
import { revocationRoutes } from "./revoke/http.js"
import { tokenRoutes } from "./token/http.js"
import { userinfoRoutes } from "./userinfo/http.js"

// The issuer's token-side endpoints (spec: OIDC / OAuth 2.0): token, userinfo, introspect,
// revoke, logout. The route table (src/routes.ts) gives the three a browser client (web_spa)
// calls with fetch the Public API's CORS rules (registered Origins only, OPTIONS preflight);
// introspection is server-to-server and logout a navigation.

/** Token, userinfo, revoke: called by browsers too (client-based CORS). */
export const browserTokenRoutes = [...tokenRoutes, ...userinfoRoutes, ...revocationRoutes]

/** Introspection (server to server) and logout (a navigation): no CORS. */
export const serverTokenRoutes = [...introspectionRoutes, ...logoutRoutes]
