import { serve } from "@hono/node-server"
import { Hono } from "hono"
import { html } from "hono/html"
import { authMiddleware, bearerTokenMiddleware, createAuth, mountAuthRoutes, requireSession } from "@authservice/hono"
import { loadOrRegisterClient } from "./register.js"

// A Hono app signing in against a local authservice (`npm start` in the project):
//   /          public; shows who is signed in (authMiddleware never blocks)
//   /profile   behind requireSession with onUnauthenticated: "redirect": visitors go to the sign-in
//   /session   behind requireSession (default): 401 problem JSON without a session, for the app's own fetch calls
//   /api/me    behind bearerTokenMiddleware: call it with `Authorization: Bearer <access token>`

const port = Number(process.env.PORT ?? 4000)
const origin = process.env.APP_ORIGIN ?? `http://localhost:${port}`
const settings = await loadOrRegisterClient({
  bootstrapFile: process.env.BOOTSTRAP_FILE ?? new URL("./bootstrap.json", import.meta.url).pathname,
  origin,
})

const auth = createAuth({
  issuer: settings.issuer,
  clientId: settings.clientId,
  clientSecret: settings.clientSecret,
  redirectUri: `${origin}/auth/callback`,
  postLogoutRedirectUri: `${origin}/`,
  cookieSecret: process.env.COOKIE_SECRET ?? settings.cookieSecret,
})

const app = new Hono()
mountAuthRoutes(app, auth)

const layout = (body) => html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Hono + authservice</title></head>
<body><nav><a href="/">Home</a> · <a href="/profile">Profile</a></nav>${body}</body></html>`

app.get("/", authMiddleware(auth), (c) => {
  const user = c.get("authUser")
  return c.html(
    layout(
      user
        ? html`<h1>Hello ${user.email}</h1><form method="post" action="/auth/logout"><button>Sign out</button></form>`
        : html`<h1>Public page</h1><form method="post" action="/auth/login"><input type="hidden" name="returnTo" value="/profile"><button>Sign in</button></form>`,
    ),
  )
})

app.get("/profile", requireSession(auth, { onUnauthenticated: "redirect" }), (c) => {
  const user = c.get("authUser")
  const session = c.get("authSession")
  return c.html(
    layout(html`<h1>Profile</h1>
<p id="email">${user.email}</p>
<p>Access token valid until <time>${new Date(session.accessTokenExpiresAt).toISOString()}</time></p>
<p><a href="/profile/api">Call /api/me with my access token</a></p>
<form method="post" action="/auth/logout"><button>Sign out</button></form>`),
  )
})

// For the page's own fetch calls: requireSession's default answers 401 problem JSON, never a
// redirect to an HTML sign-in page that a fetch would follow and then fail to parse.
app.get("/session", requireSession(auth), (c) => c.json({ user: c.get("authUser"), session: c.get("authSession") }))

// The server side of the app calls its own API with the session's access token (it never reaches the browser).
app.get("/profile/api", requireSession(auth, { onUnauthenticated: "redirect" }), async (c) => {
  const res = await fetch(`${origin}/api/me`, { headers: { authorization: `Bearer ${c.get("accessToken")}` } })
  return c.html(layout(html`<h1>GET /api/me: ${res.status}</h1><pre id="api">${await res.text()}</pre>`))
})

// Access tokens requested without `resource` (as the session's are) carry the issuer as their
// audience; an API with its own identifier sets that instead. `audience` is required.
app.use("/api/*", bearerTokenMiddleware({ issuer: settings.issuer, audience: settings.issuer }))
// An impersonation token (a Workspace member acting as the user) is marked: say so.
app.get("/api/me", (c) =>
  c.json({
    sub: c.get("accessTokenSubject"),
    scope: c.get("accessTokenScope"),
    impersonator: c.get("accessTokenImpersonator") ?? null,
  }),
)

serve({ fetch: app.fetch, port }, () => console.log(`Hono example listening on ${origin}`))
