import { CliUsage } from "../operator/cli-usage.js"
import type { LoginOptions } from "./login.js"

// The login helper's usage and flags, apart from the helper: `--help` and wrong use are answered
// without loading the OIDC client (src/cli.ts).

/** `login` as the command list and its --help show it. */
export const LOGIN_COMMAND = {
  name: "login",
  synopsis: 'login --issuer URL --client-id ID [--port 8976] [--scope "openid email offline_access"]',
  description:
    "Signs a user in as an application would (Authorization Code + PKCE S256, state and nonce): listens on http://127.0.0.1:PORT/callback (register that redirect URI on a web_spa client), prints the authorize URL on stderr, waits up to 5 minutes for the browser to come back, exchanges the code and prints the token response with the ID token's claims as one JSON object on stdout. Needs a running server, no database.",
  example: 'login --issuer "$(jq -r .issuer .data/bootstrap.json)" --client-id "$CLIENT_ID" > .data/tokens.json',
} as const

const FLAGS = new Set(["issuer", "client-id", "port", "scope"])

const usageLine = `usage: npm run cli -- ${LOGIN_COMMAND.synopsis} (npm run cli -- login --help for more)`

export const parseLoginFlags = (flags: ReadonlyArray<string>): Omit<LoginOptions, "announce" | "timeoutMs"> => {
  const values: Record<string, string> = {}
  for (let i = 0; i < flags.length; i++) {
    const flag = flags[i]!
    const m = /^--([a-z-]+)(?:=(.*))?$/.exec(flag)
    if (!m || !FLAGS.has(m[1]!)) throw new CliUsage(`unknown argument "${flag}"; ${usageLine}`)
    const value = m[2] ?? flags[++i]
    if (value === undefined) throw new CliUsage(`--${m[1]} needs a value; ${usageLine}`)
    values[m[1]!] = value
  }
  const issuer = values["issuer"]
  const clientId = values["client-id"]
  if (!issuer || !/^https?:\/\//.test(issuer) || !clientId)
    throw new CliUsage(`--issuer (an http(s) URL) and --client-id are required; ${usageLine}`)
  const port = Number(values["port"] ?? "8976")
  if (!/^\d+$/.test(values["port"] ?? "8976") || port > 65535)
    throw new CliUsage(`--port must be a TCP port number; ${usageLine}`)
  return { issuer, clientId, port, scope: values["scope"] ?? "openid email offline_access" }
}
