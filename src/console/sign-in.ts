import { Clock, Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { isLoopbackAddress } from "../hosted-login/dev-mailbox.js"
import { route } from "../http/route.js"
import { startDashboardSession } from "../management/auth/dashboard.js"
import { Config } from "../platform/config.js"
import { accountForSignIn } from "./accounts.js"
import { exchangeCode, type SignInFailed } from "./id-token.js"
import { newState, signInSecrets } from "./pkce.js"
import { platformEnvironment } from "./platform.js"
import { CONSOLE_PATH, consoleCallbackUrl } from "./urls.js"

/** The cookie that binds a sign-in to the browser that started it; it lives as long as a login transaction. */
const LOGIN_COOKIE = "console_login"
const LOGIN_COOKIE_PATH = `${CONSOLE_PATH}auth`

const redirect = (location: string) =>
  HttpServerResponse.empty({
    status: 302,
    headers: { location, "cache-control": "no-store", "referrer-policy": "no-referrer" },
  })

/** Back to the console with a short error code it explains (the SPA reads `signin_error`). */
const backWithError = (code: string) => redirect(`${CONSOLE_PATH}?signin_error=${encodeURIComponent(code)}`)

/** GET /console/auth/login: Authorization Code + PKCE at the platform Environment, like any application. */
const login = Effect.gen(function* () {
  const config = yield* Config
  const platform = yield* platformEnvironment
  const state = yield* newState
  const { challenge, nonce } = yield* signInSecrets(state)
  const authorize = new URL(`${platform.issuer}/oauth2/authorize`)
  authorize.search = new URLSearchParams({
    response_type: "code",
    client_id: platform.clientId,
    redirect_uri: consoleCallbackUrl(config),
    scope: "openid email",
    state,
    nonce,
    code_challenge: challenge,
    code_challenge_method: "S256",
  }).toString()
  return HttpServerResponse.setCookieUnsafe(redirect(authorize.href), LOGIN_COOKIE, state, {
    httpOnly: true,
    sameSite: "lax",
    secure: config.publicScheme === "https",
    path: LOGIN_COOKIE_PATH,
    maxAge: "600 seconds",
  })
})

const clearLoginCookie = (response: HttpServerResponse.HttpServerResponse, secure: boolean) =>
  HttpServerResponse.setCookieUnsafe(response, LOGIN_COOKIE, "", {
    httpOnly: true,
    sameSite: "lax",
    secure,
    path: LOGIN_COOKIE_PATH,
    maxAge: "0 seconds",
  })

/**
 * GET /console/auth/callback: checks the state against the browser's cookie, exchanges the code,
 * finds the platform user of the verified email and starts a Dashboard session: the
 * `dashboard_session` cookie (HttpOnly, SameSite=Strict, Secure outside development).
 */
const callback = Effect.gen(function* () {
  const config = yield* Config
  const request = yield* HttpServerRequest.HttpServerRequest
  const sql = yield* SqlClient.SqlClient
  const secure = config.publicScheme === "https"
  const url = new URL(request.url, "http://console.invalid")
  const state = url.searchParams.get("state")
  const expected = request.cookies[LOGIN_COOKIE]
  if (state === null || expected === undefined || expected === "" || state !== expected)
    return clearLoginCookie(backWithError("state_mismatch"), secure)
  const error = url.searchParams.get("error")
  if (error !== null) return clearLoginCookie(backWithError(error), secure)
  const code = url.searchParams.get("code")
  if (code === null) return clearLoginCookie(backWithError("invalid_request"), secure)
  const platform = yield* platformEnvironment
  // RFC 9207: an `iss` in the response must be the issuer the request went to.
  const iss = url.searchParams.get("iss")
  if (iss !== null && iss !== platform.issuer) return clearLoginCookie(backWithError("issuer_mismatch"), secure)
  const { verifier, nonce } = yield* signInSecrets(state)
  const user = yield* exchangeCode({
    issuer: platform.issuer,
    clientId: platform.clientId,
    redirectUri: consoleCallbackUrl(config),
    code,
    verifier,
    nonce,
  })
  const peer = request.remoteAddress._tag === "Some" ? request.remoteAddress.value : undefined
  const fromThisMachine =
    isLoopbackAddress(peer) &&
    request.headers["x-forwarded-for"] === undefined &&
    request.headers["forwarded"] === undefined
  const platformUserId = yield* accountForSignIn(user.email, fromThisMachine)
  if (platformUserId === undefined) return clearLoginCookie(backWithError("not_a_platform_user"), secure)
  const session = yield* startDashboardSession(platformUserId)
  yield* sql`insert into console_sessions (dashboard_session_id, environment_id, user_id, login_session_id, created_at)
    values (${session.id}, ${platform.environmentId}, ${user.sub}, ${user.sid ?? null}, ${new Date(yield* Clock.currentTimeMillis)})`.pipe(
    Effect.orDie,
  )
  const maxAge = Math.floor((session.expiresAt.getTime() - session.createdAt.getTime()) / 1000)
  const signedIn = HttpServerResponse.setCookieUnsafe(redirect(CONSOLE_PATH), "dashboard_session", session.token, {
    httpOnly: true,
    sameSite: "strict",
    secure,
    path: "/",
    maxAge: `${maxAge} seconds`,
  })
  return clearLoginCookie(signedIn, secure)
}).pipe(
  Effect.catchTag("SignInFailed", (e: SignInFailed) =>
    Effect.gen(function* () {
      const config = yield* Config
      yield* Effect.logWarning("console sign-in failed", { code: e.code, detail: e.detail })
      return clearLoginCookie(backWithError(e.code), config.publicScheme === "https")
    }),
  ),
)

export const signInRoutes = [
  route("GET", `${CONSOLE_PATH}auth/login`, login),
  route("GET", `${CONSOLE_PATH}auth/callback`, callback),
]
