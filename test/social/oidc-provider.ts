import { generateKeyPairSync } from "node:crypto"
import { createServer, type Server } from "node:https"
import type { AddressInfo } from "node:net"
import { inject } from "vitest"

/**
 * A real OpenID Provider (panva's certified `oidc-provider`) on loopback over HTTPS with the
 * test CA's certificate: the generic OIDC provider of the tests. Its login and consent
 * interaction completes at once for the account the test chose (`setAccount`), so a browser,
 * or a test following redirects, goes straight back to the relying party (us).
 */
export interface OpAccount {
  readonly sub: string
  readonly email: string
  readonly email_verified: boolean
  readonly name?: string
}

export const startOidcProvider = async (options: { readonly clientId: string; readonly clientSecret: string }) => {
  const tls = inject("testTls")
  const { default: Provider } = (await import("oidc-provider" as string)) as {
    default: new (issuer: string, config: unknown) => any
  }
  const accounts = new Map<string, OpAccount>()
  let nextAccount: string | undefined
  const redirectUris: Array<string> = []
  let provider: any
  /** Every request the provider received (`GET /path`), and a switch making it answer 503 (an outage). */
  const requests: Array<string> = []
  let down = false
  const server: Server = createServer({ key: tls.key, cert: tls.cert }, (req, res) => {
    requests.push(`${req.method} ${(req.url ?? "").split("?")[0]}`)
    if (down) return void res.writeHead(503, { "content-type": "text/plain" }).end("down for maintenance")
    const m = /^\/interaction\/([^/?]+)/.exec(req.url ?? "")
    if (!m) return provider.callback()(req, res)
    void (async () => {
      // Auto-consent: log in the chosen account and grant what was asked.
      const details = await provider.interactionDetails(req, res)
      const accountId = nextAccount ?? "nobody"
      const grant = new provider.Grant({ accountId, clientId: details.params.client_id })
      grant.addOIDCScope(String(details.params.scope ?? "openid"))
      const grantId = await grant.save()
      await provider.interactionFinished(
        req,
        res,
        { login: { accountId }, consent: { grantId } },
        { mergeWithLastSubmission: false },
      )
    })().catch((e: unknown) => {
      res.writeHead(500).end(String(e))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  const port = (server.address() as AddressInfo).port
  const issuer = `https://localhost:${port}`
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 })
  const build = () => {
    provider = new Provider(issuer, {
      clients: [
        {
          client_id: options.clientId,
          client_secret: options.clientSecret,
          redirect_uris: redirectUris,
          grant_types: ["authorization_code"],
          response_types: ["code"],
          token_endpoint_auth_method: "client_secret_post",
        },
      ],
      jwks: { keys: [{ ...privateKey.export({ format: "jwk" }), kid: "op-1", alg: "RS256", use: "sig" }] },
      findAccount: async (_ctx: unknown, id: string) => {
        const account = accounts.get(id)
        return account ? { accountId: id, claims: async () => ({ ...account }) } : undefined
      },
      claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"] },
      scopes: ["openid", "email", "profile"],
      interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
      features: { devInteractions: { enabled: false } },
      pkce: { required: () => true },
      cookies: { keys: ["test-cookie-key-not-secret"] },
      ttl: { Session: 600, Interaction: 600, Grant: 600, AccessToken: 600, AuthorizationCode: 60, IdToken: 600 },
    })
    provider.proxy = false
  }
  build()
  return {
    issuer,
    port,
    requests,
    setDown: (value: boolean) => {
      down = value
    },
    /** Registers our callback URL (the connection's callback_url) at the provider's client. */
    addRedirectUri: (uri: string) => {
      redirectUris.push(uri)
      build()
    },
    setAccount: (account: OpAccount) => {
      accounts.set(account.sub, account)
      nextAccount = account.sub
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

/** Plays the browser at the OP: follows its redirects with its cookies until it sends us back. */
export const throughProvider = async (authorizationUrl: string, ourOrigin: string) => {
  const jar = new Map<string, string>()
  let url = authorizationUrl
  for (let hop = 0; hop < 10; hop++) {
    if (url.startsWith(ourOrigin)) return url
    const res = await fetch(url, {
      redirect: "manual",
      headers: { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join("; ") },
    })
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";")
      const eq = pair!.indexOf("=")
      jar.set(pair!.slice(0, eq), pair!.slice(eq + 1))
    }
    const location = res.headers.get("location")
    if (!location) throw new Error(`the provider answered ${res.status} at ${url}: ${await res.text()}`)
    url = new URL(location, url).href
  }
  throw new Error("too many redirects at the provider")
}
