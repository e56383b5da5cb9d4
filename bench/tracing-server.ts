import { Layer, References } from "effect"
import { printUrls } from "../src/banner.js"
import { boot } from "../src/boot.js"
import { HttpServerLive } from "../src/server.js"

// src/main.ts with Effect's tracer switched off entirely (References.TracerEnabled = false): no
// span is even created for our Effect.withSpan calls or the SQL statements. Used only by
// bench/tracing-overhead.ts as the zero point for the native tracer's cost.
boot(
  "server",
  ({ config }) =>
    HttpServerLive(config.port, config.listenHost).pipe(Layer.provide(Layer.succeed(References.TracerEnabled, false))),
  { onReady: printUrls },
)
