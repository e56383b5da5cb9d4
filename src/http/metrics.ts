import { createHash, timingSafeEqual } from "node:crypto"
import { createServer } from "node:http"
import { Clock, Effect, Layer } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import type { SqlClient } from "effect/sql"
import { MethodNotAllowed } from "./errors.js"
import { Config } from "../platform/config.js"
import { MetricsTokenRequired } from "../platform/observability/errors.js"
import { type AppMetrics, CurrentMetrics } from "../platform/observability/metrics.js"
import { readGauges } from "../platform/observability/metrics-repo.js"
import { withCallSpan } from "../platform/observability/span.js"

const digest = (value: string) => createHash("sha256").update(value).digest()

/** Constant-time comparison of the presented bearer token with METRICS_TOKEN. */
export const metricsAuthorized = (token: string | undefined, authorization: string | undefined): boolean => {
  if (token === undefined) return true
  const m = /^Bearer ([^\s]+)$/i.exec(authorization ?? "")
  return m !== null && timingSafeEqual(digest(m[1]!), digest(token))
}

/**
 * The numbers that need the database (queue depth, delivery lag, database connections): read
 * within a bound, and on failure left out of the scrape rather than failing it, so a scrape
 * during an outage still serves every metric this process holds (request counts, job
 * failures, the pools) and `authservice_metrics_scrape_error{part="database"}` says what is
 * missing. A stale queue depth would look like a healthy queue, hence reset, not kept.
 */
const readDatabaseGauges = (metrics: AppMetrics, now: Date) =>
  readGauges(now).pipe(
    Effect.timeout(DATABASE_GAUGES_TIMEOUT),
    // biome-ignore lint/suspicious/useIterableCallbackReturn: Effect.map over the gauges' rows, not Array.map
    Effect.map(([states, lag, connections]) => {
      metrics.queueDepth.reset()
      for (const state of ["locked", "due", "scheduled", "dead"]) metrics.queueDepth.set({ state }, 0)
      for (const row of states) metrics.queueDepth.set({ state: row.state }, row.n)
      metrics.queueLag.reset()
      for (const row of lag) metrics.queueLag.set({ task: row.task }, Math.max(0, row.lag))
      metrics.dbConnections.reset()
      for (const row of connections) metrics.dbConnections.set({ pool: "sql", state: row.state }, row.n)
      metrics.scrapeError.set({ part: "database" }, 0)
    }),
    Effect.catchCause((cause) =>
      Effect.gen(function* () {
        metrics.queueDepth.reset()
        metrics.queueLag.reset()
        metrics.dbConnections.reset()
        metrics.scrapeError.set({ part: "database" }, 1)
        yield* Effect.logWarning("metrics: the database gauges could not be read; served without them", cause)
      }),
    ),
  )

/** Prometheus' default scrape timeout is 10 s: answer well within it. */
const DATABASE_GAUGES_TIMEOUT = "3 seconds"

/** Reads the gauges that describe shared state (queue, connections), then renders the registry. */
export const scrape = Effect.gen(function* () {
  const metrics = yield* CurrentMetrics
  const now = new Date(yield* Clock.currentTimeMillis)
  yield* readDatabaseGauges(metrics, now)
  for (const report of metrics.beforeScrape) report()
  return { body: yield* Effect.promise(() => metrics.registry.metrics()), contentType: metrics.registry.contentType }
}).pipe(withCallSpan("metrics.scrape"))

const challenge = new MetricsTokenRequired({ wwwAuthenticate: `Bearer realm="metrics"` })

/** GET /metrics on the Management host (METRICS_PORT unset; in production only with METRICS_TOKEN). */
export const metricsEndpoint = Effect.gen(function* () {
  const config = yield* Config
  const request = yield* HttpServerRequest.HttpServerRequest
  if (request.method !== "GET" && request.method !== "HEAD")
    return yield* new MethodNotAllowed({ allow: ["GET", "HEAD"] })
  if (!metricsAuthorized(config.metricsToken, request.headers["authorization"])) return yield* challenge
  const { body, contentType } = yield* scrape
  return HttpServerResponse.text(body, { contentType, headers: { "cache-control": "no-store" } })
})

export const METRICS_NOT_SERVED_WARNING =
  "metrics are not served: in production /metrics is never open on the public host; set METRICS_PORT (a listener of its own) or METRICS_TOKEN (a bearer token on the Management host)"

/**
 * METRICS_PORT: a listener that serves only `/metrics` (kept off the public ingress; the
 * worker process, which has no HTTP server, exposes its job metrics this way). In production
 * without it or METRICS_TOKEN, nothing serves the metrics, and the process says so once.
 */
export const MetricsServerLive = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* Config
    if (config.metricsPort === undefined) {
      return config.production && config.metricsToken === undefined
        ? Layer.effectDiscard(Effect.logWarning(METRICS_NOT_SERVED_WARNING))
        : Layer.empty
    }
    const port = config.metricsPort
    return Layer.effectDiscard(
      Effect.gen(function* () {
        const context = yield* Effect.context<SqlClient.SqlClient | Config>()
        const run = Effect.runPromiseWith(context)
        const server = createServer((req, res) => {
          const path = (req.url ?? "/").split("?")[0]
          if (path !== "/metrics") return void res.writeHead(404, { "content-type": "text/plain" }).end("not found\n")
          if (req.method !== "GET" && req.method !== "HEAD")
            return void res.writeHead(405, { allow: "GET, HEAD" }).end()
          if (!metricsAuthorized(config.metricsToken, req.headers.authorization)) {
            return void res
              .writeHead(401, { "www-authenticate": challenge.wwwAuthenticate, "content-type": "text/plain" })
              .end("unauthorized\n")
          }
          run(scrape).then(
            ({ body, contentType }) =>
              res.writeHead(200, { "content-type": contentType, "cache-control": "no-store" }).end(body),
            () => res.writeHead(503, { "content-type": "text/plain" }).end("metrics unavailable\n"),
          )
        })
        yield* Effect.acquireRelease(
          Effect.callback<void, Error>((resume) => {
            server.once("error", (e) => resume(Effect.fail(e)))
            server.listen(port, () => resume(Effect.void))
          }),
          () =>
            Effect.callback<void>((resume) => {
              server.close(() => resume(Effect.void))
              server.closeAllConnections()
            }),
        )
      }),
    )
  }),
)
