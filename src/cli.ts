import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import pg from "pg"
import { ConfigInvalid, parseConfig } from "./platform/config.js"
import { runningEmbeddedUrl, startEmbeddedPostgres } from "./platform/embedded-postgres.js"
import { loadKeyring } from "./platform/master-key.js"
import { AppLayer, prepareDatabase } from "./runtime.js"
import { bootstrap } from "./tenancy/bootstrap.js"
import { LOGIN_USAGE, login, LoginUsage, parseLoginFlags } from "./cli/login.js"

const usage = `usage: npm run cli -- bootstrap [--json]  |  ${LOGIN_USAGE}`

const reachable = async (url: string) => {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 })
  try {
    await client.connect()
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => {})
  }
}

const main = async () => {
  const [command, ...flags] = process.argv.slice(2)
  if (command === "login") {
    // An OIDC client of a running server: no database, no configuration of its own.
    const tokens = await login({
      ...parseLoginFlags(flags), timeoutMs: 5 * 60_000,
      announce: (url) => process.stderr.write(`Open this URL in a browser to sign in (waiting up to 5 minutes):\n\n  ${url}\n\n`),
    })
    process.stdout.write(JSON.stringify(tokens, null, 2) + "\n")
    return
  }
  if (command !== "bootstrap") throw new ConfigInvalid({ message: usage })
  const asJson = flags.includes("--json")
  const config = parseConfig(process.env)
  const keyring = loadKeyring(config)
  // Without DATABASE_URL, use the embedded Postgres of a running `npm start`, or start one.
  let url = config.databaseUrl
  let stop: (() => Promise<void>) | undefined
  if (url === undefined) {
    const running = runningEmbeddedUrl(config.dataDir)
    if (running !== undefined && await reachable(running)) url = running
    else {
      const started = await startEmbeddedPostgres(config.dataDir)
      url = started.url
      stop = started.stop
    }
  }
  try {
    const result = await Effect.runPromise(Effect.gen(function* () {
      yield* prepareDatabase(url, keyring)
      const sql = yield* SqlClient.SqlClient
      return yield* sql.withTransaction(bootstrap)
    }).pipe(Effect.provide(AppLayer(config, url, keyring, { maxConnections: 2 }))))
    if (asJson) process.stdout.write(JSON.stringify(result) + "\n")
    else {
      process.stdout.write(Object.entries(result).map(([k, v]) => `${k.padEnd(20)} ${v}`).join("\n") + "\n")
      process.stdout.write("The API key is shown only now: store it.\n")
    }
  } finally {
    await stop?.()
  }
}

main().then(() => process.exit(0), (e: unknown) => {
  process.stderr.write(`authservice cli: ${e instanceof ConfigInvalid || e instanceof LoginUsage ? e.message : e instanceof Error ? e.message.split("\n")[0] : String(e)}\n`)
  process.exit(1)
})
