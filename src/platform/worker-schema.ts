import { Effect } from "effect"
import { runMigrations } from "graphile-worker"
import pg from "pg"
import { workerLogger } from "./worker-logger.js"

/** Installs or upgrades graphile-worker's schema, so `add_job` works before any worker has started. */
export const installWorkerSchema = (url: string) =>
  Effect.promise(async () => {
    const pgPool = new pg.Pool({ connectionString: url, max: 1 })
    pgPool.on("error", () => {}).on("connect", (client) => client.on("error", () => {}))
    try {
      await runMigrations({ pgPool, logger: workerLogger })
    } finally {
      await pgPool.end()
    }
  })
