import { NodeRuntime } from "@effect/platform-node"
import { Cause, Effect, Exit, Layer } from "effect"
import type { HttpServerError } from "effect/http"
import { type AppConfig, parseConfig } from "./platform/config.js"
import { ConfigInvalid } from "./platform/config-invalid.js"
import type { Keyring } from "./platform/crypto.js"
import { EmbeddedPostgresUnusable, startEmbeddedPostgres } from "./platform/embedded-postgres.js"
import { explainStartFailure } from "./platform/start-failure.js"
import { DEV_MAILER_IN_PRODUCTION_WARNING, devMailerRefusal } from "./platform/mailer.js"
import { loadKeyring, MasterKeyMismatch } from "./platform/master-key.js"
import { LoggerLive } from "./platform/observability/logger.js"
import { SchemaVersionMismatch } from "./platform/schema-version.js"
import { MetricsServerLive } from "./http/metrics.js"
import {
  forgetProcessOnExit,
  type ProcessKind,
  ProcessHeartbeatLive,
  processRegistration,
} from "./platform/process-heartbeat.js"
import { AppLayer, prepareDatabase } from "./runtime.js"

export interface BootContext {
  readonly config: AppConfig
  readonly databaseUrl: string
  readonly keyring: Keyring
  readonly embedded: boolean
}

/**
 * A process's own layer (listener, worker), built on the application's services; binding the
 * listener's port may fail.
 */
export type ProcessLayer = Layer.Layer<never, HttpServerError.ServeError, Layer.Success<ReturnType<typeof AppLayer>>>

const fail = (line: string): never => {
  process.stderr.write(`authservice: ${line}\n`)
  process.exit(1)
}

/** One line saying what to fix: never a stack trace, never `undefined` (src/platform/start-failure.ts). */
const explain = (cause: Cause.Cause<unknown>, config: AppConfig): string => {
  const error = Cause.squash(cause)
  if (error instanceof ConfigInvalid || error instanceof MasterKeyMismatch) return error.message
  if (error instanceof EmbeddedPostgresUnusable) return error.message
  if (error instanceof SchemaVersionMismatch) return error.message
  return explainStartFailure(error, {
    databaseUrl: config.databaseUrl,
    port: config.port,
    metricsPort: config.metricsPort,
  })
}

export const parseConfigOrExit = (): AppConfig => {
  try {
    return parseConfig(process.env)
  } catch (e) {
    return fail(e instanceof ConfigInvalid ? e.message : String(e))
  }
}

/**
 * Runs a process: configuration, database (embedded when DATABASE_URL is unset),
 * migrations and the master-key check, then the given layer until SIGINT/SIGTERM.
 * Shutdown closes layers in reverse: the listener drains, the worker stops, Postgres stops.
 */
export const boot = (
  kind: ProcessKind,
  makeLayer: (ctx: BootContext) => ProcessLayer,
  options: { readonly onReady?: (ctx: BootContext) => void } = {},
) => {
  const config = parseConfigOrExit()
  const mailRefusal = devMailerRefusal(config)
  if (mailRefusal !== undefined) return fail(mailRefusal)
  let keyring: Keyring
  try {
    keyring = loadKeyring(config)
  } catch (e) {
    return fail(
      e instanceof ConfigInvalid ? e.message : `cannot read or create the master key under DATA_DIR: ${String(e)}`,
    )
  }
  const program = Effect.gen(function* () {
    if (config.production && config.smtpUrl === undefined) yield* Effect.logWarning(DEV_MAILER_IN_PRODUCTION_WARNING)
    const embedded = config.databaseUrl === undefined
    const databaseUrl =
      config.databaseUrl ??
      (yield* Effect.acquireRelease(
        Effect.tryPromise({ try: () => startEmbeddedPostgres(config.dataDir), catch: (e) => e }),
        (pg) => Effect.promise(() => pg.stop()),
      ).pipe(
        Effect.tap((pg) =>
          pg.recovered === "orphan-stopped"
            ? Effect.logWarning(
                `stopped the embedded Postgres that an earlier run, killed before it could stop it, left running on ${config.dataDir}`,
              )
            : Effect.void,
        ),
      )).url
    const ctx: BootContext = { config, databaseUrl, keyring, embedded }
    yield* Effect.gen(function* () {
      // The process is listed (kind, master key ids) from its key check on, beating while it runs:
      // `master-key rotate` waits for every live process to hold both keys.
      const registration = yield* processRegistration(kind)
      yield* prepareDatabase(databaseUrl, { register: registration, migrate: config.migrateOnStart })
      // The ready hook runs once the process layer (listener, worker) is built.
      const ready = Layer.effectDiscard(Effect.sync(() => options.onReady?.(ctx)))
      return yield* Layer.launch(
        ready.pipe(
          Layer.provide(Layer.mergeAll(makeLayer(ctx), MetricsServerLive, ProcessHeartbeatLive(registration))),
        ),
      )
        // Also when the process layer fails to build (a port in use): no row left to hold a rotation.
        .pipe(
          Effect.ensuring(forgetProcessOnExit(registration.processId)),
          // SIGINT/SIGTERM: one line once the listener has drained and the worker has stopped.
          Effect.onInterrupt(() => Effect.logInfo("stopped", { process: kind })),
        )
    }).pipe(Effect.provide(AppLayer(config, databaseUrl, keyring)))
  }).pipe(
    Effect.provide(LoggerLive(config.production, config.logLevel)),
    Effect.scoped,
    Effect.catchCause((cause) =>
      Cause.hasInterruptsOnly(cause) ? Effect.void : Effect.sync(() => fail(explain(cause, config))),
    ),
  )
  // SIGTERM/SIGINT interrupt the program; a clean shutdown after that exits 0.
  NodeRuntime.runMain(program, {
    disableErrorReporting: true,
    teardown: (exit, onExit) => onExit(Exit.isSuccess(exit) || Cause.hasInterruptsOnly(exit.cause) ? 0 : 1),
  })
}
