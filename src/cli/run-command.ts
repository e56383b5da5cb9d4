import { Effect } from "effect"
import type { Args, CommandLine } from "../operator/command-line.js"
import { COMMAND_RUNS, type Outcome } from "../operator/commands.js"
import { parseConfig } from "../platform/config.js"
import { useOrStartEmbeddedPostgres } from "../platform/embedded-postgres.js"
import { loadKeyring } from "../platform/master-key.js"
import { forgetProcessOnExit, ProcessHeartbeatLive, processRegistration } from "../platform/process-heartbeat.js"
import { AppLayer, prepareDatabase } from "../runtime.js"

const print = (outcome: Outcome, asJson: boolean) => {
  if (asJson) return void process.stdout.write(JSON.stringify(outcome.json) + "\n")
  const lines = Object.entries(outcome.json).map(
    ([k, v]) => `${k.padEnd(20)} ${typeof v === "object" && v !== null ? JSON.stringify(v) : String(v)}`,
  )
  process.stdout.write(lines.join("\n") + "\n" + (outcome.note ? `${outcome.note}\n` : ""))
}

/**
 * Runs one operator command whose flags src/cli.ts has checked: with the configuration of the
 * environment and the application's services, against DATABASE_URL or, without it, the embedded
 * Postgres of a running `npm start` (or one it starts). Prints the outcome; returns the exit code.
 */
export const runCommand = async (command: CommandLine, args: Args): Promise<number> => {
  const config = parseConfig(process.env)
  const keyring = loadKeyring(config)
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
          return yield* COMMAND_RUNS[command.name](args, config).pipe(
            Effect.provide(ProcessHeartbeatLive(registration)),
          )
        }).pipe(Effect.ensuring(forgetProcessOnExit(registration.processId)))
      }).pipe(Effect.provide(AppLayer(config, url, keyring, { maxConnections: 2 }))),
    )
    print(outcome, args.json || command.alwaysJson === true)
    return outcome.exitCode ?? 0
  } finally {
    await stop?.()
  }
}
