import { mkdirSync } from "node:fs"
import { isAbsolute, relative, resolve } from "node:path"
import type { BootContext } from "./boot.js"
import { API_REFERENCE_PATH } from "./console/home/page.js"
import { consoleUrl } from "./console/urls.js"
import type { AppConfig } from "./platform/config.js"
import { devMailboxUrl } from "./platform/mailer.js"
import { writeLogLine } from "./platform/observability/log-sink.js"

/**
 * The variables that decide the public URLs and where the embedded database lives: a CLI run
 * in another terminal needs the same values, or `bootstrap` prints URLs of another port and
 * starts a second database (docs/decisions/foundation.md, "The first hour").
 */
const SHARED_WITH_THE_CLI = [
  "PORT",
  "DATA_DIR",
  "PLATFORM_DOMAIN",
  "CANONICAL_ISSUER_HOST",
  "MANAGEMENT_HOST",
  "PUBLIC_SCHEME",
] as const

const shellQuote = (value: string) =>
  /^[A-Za-z0-9_./:@%+,-]+$/.test(value) ? value : `'${value.replace(/'/g, "'\\''")}'`

/** `PORT=3100 DATA_DIR=... ` for the variables this process was given (empty for the defaults). */
export const cliEnvironmentPrefix = (env: NodeJS.ProcessEnv) =>
  SHARED_WITH_THE_CLI.filter((name) => env[name] !== undefined && env[name] !== "")
    .map((name) => `${name}=${shellQuote(env[name]!)} `)
    .join("")

/** A path as the person typing in this directory would write it. */
const displayPath = (path: string) => {
  const rel = relative(process.cwd(), resolve(path))
  return rel !== "" && !rel.startsWith("..") && !isAbsolute(rel) ? rel : resolve(path)
}

/**
 * Files that hold secrets (the bootstrap API key, the login helper's tokens) go under DATA_DIR,
 * never into the checkout's root where `git add .` would take them; .gitignore covers both
 * places all the same.
 */
export const secretFile = (config: AppConfig, name: "bootstrap.json" | "tokens.json") =>
  `${displayPath(config.dataDir)}/${name}`

export const printUrls = ({ config, embedded }: BootContext) => {
  const scheme = config.publicScheme
  const management = `${scheme}://${config.managementHost}`
  // Production output is JSON lines only, so log collectors can parse every line.
  if (config.production) {
    writeLogLine(
      JSON.stringify({
        level: "info",
        msg: "listening",
        port: config.port,
        management_url: management,
        console_url: consoleUrl(config),
        issuer_base: `${scheme}://${config.canonicalIssuerHost}/e/`,
      }) + "\n",
    )
    return
  }
  // The redirect below writes into DATA_DIR, which need not exist yet with DATABASE_URL set.
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 })
  const mailbox = config.smtpUrl === undefined && scheme === "http"
  process.stdout.write(
    [
      `authservice listening on ${config.listenHost ?? "every interface"}, port ${config.port}${embedded ? ` (embedded Postgres under ${config.dataDir})` : ""}`,
      `  Home:            ${scheme}://${config.canonicalIssuerHost}/`,
      `  Console:         ${consoleUrl(config)}`,
      `  Management API:  ${management}/v1   (reference: ${management}${API_REFERENCE_PATH})`,
      `  Issuers:         ${scheme}://${config.canonicalIssuerHost}/e/<environment_id>`,
      ...(mailbox ? [`  Dev mailbox:     ${devMailboxUrl(config)}   (login codes; no SMTP_URL)`] : []),
      `  Bootstrap:       ${cliEnvironmentPrefix(process.env)}npm run -s cli -- bootstrap --json > ${secretFile(config, "bootstrap.json")}`,
      `                   (it holds an API key: keep ${secretFile(config, "bootstrap.json")} and ${secretFile(config, "tokens.json")} private)`,
      `  Health:          ${management}/readyz`,
      "",
    ].join("\n"),
  )
}
