import { randomBytes } from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Clock, type Duration, Effect, Exit, Layer, ManagedRuntime, Scope } from "effect"
import { TestClock } from "effect/testing"
import type { SpanProcessor } from "@opentelemetry/sdk-trace-base"
import { inject } from "vitest"
import { HttpServerLive } from "../../src/server.js"
import { WorkerLive } from "../../src/jobs/worker.js"
import { type AppConfig, parseConfig } from "../../src/platform/config.js"
import { freePort } from "../../src/platform/free-port.js"
import { AppLayer, prepareDatabase } from "../../src/runtime.js"
import { bootstrap } from "../../src/tenancy/bootstrap.js"
import { cloneDatabase } from "./template.js"
import { type RequestOptions, send } from "./http.js"

export interface TestApp {
  readonly port: number
  readonly config: AppConfig
  readonly databaseUrl: string
  /** Runs an Effect with the application's services (and the test clock). */
  readonly run: <A, E>(effect: Effect.Effect<A, E, any>) => Promise<A>
  /** Moves the application's clock (a TestClock) forward. */
  readonly advance: (duration: Duration.Input) => Promise<void>
  readonly now: () => number
  /**
   * Moves the application's clock forward to the wall clock (never back). Other processes
   * (child servers and workers) run on real time: a code minted here on a clock that fell
   * behind (a slow start of those processes) would already be expired for them.
   */
  readonly catchUpWithWallClock: () => Promise<void>
  readonly request: (host: string, path: string, options?: RequestOptions) => ReturnType<typeof send>
  readonly management: (path: string, options?: RequestOptions & { key?: string }) => ReturnType<typeof send>
  readonly issuer: (environmentId: string, path: string, options?: RequestOptions) => ReturnType<typeof send>
  readonly bootstrap: () => Promise<Bootstrapped>
  readonly close: () => Promise<void>
}

export interface Bootstrapped {
  readonly workspace_id: string
  readonly project_id: string
  readonly environment_id: string
  readonly api_key: string
  readonly management_url: string
  readonly issuer: string
  readonly interaction_domain: string
}

export interface StartOptions {
  readonly env?: Record<string, string>
  /** Also run a graphile-worker runner in this process. */
  readonly worker?: boolean
  /** Reuse this database (a restart) instead of cloning a fresh one. */
  readonly databaseUrl?: string
  /** Spans go here (OpenTelemetry), e.g. a SimpleSpanProcessor over an InMemorySpanExporter. */
  readonly spanProcessor?: SpanProcessor
}

/**
 * Starts the real server on a free port against a fresh database cloned from the
 * template. Time is a TestClock (set to the wall clock at start) that tests advance.
 */
export const startApp = async (options: StartOptions = {}): Promise<TestApp> => {
  const database =
    options.databaseUrl !== undefined
      ? { url: options.databaseUrl }
      : await cloneDatabase(inject("serverUrl"), inject("templateDb"))
  const port = await freePort()
  // MASTER_KEY / MASTER_KEY_PREVIOUS in options.env replace the random key (rotation tests).
  const masterKey = randomBytes(32).toString("base64url")
  const config = parseConfig({
    PORT: String(port),
    DATABASE_URL: database.url,
    MASTER_KEY: masterKey,
    DATA_DIR: mkdtempSync(join(tmpdir(), "authservice-data-")),
    LOG_REQUESTS: "false",
    ...options.env,
  })
  const keyring = { current: config.masterKey!, previous: config.masterKeyPrevious }
  const scope = Effect.runSync(Scope.make())
  const testClock = await Effect.runPromise(Scope.provide(TestClock.make(), scope))
  await Effect.runPromise(testClock.setTime(Date.now()))
  const clockLayer = Layer.succeed(Clock.Clock, testClock)
  const app = AppLayer(config, database.url, keyring, {
    maxConnections: 6,
    ...(options.spanProcessor ? { spanProcessor: options.spanProcessor } : {}),
  })
  const processLayer = options.worker
    ? Layer.mergeAll(HttpServerLive(port, config.listenHost), WorkerLive({ concurrency: 2, pollInterval: 100 }))
    : HttpServerLive(port, config.listenHost)
  const layer = Layer.mergeAll(processLayer, clockLayer).pipe(Layer.provideMerge(app), Layer.provideMerge(clockLayer))
  const runtime = ManagedRuntime.make(layer as Layer.Layer<any, unknown, never>)
  await runtime.runPromise(prepareDatabase(database.url))

  const run = <A, E>(effect: Effect.Effect<A, E, any>) =>
    runtime.runPromise(Effect.provideService(effect as Effect.Effect<A, E, never>, Clock.Clock, testClock))
  const request = (host: string, path: string, opts?: RequestOptions) => send(port, host, path, opts)
  let defaultKey: string | undefined
  return {
    port,
    config,
    databaseUrl: database.url,
    run,
    advance: (duration) => Effect.runPromise(testClock.adjust(duration)),
    now: () => testClock.currentTimeMillisUnsafe(),
    catchUpWithWallClock: () =>
      Effect.runPromise(testClock.adjust(Math.max(0, Date.now() - testClock.currentTimeMillisUnsafe()))),
    request,
    management: (path, opts = {}) => {
      const key = opts.key ?? defaultKey
      return request(config.managementHost, path, {
        ...opts,
        headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...opts.headers },
      })
    },
    issuer: (environmentId, path, opts) => request(config.canonicalIssuerHost, `/e/${environmentId}${path}`, opts),
    bootstrap: async () => {
      const result = await run(
        Effect.gen(function* () {
          const { SqlClient } = yield* Effect.promise(() => import("effect/sql"))
          const sql = yield* SqlClient.SqlClient
          return yield* sql.withTransaction(bootstrap)
        }),
      )
      defaultKey ??= result.api_key
      return result
    },
    close: async () => {
      await runtime.dispose()
      await Effect.runPromise(Scope.close(scope, Exit.void))
    },
  }
}
