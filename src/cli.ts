import { Effect } from "effect"
import {
  CliUsage,
  commandHelp,
  COMMANDS,
  findCommand,
  parseCommandLine,
  type Outcome,
  usage,
} from "./operator/commands.js"
import { parseConfig } from "./platform/config.js"
import { useOrStartEmbeddedPostgres } from "./platform/embedded-postgres.js"
import { loadKeyring } from "./platform/master-key.js"
import { forgetProcessOnExit, ProcessHeartbeatLive, processRegistration } from "./platform/process-heartbeat.js"
import { AppLayer, prepareDatabase } from "./runtime.js"
import { describeUnknown, explainConnectionFailure } from "./platform/start-failure.js"
import { LOGIN_COMMAND, login, parseLoginFlags } from "./cli/login.js"

const print = (outcome: Outcome, asJson: boolean) => {
  if (asJson) return void process.stdout.write(JSON.stringify(outcome.json) + "\n")
  const lines = Object.entries(outcome.json).map(
    ([k, v]) => `${k.padEnd(20)} ${typeof v === "object" && v !== null ? JSON.stringify(v) : String(v)}`,
  )
  process.stdout.write(lines.join("\n") + "\n" + (outcome.note ? `${outcome.note}\n` : ""))
}

/**
 * Operator commands (`npm run cli -- <command>`); see COMMANDS in src/operator/commands.ts.
 * Exit codes: 0 done, 1 refused or failed (one line why), 2 wrong use (one line why, then usage
 * where it helps), 3 `master-key rotate` not finished.
 */
const entry = async (): Promise<number> => {
  const argv = process.argv.slice(2)
  if (argv.length === 0 || argv[0] === "--help" || argv[0] === "-h" || (argv[0] === "help" && argv.length === 1)) {
    process.stdout.write(`${usage([LOGIN_COMMAND])}\n`)
    return 0
  }
  // `help <command>` is `<command> --help`.
  if (argv[0] === "help") return main([...argv.slice(1), "--help"])
  return main(argv)
}

const unknownCommand = (argv: ReadonlyArray<string>) =>
  new CliUsage(
    `unknown command "${
      argv
        .filter((a) => !a.startsWith("-"))
        .slice(0, 2)
        .join(" ") || argv[0]
    }"; the commands are: ${[...COMMANDS, LOGIN_COMMAND].map((c) => c.name).join(", ")}\n${usage([LOGIN_COMMAND])}`,
  )

const main = async (argv: ReadonlyArray<string>): Promise<number> => {
  if (argv[0] === "login") {
    if (argv.includes("--help") || argv.includes("-h")) {
      process.stdout.write(commandHelp(LOGIN_COMMAND))
      return 0
    }
    // An OIDC client of a running server: no database, no configuration of its own.
    const tokens = await login({
      ...parseLoginFlags(argv.slice(1)),
      timeoutMs: 5 * 60_000,
      announce: (url) =>
        process.stderr.write(`Open this URL in a browser to sign in (waiting up to 5 minutes):\n\n  ${url}\n\n`),
    })
    process.stdout.write(JSON.stringify(tokens, null, 2) + "\n")
    return 0
  }
  if (!findCommand(argv)) throw unknownCommand(argv)
  const parsed = parseCommandLine(argv)
  if (!parsed) throw unknownCommand(argv)
  const { command, args } = parsed
  if (args.help) {
    process.stdout.write(commandHelp(command))
    return 0
  }
  const config = parseConfig(process.env)
  const keyring = loadKeyring(config)
  // Without DATABASE_URL, use the embedded Postgres of a running `npm start`, or start one.
  let url = config.databaseUrl
  let stop: (() => Promise<void>) | undefined
  if (url === undefined) ({ url, stop } = await useOrStartEmbeddedPostgres(config.dataDir))
  try {
    const outcome = await Effect.runPromise(
      Effect.gen(function* () {
        // Listed among the running processes while it runs (a command holding only the old key
        // makes `master-key rotate` wait, like a server); with both keys it seals under the old one
        // until the switch, like a server (src/platform/master-key.ts).
        const registration = yield* processRegistration("cli")
        return yield* Effect.gen(function* () {
          yield* prepareDatabase(url, { register: registration, migrate: config.migrateOnStart })
          return yield* command.run(args, config).pipe(Effect.provide(ProcessHeartbeatLive(registration)))
        }).pipe(Effect.ensuring(forgetProcessOnExit(registration.processId)))
      }).pipe(Effect.provide(AppLayer(config, url, keyring, { maxConnections: 2 }))),
    )
    print(outcome, args.json || command.alwaysJson === true)
    return outcome.exitCode ?? 0
  } finally {
    await stop?.()
  }
}

entry().then(
  (code) => process.exit(code),
  (e: unknown) => {
    if (e instanceof CliUsage) {
      process.stderr.write(`authservice cli: ${e.message}\n`)
      process.exit(2)
    }
    // A database it cannot use says why (refused, password, no such database) and what to change.
    const databaseUrl = process.env["DATABASE_URL"] || undefined
    const line = explainConnectionFailure(e, { databaseUrl, port: 0 }) ?? describeUnknown(e)
    process.stderr.write(`authservice cli: ${line}\n`)
    process.exit(1)
  },
)
