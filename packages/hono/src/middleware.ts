import type { Context, MiddlewareHandler } from "hono"
import type { Auth } from "./auth.js"
import { keepCookies } from "./cookies.js"
import { isIssuerUnavailable } from "./errors.js"
import { safeReturnTo } from "./origin.js"
import { problem, temporarilyUnavailable } from "./problem.js"
import { resolveSession } from "./resolve.js"
import { publicView, type StoredSession } from "./session.js"
import type { AuthVariables, SessionVariables } from "./types.js"

export interface RequireSessionOptions {
  /** `json` (default): 401 problem JSON. `redirect`: 302 to `{basePath}/login`, back here afterwards. */
  readonly onUnauthenticated?: "json" | "redirect"
}

/** Sets the session's variables; authMiddleware's context (AuthVariables) takes them too. */
const setVariables = (c: Pick<Context<{ Variables: SessionVariables }>, "set">, session: StoredSession) => {
  c.set("authSession", publicView(session))
  c.set("authUser", session.user)
  c.set("accessToken", session.at)
}

/** The login route with the current path as `returnTo` (same-origin path only: see origin.ts). */
const loginRedirect = (c: Context, auth: Auth) => {
  const url = new URL(c.req.url)
  const returnTo = safeReturnTo(`${url.pathname}${url.search}`, auth.appOrigin)
  return c.redirect(`${auth.basePath}/login?${new URLSearchParams({ returnTo })}`, 302)
}

/**
 * Protects a route (spec: requireSession). On success sets `authSession`, `authUser` and
 * `accessToken`. Unauthenticated: 401 problem JSON (`code: "unauthorized"`) or a 302 to the
 * login route. A temporary refresh failure is 503 and never a redirect: sending a signed-in
 * user to the sign-in page because the issuer blinked would lose their work for nothing.
 */
export const requireSession = (
  auth: Auth,
  options: RequireSessionOptions = {},
): MiddlewareHandler<{ Variables: SessionVariables }> => {
  const mode = options.onUnauthenticated ?? "json"
  if (mode !== "json" && mode !== "redirect")
    throw new TypeError(`requireSession: onUnauthenticated must be "json" or "redirect"`)
  return async (c, next) => {
    let session: StoredSession | undefined
    try {
      session = await resolveSession(c, auth)
    } catch (e) {
      if (isIssuerUnavailable(e)) return temporarilyUnavailable(c)
      throw e
    }
    if (session === undefined) {
      if (mode === "redirect") return loginRedirect(c, auth)
      return problem(c, "unauthorized", { detail: "Sign in to continue." })
    }
    setVariables(c, session)
    await next()
    keepCookies(c)
  }
}

/**
 * Never blocks (spec: authMiddleware): sets the same variables when the session is valid,
 * leaves them undefined otherwise, including while the issuer is unreachable.
 */
export const authMiddleware =
  (auth: Auth): MiddlewareHandler<{ Variables: AuthVariables }> =>
  async (c, next) => {
    try {
      const session = await resolveSession(c, auth)
      if (session !== undefined) setVariables(c, session)
    } catch (e) {
      if (!isIssuerUnavailable(e)) throw e
    }
    await next()
    keepCookies(c)
  }
