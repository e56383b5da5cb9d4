import { boot } from "./boot.js"
import { WorkerLive } from "./jobs/worker.js"

// The graphile-worker pool alone (production: run any number of these beside src/main.ts).
boot(() => WorkerLive(), { onReady: () => process.stdout.write("authservice worker: running\n") })
