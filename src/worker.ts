import "./require-supported-node.js"
import { boot } from "./boot.js"
import { WorkerLive } from "./jobs/worker.js"
import { writeLogLine } from "./platform/observability/log-sink.js"

// The graphile-worker pool alone (production: run any number of these beside src/main.ts).
boot("worker", () => WorkerLive(), {
  onReady: ({ config }) =>
    config.production
      ? writeLogLine(`${JSON.stringify({ level: "info", msg: "worker running" })}\n`)
      : process.stdout.write("authservice worker: running\n"),
})
