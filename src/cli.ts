import { Effect } from "effect"
import pg from "pg"
import { parseCommandLine, type Outcome, usage } from "./operator/commands.js"
import { parseConfig } from "./platform/config.js"
import { ConfigInvalid } from "./platform/config-invalid.js"
import { runningEmbeddedUrl, startEmbeddedPostgres } from "./platform/embedded-postgres.js"
import { loadKeyring } from "./platform/master-key.js"
import { forgetProcessOnExit, ProcessHeartbeatLive, processRegistration } from "./platform/process-heartbeat.js"
import { AppLayer, prepareDatabase } from "./runtime.js"
import { LOGIN_USAGE, login, LoginUsage, parseLoginFlags } from "./cli/login.js"

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

const print = (outcome: Outcome, asJson: boolean) => {
  if (asJson) return void process.stdout.write(JSON.stringify(outcome.json) + "\n")
  const lines = Object.entries(outcome.json).map(([k, v]) => `${k.padEnd(20)} ${typeof v === "object" && v !== null ? JSON.stringify(v) : String(v)}`)
  process.stdout.write(lines.join("\n") + "\n" + (outcome.note ? `${outcome.note}\n` : ""))
}

/** Operator commands (`npm run cli -- <command>`); see COMMANDS in src/operator/commands.ts. */
const main = async (): Promise<number> => {
  const argv = process.argv.slice(2)
  if (argv.length === 0 || argv[0] === "--help" || argv[0] === "help") {
    process.stdout.write(`${usage()}\n  ${LOGIN_USAGE.replace(/^npm run -s cli -- /, "")}\n`)
    return 0
  }
  if (argv[0] === "login") {
    // An OIDC client of a running server: no database, no configuration of its own.
    const tokens = await login({
      ...parseLoginFlags(argv.slice(1)), timeoutMs: 5 * 60_000,
      announce: (url) => process.stderr.write(`Open this URL in a browser to sign in (waiting up to 5 minutes):\n\n  ${url}\n\n`),
    })
    process.stdout.write(JSON.stringify(tokens, null, 2) + "\n")
    return 0
  }
  const parsed = parseCommandLine(argv)
  if (!parsed) throw new ConfigInvalid({ message: usage().split("\n").join(" ").replace(/\s+/g, " ") })
  const { command, args } = parsed
  if (args.help) {
    process.stdout.write(`usage: npm run cli -- ${command.synopsis}\n\n${command.description}\n`)
    return 0
  }
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
    const outcome = await Effect.runPromise(Effect.gen(function* () {
      // Listed among the running processes while it runs (a command holding only the old key
      // makes `master-key rotate` wait, like a server); with both keys it seals under the old one
      // until the switch, like a server (src/platform/master-key.ts).
      const registration = yield* processRegistration("cli")
      return yield* Effect.gen(function* () {
        yield* prepareDatabase(url, { register: registration })
        return yield* command.run(args, config).pipe(Effect.provide(ProcessHeartbeatLive(registration)))
      }).pipe(Effect.ensuring(forgetProcessOnExit(registration.processId)))
    }).pipe(Effect.provide(AppLayer(config, url, keyring, { maxConnections: 2 }))) as Effect.Effect<Outcome, unknown, never>)
    print(outcome, args.json || command.alwaysJson === true)
    return outcome.exitCode ?? 0
  } finally {
    await stop?.()
  }
}

main().then((code) => process.exit(code), (e: unknown) => {
  const message = e instanceof LoginUsage ? e.message : e instanceof Error ? e.message.split("\n")[0] : String(e)
  process.stderr.write(`authservice cli: ${message}\n`)
  process.exit(1)
})

