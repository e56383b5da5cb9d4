import "./require-supported-node.js"
import { boot } from "./boot.js"
import { HttpServerLive } from "./server.js"
import { printUrls } from "./banner.js"

// The HTTP server alone (production: run any number of these beside src/worker.ts).
boot("server", ({ config }) => HttpServerLive(config.port, config.listenHost), { onReady: printUrls })
