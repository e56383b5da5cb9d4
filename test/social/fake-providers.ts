import { createHash, randomBytes } from "node:crypto"
import { createServer, request as httpsRequest, type Server } from "node:https"
import type { IncomingMessage, ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { exportJWK, generateKeyPair, importJWK, type JWK, jwtVerify, SignJWT } from "jose"
import { inject } from "vitest"
import { PROVIDER_HOST_NAMES } from "../support/test-ca.js"

/**
 * Local stand-ins for Google, Microsoft (multi-tenant `common`), GitHub and Apple that speak
 * their documented protocols: discovery documents, authorization endpoints (consent is
 * automatic for the user the test chose), token endpoints that check client
 * authentication, redirect URI, single-use codes and PKCE S256, ID tokens signed RS256 with
 * a published JWKS, Google UserInfo, GitHub `/user` and `/user/emails`, Apple's ES256
 * client-secret JWT and `form_post`. One HTTPS server with the test CA's certificate
 * answers for every provider host (SOCIAL_PROVIDER_HOSTS points the app's sockets here).
 */

export type FakeProvider = "google" | "microsoft" | "github" | "apple"

export interface FakeUser {
  readonly sub: string
  readonly email?: string
  readonly email_verified?: boolean | string
  readonly name?: string
  /** Microsoft: the tenant of the account (`tid`, part of `iss`). */
  readonly tid?: string
  /** Microsoft: the optional "email domain owner verified" claim. */
  readonly xms_edov?: boolean
  /** GitHub: the `/user/emails` list. */
  readonly emails?: ReadonlyArray<{ email: string; primary: boolean; verified: boolean }>
  /** More claims of the ID token and UserInfo (e.g. for a profile_mapping). */
  readonly extra?: Readonly<Record<string, unknown>>
}

export interface FakeClient {
  readonly clientId: string
  readonly clientSecret?: string
  readonly redirectUri: string
  /** Apple: the key that signs the client secret JWT, and its ids. */
  readonly apple?: { readonly teamId: string; readonly keyId: string; readonly publicJwk: JWK }
}

interface IssuedCode {
  readonly provider: FakeProvider
  readonly clientId: string
  readonly redirectUri: string
  readonly nonce: string | undefined
  readonly codeChallenge: string | undefined
  readonly user: FakeUser
}

const GOOGLE_DISCOVERY = {
  issuer: "https://accounts.google.com",
  authorization_endpoint: "https://accounts.google.com/o/oauth2/v2/auth",
  token_endpoint: "https://oauth2.googleapis.com/token",
  userinfo_endpoint: "https://openidconnect.googleapis.com/v1/userinfo",
  jwks_uri: "https://www.googleapis.com/oauth2/v3/certs",
  response_types_supported: ["code", "id_token", "code id_token"],
  subject_types_supported: ["public"],
  id_token_signing_alg_values_supported: ["RS256"],
  scopes_supported: ["openid", "email", "profile"],
  token_endpoint_auth_methods_supported: ["client_secret_post", "client_secret_basic"],
  code_challenge_methods_supported: ["plain", "S256"],
}
const MICROSOFT_DISCOVERY = {
  issuer: "https://login.microsoftonline.com/{tenantid}/v2.0",
  authorization_endpoint: "https://login.microsoftonline.com/common/oauth2/v2.0/authorize",
  token_endpoint: "https://login.microsoftonline.com/common/oauth2/v2.0/token",
  jwks_uri: "https://login.microsoftonline.com/common/discovery/v2.0/keys",
  response_types_supported: ["code", "id_token", "code id_token", "id_token token"],
  response_modes_supported: ["query", "fragment", "form_post"],
  subject_types_supported: ["pairwise"],
  id_token_signing_alg_values_supported: ["RS256"],
  scopes_supported: ["openid", "profile", "email", "offline_access"],
  token_endpoint_auth_methods_supported: ["client_secret_post", "private_key_jwt", "client_secret_basic"],
}
const APPLE_DISCOVERY = {
  issuer: "https://appleid.apple.com",
  authorization_endpoint: "https://appleid.apple.com/auth/authorize",
  token_endpoint: "https://appleid.apple.com/auth/token",
  jwks_uri: "https://appleid.apple.com/auth/keys",
  response_types_supported: ["code"],
  response_modes_supported: ["query", "fragment", "form_post"],
  subject_types_supported: ["pairwise"],
  id_token_signing_alg_values_supported: ["RS256"],
  scopes_supported: ["openid", "email", "name"],
  token_endpoint_auth_methods_supported: ["client_secret_post"],
}

const readBody = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
  })

const sendJson = (res: ServerResponse, status: number, body: unknown) =>
  void res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body))

export const startFakeProviders = async () => {
  const tls = inject("testTls")
  const { privateKey, publicKey } = await generateKeyPair("RS256")
  const publicJwk = { ...(await exportJWK(publicKey)), kid: "fake-1", alg: "RS256", use: "sig" }
  const clients = new Map<string, FakeClient>() // `${provider}:${clientId}`
  const nextUser = new Map<FakeProvider, FakeUser>()
  const nextRefusal = new Map<FakeProvider, string>()
  /** Claims the next ID token of a provider carries instead of the right ones (validation tests). */
  const nextIdTokenOverride = new Map<FakeProvider, Record<string, unknown>>()
  const codes = new Map<string, IssuedCode>()
  const accessTokens = new Map<string, FakeUser>()
  /** Every token request, for assertions (e.g. Apple's client secret was checked). */
  const tokenRequests: Array<{ provider: FakeProvider; ok: boolean; reason?: string }> = []
  const apiRequests: Array<string> = []
  /** While set, the discovery documents answer 503 (a provider outage), the other endpoints still work. */
  let discoveryDown = false

  const providerOf = (host: string): FakeProvider | undefined => {
    if (
      host === "accounts.google.com" ||
      host === "oauth2.googleapis.com" ||
      host === "www.googleapis.com" ||
      host === "openidconnect.googleapis.com"
    )
      return "google"
    if (host === "login.microsoftonline.com") return "microsoft"
    if (host === "github.com" || host === "api.github.com") return "github"
    if (host === "appleid.apple.com") return "apple"
    return undefined
  }

  const idToken = (provider: FakeProvider, code: IssuedCode) => {
    const now = Math.floor(Date.now() / 1000)
    const iss =
      provider === "google"
        ? "https://accounts.google.com"
        : provider === "apple"
          ? "https://appleid.apple.com"
          : `https://login.microsoftonline.com/${code.user.tid ?? "9188040d-6c67-4c5b-b112-36a304b66dad"}/v2.0`
    const { emails: _e, extra, ...claims } = code.user
    const override = nextIdTokenOverride.get(provider) ?? {}
    nextIdTokenOverride.delete(provider)
    return new SignJWT({
      ...claims,
      ...extra,
      ...(code.nonce ? { nonce: code.nonce } : {}),
      ...(provider === "microsoft" ? { tid: code.user.tid ?? "9188040d-6c67-4c5b-b112-36a304b66dad", ver: "2.0" } : {}),
      iss,
      aud: code.clientId,
      sub: code.user.sub,
      iat: now,
      exp: now + 600,
      ...override,
    })
      .setProtectedHeader({ alg: "RS256", kid: "fake-1" })
      .sign(privateKey)
  }

  const authorize = (provider: FakeProvider, url: URL, res: ServerResponse) => {
    const q = url.searchParams
    const client = clients.get(`${provider}:${q.get("client_id")}`)
    if (!client || q.get("redirect_uri") !== client.redirectUri)
      return sendJson(res, 400, { error: "invalid_request", error_description: "unknown client or redirect_uri" })
    if (provider !== "github" && q.get("response_type") !== "code")
      return sendJson(res, 400, { error: "unsupported_response_type" })
    if (provider !== "apple" && q.get("code_challenge_method") !== "S256")
      return sendJson(res, 400, { error: "invalid_request", error_description: "PKCE S256 required" })
    const state = q.get("state") ?? ""
    const refusal = nextRefusal.get(provider)
    const params: Record<string, string> = {}
    if (refusal !== undefined) {
      nextRefusal.delete(provider)
      Object.assign(params, { error: refusal, error_description: "The user said no", state })
    } else {
      const user = nextUser.get(provider)
      if (!user) return sendJson(res, 500, { error: "no user chosen by the test" })
      const code = randomBytes(16).toString("hex")
      codes.set(code, {
        provider,
        clientId: client.clientId,
        redirectUri: client.redirectUri,
        nonce: q.get("nonce") ?? undefined,
        codeChallenge: q.get("code_challenge") ?? undefined,
        user,
      })
      Object.assign(params, { code, state })
      if (provider === "apple" && user.name)
        params["user"] = JSON.stringify({
          name: { firstName: user.name.split(" ")[0], lastName: user.name.split(" ")[1] ?? "" },
          email: user.email,
        })
    }
    if (provider === "apple") {
      if (q.get("response_mode") !== "form_post")
        return sendJson(res, 400, {
          error: "invalid_request",
          error_description: "form_post required when name or email is asked",
        })
      const inputs = Object.entries(params)
        .map(
          ([k, v]) => `<input type="hidden" name="${k}" value="${v.replace(/&/g, "&amp;").replace(/"/g, "&quot;")}">`,
        )
        .join("")
      return void res
        .writeHead(200, { "content-type": "text/html" })
        .end(`<form method="post" action="${client.redirectUri}">${inputs}</form>`)
    }
    res.writeHead(302, { location: `${client.redirectUri}?${new URLSearchParams(params)}` }).end()
  }

  const clientAuth = async (provider: FakeProvider, req: IncomingMessage, form: URLSearchParams) => {
    let id = form.get("client_id") ?? undefined
    let secret = form.get("client_secret") ?? undefined
    const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? "")
    if (basic)
      [id, secret] = Buffer.from(basic[1]!, "base64").toString().split(":").map(decodeURIComponent) as [string, string]
    const client = clients.get(`${provider}:${id}`)
    if (!client || secret === undefined) return undefined
    if (provider === "apple") {
      // Apple: the secret is an ES256 JWT signed with the developer's key (kid), iss = team id,
      // sub = client id, aud = https://appleid.apple.com.
      const apple = client.apple!
      try {
        await jwtVerify(secret, await importJWK(apple.publicJwk, "ES256"), {
          algorithms: ["ES256"],
          issuer: apple.teamId,
          subject: client.clientId,
          audience: "https://appleid.apple.com",
        })
        const header = JSON.parse(Buffer.from(secret.split(".")[0]!, "base64url").toString()) as { kid?: string }
        return header.kid === apple.keyId ? client : undefined
      } catch {
        return undefined
      }
    }
    return secret === client.clientSecret ? client : undefined
  }

  const token = async (provider: FakeProvider, req: IncomingMessage, res: ServerResponse) => {
    const form = new URLSearchParams(await readBody(req))
    const refuse = (reason: string) => {
      tokenRequests.push({ provider, ok: false, reason })
      return sendJson(res, 400, {
        error: reason === "client" ? "invalid_client" : "invalid_grant",
        error_description: reason,
      })
    }
    const client = await clientAuth(provider, req, form)
    if (!client) return refuse("client")
    const code = codes.get(form.get("code") ?? "")
    if (!code || code.provider !== provider || code.clientId !== client.clientId) return refuse("code")
    codes.delete(form.get("code")!)
    if (form.get("redirect_uri") !== code.redirectUri) return refuse("redirect_uri")
    if (code.codeChallenge !== undefined) {
      const verifier = form.get("code_verifier") ?? ""
      if (createHash("sha256").update(verifier).digest("base64url") !== code.codeChallenge) return refuse("pkce")
    }
    tokenRequests.push({ provider, ok: true })
    const access = randomBytes(16).toString("hex")
    accessTokens.set(access, code.user)
    if (provider === "github")
      return sendJson(res, 200, { access_token: access, token_type: "bearer", scope: "read:user,user:email" })
    sendJson(res, 200, {
      access_token: access,
      token_type: "Bearer",
      expires_in: 3600,
      id_token: await idToken(provider, code),
    })
  }

  const bearerUser = (req: IncomingMessage) =>
    accessTokens.get(/^Bearer (.+)$/i.exec(req.headers.authorization ?? "")?.[1] ?? "")

  const server: Server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    void (async () => {
      const host = (req.headers.host ?? "").replace(/:\d+$/, "")
      const url = new URL(req.url ?? "/", `https://${host}`)
      const provider = providerOf(host)
      const route = `${req.method} ${host}${url.pathname}`
      apiRequests.push(route)
      if (discoveryDown && url.pathname.endsWith("/.well-known/openid-configuration"))
        return sendJson(res, 503, { error: "temporarily_unavailable" })
      switch (route) {
        case "GET accounts.google.com/.well-known/openid-configuration":
          return sendJson(res, 200, GOOGLE_DISCOVERY)
        case "GET login.microsoftonline.com/common/v2.0/.well-known/openid-configuration":
          return sendJson(res, 200, MICROSOFT_DISCOVERY)
        case "GET appleid.apple.com/.well-known/openid-configuration":
          return sendJson(res, 200, APPLE_DISCOVERY)
        case "GET www.googleapis.com/oauth2/v3/certs":
        case "GET login.microsoftonline.com/common/discovery/v2.0/keys":
        case "GET appleid.apple.com/auth/keys":
          return sendJson(res, 200, { keys: [publicJwk] })
        case "GET accounts.google.com/o/oauth2/v2/auth":
        case "GET login.microsoftonline.com/common/oauth2/v2.0/authorize":
        case "GET github.com/login/oauth/authorize":
        case "GET appleid.apple.com/auth/authorize":
          return authorize(provider!, url, res)
        case "POST oauth2.googleapis.com/token":
        case "POST login.microsoftonline.com/common/oauth2/v2.0/token":
        case "POST github.com/login/oauth/access_token":
        case "POST appleid.apple.com/auth/token":
          return token(provider!, req, res)
        case "GET openidconnect.googleapis.com/v1/userinfo": {
          const user = bearerUser(req)
          return user
            ? sendJson(res, 200, {
                sub: user.sub,
                email: user.email,
                email_verified: user.email_verified,
                name: user.name,
              })
            : sendJson(res, 401, {})
        }
        case "GET api.github.com/user": {
          const user = bearerUser(req)
          if (!user || !req.headers["user-agent"]) return sendJson(res, 401, { message: "Requires authentication" })
          return sendJson(res, 200, {
            id: Number(user.sub),
            login: `user${user.sub}`,
            name: user.name ?? null,
            avatar_url: `https://avatars.githubusercontent.com/u/${user.sub}`,
          })
        }
        case "GET api.github.com/user/emails": {
          const user = bearerUser(req)
          return user
            ? sendJson(res, 200, user.emails ?? [])
            : sendJson(res, 401, { message: "Requires authentication" })
        }
        default:
          return sendJson(res, 404, { error: "not_found", route })
      }
    })()
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  const port = (server.address() as AddressInfo).port

  /** Plays the user's browser at the provider: the redirect (or Apple's auto-submitted form) it answers with. */
  const visit = (authorizationUrl: string) =>
    new Promise<{ location?: string; form?: Record<string, string>; action?: string; status: number }>(
      (resolve, reject) => {
        const url = new URL(authorizationUrl)
        const req = httpsRequest(
          {
            host: "127.0.0.1",
            port,
            servername: url.hostname,
            path: `${url.pathname}${url.search}`,
            headers: { host: url.host },
            method: "GET",
          },
          (res) => {
            const chunks: Array<Buffer> = []
            res.on("data", (c: Buffer) => chunks.push(c))
            res.on("end", () => {
              const text = Buffer.concat(chunks).toString("utf8")
              if (res.statusCode === 302) return resolve({ status: 302, location: res.headers.location! })
              const action = /action="([^"]+)"/.exec(text)?.[1]
              const form: Record<string, string> = {}
              for (const m of text.matchAll(/name="([^"]+)" value="([^"]*)"/g))
                form[m[1]!] = m[2]!.replace(/&quot;/g, '"').replace(/&amp;/g, "&")
              resolve({ status: res.statusCode ?? 0, ...(action ? { action, form } : {}) })
            })
          },
        )
        req.on("error", reject)
        req.end()
      },
    )

  return {
    port,
    /** SOCIAL_PROVIDER_HOSTS for the app: every provider host -> this server. */
    hostsSetting: PROVIDER_HOST_NAMES.map((h) => `${h}=127.0.0.1:${port}`).join(","),
    registerClient: (provider: FakeProvider, client: FakeClient) =>
      void clients.set(`${provider}:${client.clientId}`, client),
    setUser: (provider: FakeProvider, user: FakeUser) => void nextUser.set(provider, user),
    refuseNext: (provider: FakeProvider, error = "access_denied") => void nextRefusal.set(provider, error),
    overrideNextIdToken: (provider: FakeProvider, claims: Record<string, unknown>) =>
      void nextIdTokenOverride.set(provider, claims),
    setDiscoveryDown: (down: boolean) => {
      discoveryDown = down
    },
    visit,
    tokenRequests,
    apiRequests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

export type FakeProviders = Awaited<ReturnType<typeof startFakeProviders>>
