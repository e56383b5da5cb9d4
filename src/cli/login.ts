import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import * as oidc from "openid-client"
import { describeUnknown, errorChain } from "../platform/start-failure.js"

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

/** Why a request to the issuer failed, from the bottom of the error's chain (fetch says only "fetch failed"). */
const unreachable = (url: string, error: unknown) => {
  const codes: Record<string, string> = {
    ECONNREFUSED: "connection refused (is the server running? npm start)",
    ENOTFOUND: "the host name does not resolve",
    EAI_AGAIN: "the host name does not resolve (EAI_AGAIN)",
    ETIMEDOUT: "no answer (ETIMEDOUT)",
    ECONNRESET: "the connection was reset (ECONNRESET)",
    EHOSTUNREACH: "the host is unreachable",
  }
  const chain = errorChain(error)
  const coded = chain.find(
    (e): e is { code: string } =>
      typeof (e as { code?: unknown }).code === "string" && (e as { code: string }).code in codes,
  )
  const why = coded ? codes[coded.code]! : describeUnknown(chain.at(-1))
  return new LoginFailed(`cannot reach the issuer at ${url}: ${why}`)
}

export class LoginFailed extends Error {}

export const login = async (options: LoginOptions) => {
  const issuerUrl = new URL(options.issuer)
  // http is only for a local issuer (the development default); openid-client refuses it otherwise.
  const insecure = issuerUrl.protocol === "http:"
  const discoveryUrl = `${options.issuer.replace(/\/+$/, "")}/.well-known/openid-configuration`
  const config = await oidc
    .discovery(
      issuerUrl,
      options.clientId,
      undefined,
      oidc.None(),
      insecure ? { execute: [oidc.allowInsecureRequests] } : undefined,
    )
    .catch((e: unknown) => {
      // An answer that is not a discovery document (a 404 of an unknown Environment, ...) is not "unreachable".
      const status = (e as { response?: { status?: unknown } }).response?.status
      throw typeof status === "number"
        ? new LoginFailed(
            `the issuer at ${discoveryUrl} answered HTTP ${status}: check --issuer (the "issuer" of bootstrap.json)`,
          )
        : unreachable(discoveryUrl, e)
    })
  const verifier = oidc.randomPKCECodeVerifier()
  const state = oidc.randomState()
  const nonce = oidc.randomNonce()

  let resolveCallback!: (url: URL) => void
  const callback = new Promise<URL>((resolve) => {
    resolveCallback = resolve
  })
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", `http://127.0.0.1:${(server.address() as AddressInfo).port}`)
    if (url.pathname !== "/callback") return void res.writeHead(404).end()
    res
      .writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" })
      .end(
        "<!doctype html><title>Signed in</title><p>Signed in. You can close this tab and return to the terminal.</p>",
      )
    resolveCallback(url)
  })
  await new Promise<void>((resolve, reject) => {
    server.once("error", (e: NodeJS.ErrnoException) =>
      reject(
        e.code === "EADDRINUSE"
          ? new LoginFailed(
              `port ${options.port} on 127.0.0.1 is in use: choose another with --port (and register that redirect URI)`,
            )
          : e,
      ),
    )
    server.listen(options.port, "127.0.0.1", resolve)
  })
  try {
    const redirectUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`
    const authorizeUrl = oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: options.scope,
      state,
      nonce,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: "S256",
    })
    options.announce(authorizeUrl.href)
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no callback within ${Math.round(options.timeoutMs / 1000)} s`)),
        options.timeoutMs,
      )
    })
    const returned = await Promise.race([callback, timeout]).finally(() => clearTimeout(timer))
    const error = returned.searchParams.get("error")
    if (error)
      throw new Error(
        `the issuer answered ${error}${returned.searchParams.get("error_description") ? `: ${returned.searchParams.get("error_description")}` : ""}`,
      )
    const tokens = await oidc.authorizationCodeGrant(config, returned, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: options.scope.split(" ").includes("openid"),
    })
    return { ...tokens, claims: tokens.claims() ?? null }
  } finally {
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  }
}
