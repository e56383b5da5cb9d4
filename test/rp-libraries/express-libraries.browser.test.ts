import type { IncomingMessage, ServerResponse } from "node:http"
import { randomBytes } from "node:crypto"
import { ExpressAuth, getSession } from "@auth/express"
import express from "express"
import { auth, requiresAuth } from "express-openid-connect"
import session from "express-session"
import * as client from "openid-client"
import { Strategy, type AuthenticateOptions } from "openid-client/passport"
import passport from "passport"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createClient, type TestClient } from "../oidc/support.js"
import { type Harness, listen, pageJson, signInOnHostedLogin, startHarness } from "./support.js"

// Server-side relying-party libraries, unmodified, each in a real Express 5 app on loopback,
// against the real server: a real Chromium goes to the app, the library redirects to
// /oauth2/authorize, the person signs in on Hosted Login (Email OTP from the SMTP sink), and
// the library handles the callback (PKCE, state, nonce, iss, ES256 ID token). The settings
// used here are the ones docs/oidc-libraries.md tells developers to use.

let h: Harness
const sites: Array<{ close: () => Promise<void> }> = []

beforeAll(async () => {
  h = await startHarness()
}, 60_000)
afterAll(async () => {
  for (const site of sites) await site.close()
  await h?.close()
})

/** An Express app served on loopback; the app is built once its origin is known. */
const serve = async (build: (base: string) => Promise<express.Express> | express.Express) => {
  let app: express.Express | undefined
  const site = await listen((req: IncomingMessage, res: ServerResponse) => {
    if (app) app(req, res)
    else res.writeHead(503).end()
  })
  sites.push(site)
  app = await build(site.base)
  return site.base
}

const secret = () => randomBytes(32).toString("hex")

describe("express-openid-connect", () => {
  it("auth({ idTokenSigningAlg: 'ES256', authorizationParams: { response_type: 'code', scope with offline_access } }) signs in with client_secret_basic, refreshes, then logs out at the issuer", async () => {
    let c!: TestClient
    const base = await serve(async (origin) => {
      c = await createClient(h.app, h.env, {
        type: "web_bff",
        method: "client_secret_basic",
        redirectUris: [`${origin}/callback`],
        postLogoutRedirectUris: [origin, `${origin}/`],
      })
      const app = express()
      app.use(
        auth({
          issuerBaseURL: h.env.issuer,
          baseURL: origin,
          clientID: c.id,
          clientSecret: c.secret!,
          secret: secret(),
          authRequired: false,
          idpLogout: true,
          idTokenSigningAlg: "ES256",
          // offline_access: a refresh token, which accessToken.refresh() needs
          authorizationParams: { response_type: "code", scope: "openid profile email offline_access" },
        }),
      )
      app.get("/me", requiresAuth(), (req, res) => {
        res.json({
          user: req.oidc.user,
          claims: req.oidc.idTokenClaims,
          hasAccessToken: typeof req.oidc.accessToken?.access_token === "string",
        })
      })
      app.get("/refresh", requiresAuth(), async (req, res) => {
        const before = { accessToken: req.oidc.accessToken!.access_token, refreshToken: req.oidc.refreshToken }
        const accessToken = await req.oidc.accessToken!.refresh()
        res.json({
          rotated: accessToken.access_token !== before.accessToken && req.oidc.refreshToken !== before.refreshToken,
          claims: req.oidc.idTokenClaims,
          userinfo: await req.oidc.fetchUserInfo(),
        })
      })
      app.get("/", (req, res) => {
        res.json({ authenticated: req.oidc.isAuthenticated() })
      })
      return app
    })

    const context = await h.browser.newContext()
    const page = await context.newPage()
    try {
      await page.goto(`${base}/me`)
      const email = await signInOnHostedLogin(h, page, (url) => url.origin === base && url.pathname === "/me", "eoc")
      const me = await pageJson(page)
      expect(me.user).toMatchObject({
        email,
        email_verified: true,
        amr: ["email_otp"],
        acr: "urn:example-auth:loa:basic",
      })
      expect(me.claims).toMatchObject({ iss: h.env.issuer, aud: c.id, email })
      expect(me.hasAccessToken).toBe(true)

      await page.goto(`${base}/refresh`)
      const refreshed = await pageJson(page)
      expect(refreshed.rotated).toBe(true)
      expect(refreshed.claims).toMatchObject({
        sub: me.claims.sub,
        sid: me.claims.sid,
        auth_time: me.claims.auth_time,
        amr: ["refresh_token"],
      })
      expect(refreshed.userinfo).toMatchObject({ sub: me.claims.sub, email })

      await page.goto(`${base}/logout`)
      await page.waitForURL((url) => url.origin === base && url.pathname === "/", { timeout: 15_000 })
      expect(await pageJson(page)).toEqual({ authenticated: false })
    } finally {
      await context.close()
    }
  })
})

describe("express-openid-connect with its default ID token algorithm (RS256)", () => {
  it("the callback answers 400 BadRequestError 'invalid response encountered' (openid-client refuses the ES256 ID token); no session", async () => {
    const base = await serve(async (origin) => {
      const c = await createClient(h.app, h.env, {
        type: "web_bff",
        method: "client_secret_basic",
        redirectUris: [`${origin}/callback`],
      })
      const app = express()
      app.use(
        auth({
          issuerBaseURL: h.env.issuer,
          baseURL: origin,
          clientID: c.id,
          clientSecret: c.secret!,
          secret: secret(),
          authRequired: false,
          authorizationParams: { response_type: "code", scope: "openid profile email" },
        }),
      )
      app.get("/me", requiresAuth(), (req, res) => {
        res.json({ user: req.oidc.user })
      })
      app.use(
        (
          err: Error & { status?: number },
          _req: express.Request,
          res: express.Response,
          _next: express.NextFunction,
        ) => {
          res.status(err.status ?? 500).json({ name: err.name, message: err.message })
        },
      )
      return app
    })
    const context = await h.browser.newContext()
    const page = await context.newPage()
    try {
      await page.goto(`${base}/me`)
      await signInOnHostedLogin(h, page, (url) => url.origin === base && url.pathname === "/callback", "eoc-rs256")
      expect(await pageJson(page)).toEqual({ name: "BadRequestError", message: "invalid response encountered" })
    } finally {
      await context.close()
    }
  })
})

describe("passport with openid-client/passport Strategy", () => {
  it("a Strategy whose authorizationRequestParams adds state and nonce signs in (client_secret_post)", async () => {
    let c!: TestClient
    const base = await serve(async (origin) => {
      c = await createClient(h.app, h.env, {
        type: "web_bff",
        method: "client_secret_post",
        redirectUris: [`${origin}/callback`],
      })
      const config = await client.discovery(
        new URL(h.env.issuer),
        c.id,
        undefined,
        client.ClientSecretPost(c.secret!),
        {
          execute: [client.allowInsecureRequests],
        },
      )
      // The Strategy sends PKCE but neither state (when PKCE is supported) nor nonce on a
      // code flow; this issuer requires both, so the documented hook adds them and the
      // Strategy itself checks them on the callback.
      class AuthServiceStrategy extends Strategy {
        override authorizationRequestParams<T extends AuthenticateOptions>(req: express.Request, options: T) {
          const params = new URLSearchParams(
            super.authorizationRequestParams(req, options) as URLSearchParams | undefined,
          )
          params.set("state", client.randomState())
          params.set("nonce", client.randomNonce())
          return params
        }
      }
      passport.use(
        new AuthServiceStrategy(
          { name: "authservice", config, scope: "openid profile email", callbackURL: `${origin}/callback` },
          (tokens, verified) => verified(null, { claims: tokens.claims(), scope: tokens.scope }),
        ),
      )
      passport.serializeUser((user, done) => done(null, user))
      passport.deserializeUser((user: Express.User, done) => done(null, user))
      const app = express()
      app.use(session({ secret: secret(), resave: false, saveUninitialized: false }))
      app.use(passport.session())
      app.get("/login", passport.authenticate("authservice"))
      app.get("/callback", passport.authenticate("authservice", { successRedirect: "/me", failureMessage: true }))
      app.get("/me", (req, res) => {
        res.json({ user: req.user ?? null })
      })
      return app
    })

    const context = await h.browser.newContext()
    const page = await context.newPage()
    try {
      await page.goto(`${base}/login`)
      const authorizeUrl = new URL(page.url())
      const email = await signInOnHostedLogin(
        h,
        page,
        (url) => url.origin === base && url.pathname === "/me",
        "passport",
      )
      expect(authorizeUrl.host).toBe(h.env.interaction_domain)
      const me = await pageJson(page)
      expect(me.user.claims).toMatchObject({
        iss: h.env.issuer,
        aud: c.id,
        email,
        nonce: expect.any(String),
        amr: ["email_otp"],
      })
      expect(me.user.scope).toBe("openid profile email")
    } finally {
      await context.close()
    }
  })
})

type Check = "pkce" | "state" | "nonce"

/** An Express app with Auth.js and one oidc provider for this issuer; `checks` undefined = Auth.js's default. */
const serveAuthJs = async (checks: Array<Check> | undefined) => {
  const authSecret = secret()
  return serve(async (origin) => {
    const c = await createClient(h.app, h.env, {
      type: "web_bff",
      method: "client_secret_basic",
      redirectUris: [`${origin}/auth/callback/authservice`],
    })
    const config = () => ({
      trustHost: true,
      secret: authSecret,
      providers: [
        {
          id: "authservice",
          name: "AuthService",
          type: "oidc" as const,
          issuer: h.env.issuer,
          clientId: c.id,
          clientSecret: c.secret!,
          ...(checks ? { checks } : {}),
          authorization: { params: { scope: "openid profile email" } },
        },
      ],
    })
    const app = express()
    app.set("trust proxy", true)
    // @auth/express derives its base path from req.params[0], the unnamed wildcard of Express 4;
    // on Express 5 a RegExp mount path gives it that capture ("/auth/*splat" would not).
    app.use(/^\/auth\/(.*)$/, ExpressAuth(config()))
    app.get("/me", async (req, res) => {
      res.json({ session: await getSession(req, config()) })
    })
    return app
  })
}

describe("Auth.js (@auth/express)", () => {
  it("an oidc provider with checks ['pkce', 'state', 'nonce'] signs in; the session names the user", async () => {
    // Auth.js checks only PKCE by default; this issuer requires state and nonce too.
    const base = await serveAuthJs(["pkce", "state", "nonce"])
    const context = await h.browser.newContext()
    const page = await context.newPage()
    try {
      await page.goto(`${base}/auth/signin?callbackUrl=${encodeURIComponent(`${base}/me`)}`)
      await page.getByRole("button", { name: "Sign in with AuthService" }).click()
      const email = await signInOnHostedLogin(h, page, (url) => url.origin === base && url.pathname === "/me", "authjs")
      const me = await pageJson(page)
      expect(me.session).toMatchObject({ user: { email } })
    } finally {
      await context.close()
    }
  })

  it("with its default checks (PKCE only) the issuer sends invalid_request naming the missing state back to Auth.js, which reports OAuthCallbackError", async () => {
    const base = await serveAuthJs(undefined)
    const context = await h.browser.newContext()
    const page = await context.newPage()
    try {
      await page.goto(`${base}/auth/signin`)
      const [response] = await Promise.all([
        page.waitForResponse((r) => new URL(r.url()).pathname.endsWith("/oauth2/authorize")),
        page.getByRole("button", { name: "Sign in with AuthService" }).click(),
      ])
      expect(new URL(response.url()).searchParams.has("code_challenge")).toBe(true)
      expect(response.status()).toBe(302)
      const location = new URL(response.headers()["location"]!)
      expect(`${location.origin}${location.pathname}`).toBe(`${base}/auth/callback/authservice`)
      expect(Object.fromEntries(location.searchParams)).toEqual({
        error: "invalid_request",
        error_description: "state is required for every client (1 to 512 characters)",
        iss: h.env.issuer,
      })
      // Auth.js handles the error response: its error page, never a JSON page of the issuer's.
      await page.waitForURL(
        (url) => url.origin === base && url.pathname.startsWith("/auth/") && !url.pathname.startsWith("/auth/callback"),
      )
      expect(new URL(page.url()).searchParams.get("error")).toBe("OAuthCallbackError")
    } finally {
      await context.close()
    }
  })
})
