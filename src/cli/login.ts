import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as oidc from "openid-client"

/**
 * `npm run -s cli -- login --issuer URL --client-id ID [--port 8976] [--scope "..."]`: what an
 * application does to sign a user in, for trying the service from a terminal. It listens on
 * http://127.0.0.1:PORT/callback (register that redirect URI on a `web_spa` client), prints the
 * authorize URL (PKCE S256, state and nonce: RFC 7636, OIDC Core), waits for the browser to
 * come back, exchanges the code and prints the token response with the ID token's claims as
 * one JSON object on stdout. Messages for the person go to stderr, so the output pipes into jq.
 */
export interface LoginOptions {
  readonly issuer: string
  readonly clientId: string
  readonly port: number
  readonly scope: string
  readonly timeoutMs: number
  /** Where the authorize URL goes (stderr by default). */
  readonly announce: (authorizeUrl: string) => void
}

export class LoginUsage extends Error {}

export const LOGIN_USAGE = "npm run -s cli -- login --issuer URL --client-id ID [--port 8976] [--scope \"openid email offline_access\"]"

export const parseLoginFlags = (flags: ReadonlyArray<string>): Omit<LoginOptions, "announce" | "timeoutMs"> => {
  const values: Record<string, string> = {}
  for (let i = 0; i < flags.length; i++) {
    const flag = flags[i]!
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(flag)
    if (!m) throw new LoginUsage(`unexpected argument "${flag}"; usage: ${LOGIN_USAGE}`)
    values[m[1]!] = m[2] ?? flags[++i] ?? ""
  }
  const issuer = values["issuer"]
  const clientId = values["client-id"]
  if (!issuer || !/^https?:\/\//.test(issuer) || !clientId) throw new LoginUsage(`--issuer (an http(s) URL) and --client-id are required; usage: ${LOGIN_USAGE}`)
  const port = Number(values["port"] ?? "8976")
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new LoginUsage(`--port must be a TCP port number; usage: ${LOGIN_USAGE}`)
  return { issuer, clientId, port, scope: values["scope"] ?? "openid email offline_access" }
}

export const login = async (options: LoginOptions) => {
  const issuerUrl = new URL(options.issuer)
  // http is only for a local issuer (the development default); openid-client refuses it otherwise.
  const insecure = issuerUrl.protocol === "http:"
  const config = await oidc.discovery(issuerUrl, options.clientId, undefined, oidc.None(), insecure ? { execute: [oidc.allowInsecureRequests] } : undefined)
  const verifier = oidc.randomPKCECodeVerifier()
  const state = oidc.randomState()
  const nonce = oidc.randomNonce()

  let resolveCallback!: (url: URL) => void
  const callback = new Promise<URL>((resolve) => { resolveCallback = resolve })
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", `http://127.0.0.1:${(server.address() as AddressInfo).port}`)
    if (url.pathname !== "/callback") return void res.writeHead(404).end()
    res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" })
      .end("<!doctype html><title>Signed in</title><p>Signed in. You can close this tab and return to the terminal.</p>")
    resolveCallback(url)
  })
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(options.port, "127.0.0.1", resolve)
  })
  try {
    const redirectUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`
    const authorizeUrl = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri, scope: options.scope, state, nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: "S256",
    })
    options.announce(authorizeUrl.href)
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no callback within ${Math.round(options.timeoutMs / 1000)} s`)), options.timeoutMs)
    })
    const returned = await Promise.race([callback, timeout]).finally(() => clearTimeout(timer))
    const error = returned.searchParams.get("error")
    if (error) throw new Error(`the issuer answered ${error}${returned.searchParams.get("error_description") ? `: ${returned.searchParams.get("error_description")}` : ""}`)
    const tokens = await oidc.authorizationCodeGrant(config, returned, { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce, idTokenExpected: options.scope.split(" ").includes("openid") })
    return { ...tokens, claims: tokens.claims() ?? null }
  } finally {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
}
