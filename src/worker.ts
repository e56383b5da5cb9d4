import "./require-supported-node.js"
import { boot } from "./boot.js"
import { WorkerLive } from "./jobs/worker.js"

// The graphile-worker pool alone (production: run any number of these beside src/main.ts).
boot("worker", () => WorkerLive(), {
  onReady: ({ config }) =>
    process.stdout.write(
      config.production
        ? `${JSON.stringify({ level: "info", msg: "worker running" })}\n`
        : "authservice worker: running\n",
    ),
})
