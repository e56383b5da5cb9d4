/**
 * @authservice/hono: sign-in (OIDC Authorization Code + PKCE through openid-client), sealed
 * cookie sessions and bearer-token verification for Hono apps (spec: Web-framework adapter
 * helpers). Depends only on hono, openid-client, jose and node built-ins.
 */
export { type Auth, type AuthOptions, createAuth } from "./auth.js"
export { bearerTokenMiddleware, type BearerTokenOptions } from "./bearer.js"
export { IssuerUnavailableError } from "./errors.js"
export { authMiddleware, requireSession, type RequireSessionOptions } from "./middleware.js"
export { PROBLEM_TYPE_BASE } from "./problem.js"
export { mountAuthRoutes, type MountAuthRoutesOptions } from "./routes.js"
export type {
  AccessTokenActor,
  AccessTokenClaims,
  AuthSession,
  AuthUser,
  AuthVariables,
  BearerVariables,
  SessionVariables,
} from "./types.js"
