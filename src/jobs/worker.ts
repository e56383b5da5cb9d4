import { Context, Effect, Layer } from "effect"
import { run, type Runner, type Task } from "graphile-worker"
import pg from "pg"
import { DatabaseUrl } from "../platform/database.js"
import { workerLogger } from "../platform/worker-logger.js"
import { crontab, tasks } from "./tasks.js"

export class Worker extends Context.Service<Worker, Runner>()("jobs/Worker") {}

/**
 * A graphile-worker runner whose tasks are Effects run with the application's services.
 * Stopping it (scope close) stops taking jobs and waits for running ones.
 */
export const WorkerLive = (options: { concurrency?: number; pollInterval?: number } = {}) =>
  Layer.effect(Worker, Effect.gen(function* () {
    const url = yield* DatabaseUrl
    const context = yield* Effect.context<any>()
    const pgPool = yield* Effect.acquireRelease(
      Effect.sync(() => new pg.Pool({ connectionString: url, max: (options.concurrency ?? 4) + 2 })
        .on("error", () => {}).on("connect", (client) => client.on("error", () => {}))),
      (pool) => Effect.promise(() => pool.end()))
    const taskList: Record<string, Task> = {}
    for (const [name, task] of Object.entries(tasks)) {
      taskList[name] = (payload) => Effect.runPromiseWith(context)(task(payload))
    }
    return yield* Effect.acquireRelease(
      Effect.promise(() => run({
        pgPool, taskList, crontab, logger: workerLogger,
        concurrency: options.concurrency ?? 4, pollInterval: options.pollInterval ?? 1000, noHandleSignals: true,
      })),
      (runner) => Effect.promise(() => runner.stop()))
  }))
