import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import pg from "pg"
import { ConfigInvalid, parseConfig } from "./platform/config.js"
import { runningEmbeddedUrl, startEmbeddedPostgres } from "./platform/embedded-postgres.js"
import { loadKeyring } from "./platform/master-key.js"
import { AppLayer, prepareDatabase } from "./runtime.js"
import { bootstrap } from "./tenancy/bootstrap.js"
import { parsePurgeArgs, purgeUsage, runPurge } from "./cli-purge.js"

const usage = `usage: npm run cli -- bootstrap [--json]
       npm run cli -- purge-deleted-users [--environment-id <env_...>] [--older-than <N>d|h|m] [--dry-run]
       npm run cli -- <command> --help`
const bootstrapUsage = `usage: npm run cli -- bootstrap [--json]

Creates a Workspace, a Project, a test Environment and an API key with every scope, and prints
{workspace_id, project_id, environment_id, api_key, management_url, issuer, interaction_domain}.`

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
  if (command === undefined || command === "--help" || command === "help") return void process.stdout.write(usage + "\n")
  if (command !== "bootstrap" && command !== "purge-deleted-users") throw new ConfigInvalid({ message: usage })
  if (flags.includes("--help")) return void process.stdout.write((command === "bootstrap" ? bootstrapUsage : purgeUsage) + "\n")
  // Flags are checked before anything touches the database.
  const purgeArgs = command === "purge-deleted-users" ? parsePurgeArgs(flags) : undefined
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
    const layer = AppLayer(config, url, keyring, { maxConnections: 2 })
    if (purgeArgs !== undefined) {
      const report = await Effect.runPromise(Effect.gen(function* () {
        yield* prepareDatabase(url, keyring)
        return yield* runPurge(purgeArgs)
      }).pipe(Effect.provide(layer)))
      process.stdout.write(JSON.stringify(report) + "\n")
      return
    }
    const result = await Effect.runPromise(Effect.gen(function* () {
      yield* prepareDatabase(url, keyring)
      const sql = yield* SqlClient.SqlClient
      return yield* sql.withTransaction(bootstrap)
    }).pipe(Effect.provide(layer)))
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
  process.stderr.write(`authservice cli: ${e instanceof ConfigInvalid ? e.message : e instanceof Error ? e.message.split("\n")[0] : String(e)}\n`)
  process.exit(1)
})
