import "./require-supported-node.js"
import { Layer } from "effect"
import { printUrls } from "./banner.js"
import { boot } from "./boot.js"
import { HttpServerLive } from "./server.js"
import { WorkerLive } from "./jobs/worker.js"

// `npm start`: server and worker in one process, embedded Postgres unless DATABASE_URL is set.
boot("server+worker", ({ config }) => Layer.mergeAll(HttpServerLive(config.port, config.listenHost), WorkerLive()), {
  onReady: printUrls,
})
