// A real worker process for the crash test: the graphile-worker pool (WorkerLive) against the
// test database given in DATABASE_URL / MASTER_KEY, with a fast heartbeat so that a SIGKILLed
// sibling is detected within seconds. Prints "ready <process>" once running.
import { NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { WorkerLive } from "../../src/jobs/worker.js"
import { parseConfig } from "../../src/platform/config.js"
import { AppLayer } from "../../src/runtime.js"

const config = parseConfig(process.env)
const keyring = { current: config.masterKey! }
const worker = WorkerLive({
  concurrency: 2,
  pollInterval: 100,
  heartbeat: { intervalMs: 250, staleAfterMs: Number(process.env["STALE_AFTER_MS"] ?? "2000") },
})
const ready = Layer.effectDiscard(Effect.sync(() => process.stdout.write(`ready ${process.pid}\n`)))
const program = Layer.launch(
  ready.pipe(
    Layer.provide(worker),
    Layer.provide(AppLayer(config, config.databaseUrl!, keyring, { maxConnections: 4 })),
  ),
)
NodeRuntime.runMain(program as Effect.Effect<never>)
