import { EventEmitter } from "node:events"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { run, type Runner, type Task, type WorkerEvents } from "graphile-worker"
import pg from "pg"
import { Config } from "../platform/config.js"
import { Crypto } from "../platform/crypto.js"
import { DatabaseUrl } from "../platform/database.js"
import { workerLogger } from "../platform/worker-logger.js"
import { beat, DEFAULT_HEARTBEAT, forget, type HeartbeatOptions, releaseStaleWorkers } from "./heartbeat.js"
import { crontab, tasks } from "./tasks.js"

export class Worker extends Context.Service<Worker, Runner>()("jobs/Worker") {}

/**
 * A graphile-worker runner whose tasks are Effects run with the application's services.
 * Stopping it (scope close) stops taking jobs and waits for running ones.
 * While it runs it beats (see ./heartbeat.ts) and releases the jobs of dead workers.
 */
export const WorkerLive = (options: { concurrency?: number; pollInterval?: number; heartbeat?: HeartbeatOptions } = {}) =>
  Layer.effect(Worker, Effect.gen(function* () {
    const url = yield* DatabaseUrl
    const sql = yield* SqlClient.SqlClient
    const crypto = yield* Crypto
    const context = yield* Effect.context<any>()
    const heartbeat = options.heartbeat ?? DEFAULT_HEARTBEAT
    const concurrency = options.concurrency ?? (yield* Config).workerConcurrency
    const pgPool = yield* Effect.acquireRelease(
      Effect.sync(() => new pg.Pool({ connectionString: url, max: Math.min(concurrency, 8) + 2 })
        .on("error", () => {}).on("connect", (client) => client.on("error", () => {}))),
      (pool) => Effect.promise(() => pool.end()))
    const taskList: Record<string, Task> = {}
    for (const [name, task] of Object.entries(tasks)) {
      taskList[name] = (payload) => Effect.runPromiseWith(context)(task(payload))
    }
    // The ids this process's jobs are locked under, for the heartbeat row: graphile-worker
    // 0.18 locks by pool id (batched job fetch) and may lock by worker id.
    const processId = `wkp_${yield* crypto.randomToken(16)}`
    const workerIds: Array<string> = []
    const events = new EventEmitter() as WorkerEvents
    events.on("pool:create", ({ workerPool }) => { workerIds.push(workerPool.id) })
    events.on("worker:create", ({ worker }) => { workerIds.push(worker.workerId) })
    const runner = yield* Effect.acquireRelease(
      Effect.promise(() => run({
        pgPool, taskList, crontab, logger: workerLogger, events,
        concurrency, pollInterval: options.pollInterval ?? 1000, noHandleSignals: true,
        // Batching (graphile-worker's performance options): the pool fetches and locks a few
        // jobs per query and completes finished jobs in one statement, instead of two round
        // trips per job. Jobs in the local queue are locked under the pool id, which the
        // heartbeat records, so a killed worker's queued jobs are released like its running ones.
        preset: { worker: { localQueue: { size: concurrency * 2 }, completeJobBatchDelay: 20, failJobBatchDelay: 20 } },
      })),
      (runner) => Effect.promise(() => runner.stop()).pipe(
        Effect.andThen(forget(processId).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.ignore))))
    const tick = Effect.gen(function* () {
      yield* beat(processId, workerIds)
      const released = yield* releaseStaleWorkers(heartbeat.staleAfterMs)
      if (released.length > 0) yield* Effect.logWarning("released the jobs of workers that stopped beating", { worker_ids: released })
    }).pipe(
      Effect.provideService(SqlClient.SqlClient, sql),
      Effect.catchCause((cause) => Effect.logError("worker heartbeat failed", cause)))
    yield* tick
    yield* Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep(heartbeat.intervalMs), tick)))
    return runner
  }))
