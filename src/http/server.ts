import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { NodeHttpServer } from "@effect/platform-node"
import { Clock, Effect, Layer, Option, Tracer } from "effect"
import { Headers, HttpServer, HttpTraceContext } from "effect/http"
import { LiveStateCacheLive } from "../oidc/access-token/live-cache.js"
import { Config } from "../platform/config.js"
import { Ids } from "../platform/ids.js"
import { CurrentMetrics } from "../platform/observability/metrics.js"
import { makeHttpApp } from "./app.js"
import { logRequest } from "./log.js"
import { makeStaticAnswers, StaticAnswers, writeStaticAnswer } from "./static-answers.js"

/**
 * The HTTP listener: one server for every surface; in-flight requests finish on shutdown.
 *
 * Before a request reaches the Effect application, the listener answers the issuer's public
 * documents from memory when it holds a fresh answer for exactly that target
 * (src/http/static-answers.ts): GET or HEAD on the canonical issuer host, `/e/{id}/oauth2/jwks`
 * or `/e/{id}/.well-known/openid-configuration` without a query. Those answers carry a
 * request id and write the request's log line like every other answer. Everything else,
 * and every first request, goes through the application unchanged.
 */
export const HttpServerLive = (port: number, host?: string) =>
  Layer.unwrap(Effect.gen(function* () {
    const config = yield* Config
    const ids = yield* Ids
    const clock = yield* Clock.Clock
    const context = yield* Effect.context<never>()
    const answers = makeStaticAnswers()
    const app = yield* makeHttpApp

    const metrics = yield* CurrentMetrics
    // With a tracer that exports (OTLP), every request goes through the application and gets
    // its server span; memory answers are for the untraced (native tracer) case only.
    const traced = (yield* Tracer.Tracer) !== Tracer.nativeTracer

    const fromMemory = (request: IncomingMessage, response: ServerResponse): boolean => {
      const method = request.method
      if (traced || (method !== "GET" && method !== "HEAD")) return false
      const target = request.url
      if (target === undefined || !target.startsWith("/e/")) return false
      if (request.headers.host?.toLowerCase() !== config.canonicalIssuerHost) return false
      const started = clock.currentTimeNanosUnsafe()
      const answer = answers.lookup(target, Number(started / 1_000_000n))
      if (answer === undefined) return false
      const requestId = Effect.runSyncWith(context)(ids.make("req"))
      const status = writeStaticAnswer(request, response, answer, requestId)
      const duration = Number(clock.currentTimeNanosUnsafe() - started) / 1e6
      // The same metrics and log fields as src/http/app.ts, with the route template matched.
      const route = `/e/{environment_id}${answer.path}`
      const labels = { surface: "issuer", method, route, status: String(status) }
      metrics.httpRequests.inc(labels)
      metrics.httpDuration.observe(labels, duration / 1000)
      if (config.logRequests) {
        const traceId = Option.getOrUndefined(Option.map(HttpTraceContext.fromHeaders(Headers.fromRecordUnsafe(request.headers as Record<string, string>)), (c) => c.traceId))
        logRequest(config, {
          at: clock.currentTimeMillisUnsafe(), requestId, inbound: request.headers["x-request-id"] as string | undefined, traceId,
          method, host: request.headers.host, surface: "issuer", route, url: target, status, duration,
        })
      }
      return true
    }

    const server = createServer({ keepAliveTimeout: 5_000 })
    // The Effect adapter listens to "request"; an answer from memory is given before it is told.
    const emit = server.emit.bind(server) as (event: string, ...args: Array<unknown>) => boolean
    server.emit = ((event: string, ...args: Array<unknown>) =>
      event === "request" && fromMemory(args[0] as IncomingMessage, args[1] as ServerResponse) ? true : emit(event, ...args)) as typeof server.emit
    server.once("close", answers.close)

    return HttpServer.serve(Effect.provideService(app, StaticAnswers, answers)).pipe(
      Layer.provide(NodeHttpServer.layer(() => server, { port, ...(host ? { host } : {}), gracefulShutdownTimeout: "10 seconds" })))
  })).pipe(Layer.provide(LiveStateCacheLive))
