import type { Route } from "../http/route.js"
import { meEmailChangeRoutes } from "./email-change/http.js"
import { meIdentityRoutes } from "./identities/http.js"
import { mePasskeyRoutes } from "./passkeys/http.js"
import { meProfileRoutes } from "./profile/http.js"
import { meSessionRoutes } from "./sessions/http.js"

/**
 * The self-service `/me` routes (paths without `/v1`), served like the rest of the Public
 * Authentication API on the Interaction Domain and at `{issuer}/v1`. Each route is wrapped in
 * `withMe` (./auth.ts); later /me capabilities add their lists here.
 */
export const meRoutes: ReadonlyArray<Route> = [
  ...meProfileRoutes,
  ...meEmailChangeRoutes,
  ...meIdentityRoutes,
  ...mePasskeyRoutes,
  ...meSessionRoutes,
]
