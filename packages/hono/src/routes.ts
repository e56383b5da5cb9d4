import { randomBytes } from "node:crypto"
import type { Context, Env, Hono, Schema } from "hono"
import * as oidc from "openid-client"
import type { Auth } from "./auth.js"
import { clearCookie, readCookie, writeCookie } from "./cookies.js"
import { isAcceptableLogoutGet, isSameOriginPost } from "./csrf.js"
import { isIssuerUnavailable } from "./errors.js"
import { safeReturnTo } from "./origin.js"
import { problem, temporarilyUnavailable } from "./problem.js"
import { tokenEndpointRefusal } from "./refusal.js"
import { clearSession, readSession, sessionFromTokens, writeSession } from "./session.js"

export interface MountAuthRoutesOptions {
  /** Must equal the auth object's basePath (requireSession redirects there). Default: that basePath. */
  readonly basePath?: string
}

/** The login transaction lives 10 minutes, as long as the service's own login transaction. */
const LOGIN_TTL_SECONDS = 600
const LOGIN_PURPOSE = "login"

interface LoginTransaction {
  readonly state: string
  readonly nonce: string
  readonly verifier: string
  readonly returnTo: string
}

const isLoginTransaction = (v: Record<string, unknown>): v is Record<string, unknown> & LoginTransaction =>
  typeof v["state"] === "string" &&
  typeof v["nonce"] === "string" &&
  typeof v["verifier"] === "string" &&
  typeof v["returnTo"] === "string"

/** A same-origin path, and never one of the auth routes themselves (returning to /auth/login would loop). */
const returnPath = (auth: Auth, value: string | undefined) => {
  const path = safeReturnTo(value, auth.appOrigin)
  return path === auth.basePath || path.startsWith(`${auth.basePath}/`) || path.startsWith(`${auth.basePath}?`)
    ? "/"
    : path
}

/** The issuer's configuration, or undefined when discovery failed (the route answers 503). */
const discovered = async (auth: Auth): Promise<oidc.Configuration | undefined> => {
  try {
    return await auth.configuration()
  } catch (e) {
    if (isIssuerUnavailable(e)) return undefined
    throw e
  }
}

const noStore = (c: Context) => c.header("Cache-Control", "no-store")

/**
 * GET/POST {basePath}/login: a new login transaction (state, nonce, PKCE S256 verifier and
 * the return-to path) sealed in its own short-lived cookie, then the authorization request.
 */
const login = (auth: Auth) => async (c: Context) => {
  const isPost = c.req.method === "POST"
  if (isPost && !isSameOriginPost(c, auth.appOrigin))
    return problem(c, "csrf_rejected", { detail: "Sign-in must be posted from this site." })
  let returnTo = c.req.query("returnTo")
  if (isPost) {
    const type = c.req.header("content-type") ?? ""
    if (type.startsWith("application/x-www-form-urlencoded") || type.startsWith("multipart/form-data")) {
      const field = (await c.req.parseBody())["returnTo"]
      if (typeof field === "string") returnTo = field
    }
  }
  const config = await discovered(auth)
  if (config === undefined) return temporarilyUnavailable(c)
  const transaction: LoginTransaction = {
    state: oidc.randomState(),
    nonce: oidc.randomNonce(),
    verifier: oidc.randomPKCECodeVerifier(),
    returnTo: returnPath(auth, returnTo),
  }
  const sealed = auth.sealer.seal(LOGIN_PURPOSE, transaction, auth.now() + LOGIN_TTL_SECONDS * 1000)
  writeCookie(c, auth.cookies.login, sealed, auth.cookies.attributes, LOGIN_TTL_SECONDS)
  const url = oidc.buildAuthorizationUrl(config, {
    redirect_uri: auth.redirectUri,
    scope: auth.scope,
    state: transaction.state,
    nonce: transaction.nonce,
    code_challenge: await oidc.calculatePKCECodeChallenge(transaction.verifier),
    code_challenge_method: "S256",
  })
  noStore(c)
  // 303 after POST (RFC 9110 15.4.4): the browser follows with a GET.
  return c.redirect(url.href, isPost ? 303 : 302)
}

/**
 * GET {basePath}/callback: the transaction cookie is one-shot (removed whatever happens);
 * state is compared first so a forged callback costs no token request; openid-client then
 * checks the response, exchanges the code with the PKCE verifier and validates the ID token
 * (signature, iss, aud, exp, nonce). A new session id each sign-in (no session fixation).
 */
const callback = (auth: Auth) => async (c: Context) => {
  noStore(c)
  const sealed = readCookie(c, auth.cookies.login)
  clearCookie(c, auth.cookies.login, auth.cookies.attributes)
  const opened = sealed === undefined ? undefined : auth.sealer.open(LOGIN_PURPOSE, sealed, auth.now())
  if (opened === undefined || !isLoginTransaction(opened)) {
    return problem(c, "login_transaction_missing", { detail: "Start the sign-in again from this site." })
  }
  const search = new URL(c.req.url).search
  if (new URLSearchParams(search).get("state") !== opened.state) return problem(c, "invalid_state")
  // The redirect URI from configuration with the response's query: never the request's Host.
  const currentUrl = new URL(auth.redirectUri)
  currentUrl.search = search
  const config = await discovered(auth)
  if (config === undefined) return temporarilyUnavailable(c)
  let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>
  try {
    tokens = await oidc.authorizationCodeGrant(config, currentUrl, {
      pkceCodeVerifier: opened.verifier,
      expectedState: opened.state,
      expectedNonce: opened.nonce,
      idTokenExpected: true,
    })
  } catch (e) {
    if (e instanceof oidc.AuthorizationResponseError) return problem(c, "login_failed", { detail: e.error })
    const refused = await tokenEndpointRefusal(e)
    if (refused !== undefined) return problem(c, "login_failed", { detail: refused })
    if (
      e instanceof oidc.ClientError &&
      e.code !== undefined &&
      !/^OAUTH_RESPONSE_IS_NOT_(JSON|CONFORM)$/.test(e.code)
    ) {
      // a response that fails validation (ID token signature, nonce, ...) is a refusal, not an outage
      return problem(c, "login_failed", { detail: e.message })
    }
    return temporarilyUnavailable(c)
  }
  const session = sessionFromTokens(tokens, auth.now(), {
    sid: randomBytes(16).toString("base64url"),
    requestedScope: auth.scope,
  })
  writeSession(c, auth, session)
  return c.redirect(opened.returnTo, 302)
}

/**
 * GET/POST {basePath}/logout: the local session ends at once (whatever the issuer says), then
 * RP-initiated logout at the issuer (OIDC RP-Initiated Logout 1.0) with `id_token_hint` and
 * the registered post-logout URI, which ends the issuer session and its refresh tokens.
 */
const logout = (auth: Auth) => async (c: Context) => {
  const isPost = c.req.method === "POST"
  if (isPost ? !isSameOriginPost(c, auth.appOrigin) : !isAcceptableLogoutGet(c)) {
    return problem(c, "csrf_rejected", { detail: "Sign out from this site (a same-origin link or form)." })
  }
  noStore(c)
  const session = readSession(c, auth)
  clearSession(c, auth)
  const status = isPost ? 303 : 302
  if (session?.it === undefined) return c.redirect(auth.postLogoutRedirectUri, status)
  const config = await discovered(auth)
  if (config === undefined) return temporarilyUnavailable(c)
  if (config.serverMetadata().end_session_endpoint === undefined) return c.redirect(auth.postLogoutRedirectUri, status)
  const url = oidc.buildEndSessionUrl(config, {
    id_token_hint: session.it,
    post_logout_redirect_uri: auth.postLogoutRedirectUri,
  })
  return c.redirect(url.href, status)
}

const normalise = (p: string) => (p.length > 1 && p.endsWith("/") ? p.slice(0, -1) : p)

/**
 * Mounts GET/POST {basePath}/login, GET {basePath}/callback, GET/POST {basePath}/logout on
 * the application (spec: mountAuthRoutes) and returns it. Call it on the root app: the
 * mount path must equal the auth object's basePath, because requireSession sends
 * unauthenticated users to `{auth.basePath}/login` and the registered redirect URI names
 * `{basePath}/callback`; a mismatch is refused here, at start-up, not at the first sign-in.
 */
export const mountAuthRoutes = <E extends Env, S extends Schema, BasePath extends string>(
  app: Hono<E, S, BasePath>,
  auth: Auth,
  options: MountAuthRoutesOptions = {},
): Hono<E, S, BasePath> => {
  const basePath = options.basePath === undefined ? auth.basePath : normalise(options.basePath)
  if (basePath !== auth.basePath) {
    throw new Error(
      `mountAuthRoutes: the mount path "${basePath}" differs from the auth object's basePath "${auth.basePath}". ` +
        `requireSession redirects to "${auth.basePath}/login", so set the same basePath in createAuth and mountAuthRoutes.`,
    )
  }
  const callbackPath = new URL(auth.redirectUri).pathname
  if (callbackPath !== `${basePath}/callback`) {
    throw new Error(
      `mountAuthRoutes: redirectUri's path "${callbackPath}" is not "${basePath}/callback", where the callback route is mounted.`,
    )
  }
  app.get(`${basePath}/login`, login(auth))
  // A Hono app made with `.basePath("/x")` prefixes every route it registers, so the login route
  // would live at /x{basePath}/login while requireSession redirects to {basePath}/login and the
  // issuer returns to {basePath}/callback. Hono's public route list shows the path it really
  // registered; the start-up fails here instead of at the first sign-in. (A sub-app mounted
  // later with `root.route("/x", sub)` cannot be seen now: the README says to mount on the root.)
  const registered = app.routes.at(-1)?.path
  if (registered !== `${basePath}/login`) {
    throw new Error(
      `mountAuthRoutes: the app registers the login route at "${registered}", not "${basePath}/login" ` +
        `(an app made with .basePath() prefixes its routes). Mount the auth routes on the root Hono app: requireSession ` +
        `redirects to "${basePath}/login" and the redirect URI is "${auth.redirectUri}".`,
    )
  }
  app.post(`${basePath}/login`, login(auth))
  app.get(`${basePath}/callback`, callback(auth))
  app.get(`${basePath}/logout`, logout(auth))
  app.post(`${basePath}/logout`, logout(auth))
  return app
}
