import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { NodeHttpServer } from "@effect/platform-node"
import { Clock, Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { LiveStateCache, LiveStateCacheLive } from "./oidc/access-token/live-cache.js"
import { Config } from "./platform/config.js"
import { CurrentMetrics } from "./platform/observability/metrics.js"
import { makeHttpApp } from "./http/app.js"
import { makeListenerSpans } from "./http/listener-spans.js"
import { makeFastLane } from "./oidc/access-token/fast-lane.js"
import { makeUserinfoFromMemory } from "./oidc/userinfo/from-memory.js"
import { makeIntrospectionFromMemory } from "./oidc/introspect/from-memory.js"
import { makeIntrospectionCounter } from "./oidc/introspect/caller.js"
import { makeStaticAnswers, StaticAnswers } from "./http/static-answers.js"
import { allRoutes } from "./routes.js"

/**
 * The HTTP listener: one server for every surface; in-flight requests finish on shutdown.
 *
 * Before a request reaches the Effect application, the listener answers from memory what it
 * holds a still-true answer for (src/oidc/access-token/fast-lane.ts: the public documents,
 * remembered UserInfo and introspection answers, both computed from memory for new tokens). Everything else, and every first
 * request, goes through the application unchanged.
 */
export const HttpServerLive = (port: number, host?: string) =>
  Layer.unwrap(
    Effect.gen(function* () {
      const config = yield* Config
      const clock = yield* Clock.Clock
      const answers = makeStaticAnswers()
      const app = yield* makeHttpApp(allRoutes(config))

      const metrics = yield* CurrentMetrics
      const liveCache = yield* LiveStateCache
      let handOff: (request: IncomingMessage, response: ServerResponse) => void = () => {}
      const fastLane = makeFastLane({
        config,
        clock,
        metrics,
        staticAnswers: answers,
        answer: liveCache.answer,
        computeUserinfo: makeUserinfoFromMemory(liveCache, clock),
        computeIntrospection: makeIntrospectionFromMemory(liveCache, clock, yield* makeIntrospectionCounter),
        recordSpan: yield* makeListenerSpans,
        handOff: (request, response) => handOff(request, response),
      })

      const server = createServer({ keepAliveTimeout: 5_000 })
      // The Effect adapter listens to "request"; an answer from memory is given before it is told.
      const emit = server.emit.bind(server) as (event: string, ...args: Array<unknown>) => boolean
      handOff = (request, response) => {
        emit("request", request, response)
      }
      server.emit = ((event: string, ...args: Array<unknown>) =>
        event === "request" && fastLane(args[0] as IncomingMessage, args[1] as ServerResponse)
          ? true
          : emit(event, ...args)) as typeof server.emit
      server.once("close", answers.close)

      return HttpServer.serve(Effect.provideService(app, StaticAnswers, answers)).pipe(
        Layer.provide(
          NodeHttpServer.layer(() => server, {
            port,
            ...(host ? { host } : {}),
            gracefulShutdownTimeout: "10 seconds",
          }),
        ),
      )
    }),
  ).pipe(Layer.provide(LiveStateCacheLive))
