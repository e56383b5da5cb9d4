import { createServer } from "node:http"
import { NodeHttpServer } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { HttpServer } from "effect/http"
import { makeHttpApp } from "./app.js"

/** The HTTP listener: one server for every surface; in-flight requests finish on shutdown. */
export const HttpServerLive = (port: number, host?: string) =>
  Layer.unwrap(Effect.map(makeHttpApp, (app) => HttpServer.serve(app))).pipe(
    Layer.provide(NodeHttpServer.layer(() => createServer({ keepAliveTimeout: 5_000 }), {
      port, ...(host ? { host } : {}), gracefulShutdownTimeout: "10 seconds",
    })))
