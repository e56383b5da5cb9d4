import { introspectionRoutes } from "./introspect/http.js"
import { logoutRoutes } from "./logout/http.js"
import { revocationRoutes } from "./revoke/http.js"
import { tokenRoutes } from "./token/http.js"
import { userinfoRoutes } from "./userinfo/http.js"

/** The issuer's token-side endpoints (spec: OIDC / OAuth 2.0): token, userinfo, introspect, revoke, logout. */
export const tokenSideRoutes = [...tokenRoutes, ...userinfoRoutes, ...introspectionRoutes, ...revocationRoutes, ...logoutRoutes]
