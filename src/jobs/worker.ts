import { EventEmitter } from "node:events"
import { Clock, Context, Effect, Exit, Layer, Ref, Schedule, type Tracer } from "effect"
import { SqlClient } from "effect/sql"
import { run, type Runner, type Task, type WorkerEvents } from "graphile-worker"
import pg from "pg"
import { Config } from "../platform/config.js"
import { Crypto } from "../platform/crypto.js"
import { DatabaseUrl } from "../platform/database.js"
import { CurrentMetrics } from "../platform/observability/metrics.js"
import { onRealClock } from "../platform/real-time.js"
import { workerLogger } from "../platform/worker-logger.js"
import {
  beat,
  DEFAULT_HEARTBEAT,
  forget,
  type HeartbeatOptions,
  releaseStaleWorkers,
  releaseWorkers,
} from "./heartbeat.js"
import { crontab, tasks, type TaskServices } from "./tasks.js"
import { withCallSpan } from "../platform/observability/span.js"
import { spanOfTraceparent, traceparentOfPayload } from "../platform/observability/trace-context.js"

/**
 * One job attempt: a consumer span, the child of the span that queued the job when its payload
 * carries that span's `traceparent` (the request that queued a webhook delivery and the
 * delivery are one trace), else a root span of its own (cron jobs, jobs queued untraced),
 * one log line with task, job id, attempt, outcome and duration (docs/architecture.md, Operability), and
 * the job counters. A failure is re-raised so graphile-worker schedules the retry.
 */
const attempt = Effect.fnUntraced(
  function* <E, R>(
    task: string,
    jobId: string,
    attemptNo: number,
    run: Effect.Effect<void, E, R>,
    _queuedBy: Tracer.ExternalSpan | undefined,
  ): Effect.fn.Return<void, E, R> {
    const metrics = yield* CurrentMetrics
    const started = yield* Clock.currentTimeNanos
    const exit = yield* Effect.exit(run)
    const seconds = Number((yield* Clock.currentTimeNanos) - started) / 1e9
    const outcome = Exit.isSuccess(exit) ? "completed" : "failed"
    metrics.jobs.inc({ task, outcome })
    metrics.jobDuration.observe({ task }, seconds)
    const line = { task, job_id: jobId, attempt: attemptNo, outcome, duration_ms: Math.round(seconds * 10_000) / 10 }
    if (Exit.isSuccess(exit)) yield* Effect.logInfo("job", line)
    else yield* Effect.logWarning("job", line, exit.cause)
    return yield* exit
  },
  (effect, task, jobId, attemptNo, _run, queuedBy) =>
    effect.pipe(
      withCallSpan(`job ${task}`, {
        kind: "consumer",
        ...(queuedBy === undefined ? { root: true } : { parent: queuedBy }),
        attributes: { "job.task": task, "job.id": jobId, "job.attempt": attemptNo },
      }),
    ),
)

/** How long a runner's start waits for its notify listener and cron to be up. */
const STARTUP_SETTLE_MS = 5_000

/**
 * Resolves once graphile-worker's notify listener has connected and its cron has started (they
 * connect after `run` resolves), or after STARTUP_SETTLE_MS when the database makes them retry.
 * A runner stopped before then has its pool ended under those connects, which graphile-worker
 * reports as errors ("Cannot use a pool after calling end on the pool") on a clean Ctrl-C.
 */
const startupSettled = (events: WorkerEvents) => {
  const seen = (name: "pool:listen:success" | "cron:started") =>
    new Promise<void>((resolve) => events.once(name, () => resolve()))
  return Promise.race([
    Promise.all([seen("pool:listen:success"), seen("cron:started")]).then(() => undefined),
    new Promise<void>((resolve) => setTimeout(resolve, STARTUP_SETTLE_MS).unref()),
  ])
}

interface Running {
  readonly runner: Runner
  /**
   * The runner's own connections. Ended when the runner is retired: a graphile-worker runner that
   * stopped after a fatal pool error can keep fetching jobs, and a fetch of a runner whose ids were
   * already released locked a job nobody runs, for graphile-worker's 4 hours (test/faults, the
   * restart then the freeze). An ended pool refuses every new statement.
   */
  readonly pool: pg.Pool
  /** graphile-worker ids (pool and workers) that lock this runner's jobs. */
  readonly ids: ReadonlyArray<string>
  readonly lost: Promise<string>
  readonly markLost: (why: string) => void
  /** performance.now() when it started. */
  readonly startedAt: number
}

/** What the supervisor, the heartbeat and the shutdown share, in one `Ref`. */
interface RunnerState {
  /** The runner taking jobs. */
  readonly current: Running
  /**
   * Ids of retired runners whose jobs are not yet released: they stay in the heartbeat row,
   * so if this process dies first, another one's stale sweep releases them.
   */
  readonly retired: ReadonlyArray<string>
  /** The worker's scope is closing: no runner is started any more. */
  readonly stopping: boolean
  /** The last heartbeat failed: the next one that succeeds marks the runner lost. */
  readonly databaseWasDown: boolean
}

/** A runner lost sooner than this after its start counts as a quick loss (replacements back off). */
const QUICK_LOSS_MS = 10_000

/**
 * Backoff between attempts to start a runner while the database does not answer, and between
 * replacements of runners lost one after another: 500 ms, doubling, at most 10 s.
 */
const RESTART_BACKOFF = Schedule.min([Schedule.exponential("500 millis"), Schedule.spaced("10 seconds")])

export class Worker extends Context.Service<Worker, { readonly current: () => Runner }>()("jobs/Worker") {}

/**
 * A graphile-worker runner whose tasks are Effects run with the application's services.
 * Stopping it (scope close) stops taking jobs and waits for running ones.
 * While it runs it beats (see ./heartbeat.ts) and releases the jobs of dead workers.
 */
export const WorkerLive = (
  options: { concurrency?: number; pollInterval?: number; heartbeat?: HeartbeatOptions } = {},
) =>
  Layer.effect(
    Worker,
    Effect.gen(function* () {
      const url = yield* DatabaseUrl
      const sql = yield* SqlClient.SqlClient
      const crypto = yield* Crypto
      const context = yield* Effect.context<TaskServices>()
      const heartbeat = options.heartbeat ?? DEFAULT_HEARTBEAT
      const config = yield* Config
      const concurrency = options.concurrency ?? config.workerConcurrency
      // Each runner's job-queue pool is bounded like the application's (src/platform/bounded-pg-client.ts):
      // a database that stops answering fails graphile-worker's queries instead of holding them.
      // Named per process and runner in pg_stat_activity, so an operator sees whose connections they are.
      let runners = 0
      const makePool = () =>
        new pg.Pool({
          application_name: `authservice-worker ${process.pid} runner ${++runners}`,
          connectionString: url,
          max: concurrency + 2,
          connectionTimeoutMillis: config.databaseConnectTimeoutMs,
          query_timeout: config.databaseStatementTimeoutMs,
        })
          .on("error", () => {})
          .on("connect", (client) => client.on("error", () => {}))
      // Pools not yet ended: the current runner's, and a retired one's until its end completes.
      const pools = new Set<pg.Pool>()
      // A second end of a pool (the scope closing while a retired one still ends) is refused by pg: ignored.
      const endPool = (pool: pg.Pool) =>
        pool
          .end()
          .catch(() => {})
          .finally(() => pools.delete(pool))
      yield* Effect.addFinalizer(() => Effect.promise(() => Promise.all([...pools].map(endPool))))
      const metrics = yield* CurrentMetrics
      const reportPool = () => {
        const sum = (count: (pool: pg.Pool) => number) => [...pools].reduce((n, pool) => n + count(pool), 0)
        metrics.workerPool.set(
          { state: "total" },
          sum((pool) => pool.totalCount),
        )
        metrics.workerPool.set(
          { state: "idle" },
          sum((pool) => pool.idleCount),
        )
        metrics.workerPool.set(
          { state: "waiting" },
          sum((pool) => pool.waitingCount),
        )
      }
      metrics.beforeScrape.add(reportPool)
      yield* Effect.addFinalizer(() => Effect.sync(() => metrics.beforeScrape.delete(reportPool)))
      const taskList: Record<string, Task> = {}
      for (const [name, task] of Object.entries(tasks)) {
        taskList[name] = (payload, helpers) =>
          Effect.runPromiseWith(context)(
            attempt(
              name,
              helpers.job.id,
              helpers.job.attempts,
              task(payload),
              spanOfTraceparent(traceparentOfPayload(payload)),
            ),
          )
      }
      // The ids this process's jobs are locked under, for the heartbeat row: graphile-worker
      // 0.18 locks by pool id (batched job fetch) and may lock by worker id.
      // The OS process id is part of it, so an operator (or a test) can tell which process
      // holds a job: worker_heartbeats maps it to the graphile-worker ids that lock jobs.
      const processId = `wkp_${process.pid}_${yield* crypto.randomToken(16)}`
      const events = new EventEmitter() as WorkerEvents
      // The ids of the runner being started: graphile-worker announces its pool and workers by
      // events, into the array of the runner that `start` is making.
      const startingIds = yield* Ref.make<Array<string>>([])
      events.on("pool:create", ({ workerPool }) => {
        Ref.getUnsafe(startingIds).push(workerPool.id)
      })
      events.on("worker:create", ({ worker }) => {
        Ref.getUnsafe(startingIds).push(worker.workerId)
      })
      const start = Effect.gen(function* () {
        const ids: Array<string> = []
        yield* Ref.set(startingIds, ids)
        const settled = startupSettled(events)
        const pool = makePool()
        pools.add(pool)
        const runner = yield* Effect.tryPromise(() =>
          run({
            pgPool: pool,
            taskList,
            crontab,
            logger: workerLogger,
            events,
            concurrency,
            pollInterval: options.pollInterval ?? 1000,
            noHandleSignals: true,
            // Batching (graphile-worker's performance options): finished jobs are completed (and
            // failed ones failed) in one statement per 20 ms, not one round trip each. Its local
            // queue (batch fetch) is left off: when the database restarts it throws from a timer
            // while handing its jobs back, which ends the process (seen in test/faults).
            preset: { worker: { completeJobBatchDelay: 20, failJobBatchDelay: 20 } },
          }),
        ).pipe(Effect.tapError(() => Effect.promise(() => endPool(pool))))
        yield* Effect.promise(() => settled)
        let markLost: (why: string) => void = () => {}
        const lost = new Promise<string>((resolve) => {
          markLost = resolve
        })
        void runner.promise.then(
          () => markLost("stopped"),
          (e: unknown) => markLost(String(e)),
        )
        const running: Running = { runner, pool, ids, lost, markLost, startedAt: performance.now() }
        return running
      })
      // A runner is lost when it stops, when graphile-worker reports a fatal error of its pool
      // (a job it could not complete or fail: it then shuts itself down, and after repeated
      // failures its batchers can hold that shutdown forever, leaving its jobs locked and taking
      // no new ones: seen in test/faults), or when the heartbeat finds the database back after
      // failing or after a failed job fetch. A lost runner is retired within a bounded time,
      // whether or not it finishes.
      events.on("pool:fatalError", ({ workerPool, error }) => {
        const { current } = Ref.getUnsafe(state)
        if (current.ids.includes(workerPool.id)) current.markLost(`fatal pool error: ${String(error)}`)
      })
      // Pools (runner ids) whose job fetch failed since the last heartbeat that succeeded. A
      // failed fetch may still lock a job: node-postgres gives up on the fetch at its
      // query_timeout, but a database that stopped answering without closing the connection
      // (frozen processes, a partition) still has the statement, runs it when it answers again
      // and locks a job under this pool's id that no task of ours runs, for graphile-worker's 4
      // hours. The heartbeat alone misses it when none of its statements was in flight long
      // enough to fail (its deadline is the statement bound + grace, longer than the fetch's):
      // test/faults/postgres-restart.test.ts, the freeze, left fan-out jobs locked, never run.
      // So the next heartbeat that succeeds treats it as after a failed heartbeat: the runner is
      // lost, and its jobs are released once it is stopped.
      // graphile-worker logs a failed fetch only at its debug level; the first of each runner is
      // an operator's warning (the runner is replaced because of it).
      const fetchFailed = new Set<string>()
      events.on("worker:getJob:error", ({ worker, error }) => {
        if (fetchFailed.has(worker.workerPool.id)) return
        fetchFailed.add(worker.workerPool.id)
        Effect.runForkWith(context)(
          Effect.logWarning("a job fetch failed; the runner is replaced at the next heartbeat that succeeds", {
            error: String(error),
          }),
        )
      })
      // The first runner failing to start fails the worker's start with graphile-worker's error.
      // Uninterruptible up to its stop being registered: a SIGINT/SIGTERM during start-up waits
      // for it, then stops it, rather than leaving a runner nobody stops.
      const state = yield* Effect.uninterruptible(
        Effect.gen(function* () {
          const first = yield* start.pipe(Effect.catch((e) => Effect.die(e.cause)))
          const state = yield* Ref.make<RunnerState>({
            current: first,
            retired: [],
            stopping: false,
            databaseWasDown: false,
          })
          yield* Effect.addFinalizer(() =>
            Effect.gen(function* () {
              const { current } = yield* Ref.updateAndGet(state, (s) => ({ ...s, stopping: true }))
              yield* Effect.promise(() => current.runner.stop().catch(() => {}))
              // A retired runner's jobs are released before the row that names its ids goes.
              yield* releaseWorkers((yield* Ref.get(state)).retired).pipe(
                Effect.provideService(SqlClient.SqlClient, sql),
                Effect.ignore,
              )
              yield* forget(processId).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.ignore)
            }),
          )
          return state
        }),
      )
      /**
       * Starts a runner to replace a lost one, unless the worker is stopping. Uninterruptible, and
       * it checks `stopping` once the runner is up, in the same update that installs it: a shutdown
       * that began while graphile-worker was starting finds either the new runner in `current` (and
       * stops it) or, if it already ran, the new runner stopped here; never a runner that nobody
       * stops (it would take jobs after this process forgot its ids, and hold the job-queue pool
       * open). Fails when graphile-worker cannot start (the database does not answer).
       */
      const replace = Effect.uninterruptible(
        Effect.gen(function* () {
          if ((yield* Ref.get(state)).stopping) return false
          const next = yield* start
          const installed = yield* Ref.modify(state, (s) =>
            s.stopping ? ([false, s] as const) : ([true, { ...s, current: next }] as const),
          )
          if (!installed)
            yield* Effect.promise(() =>
              next.runner
                .stop()
                .catch(() => {})
                .then(() => endPool(next.pool)),
            )
          return installed
        }),
      )
      const retire = (old: Running) =>
        Effect.promise(async () => {
          const within = (ms: number, work: Promise<unknown>) =>
            Promise.race([
              work.then(
                () => true,
                () => true,
              ),
              new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref()),
            ])
          if (!(await within(5_000, old.runner.stop("runner lost"))))
            await within(6_000, old.runner.kill("runner lost"))
          // From here on its statements are refused (end() does so at once; waiting for its
          // clients to close is bounded like the stop).
          await within(5_000, endPool(old.pool))
        })
      // The process stays up: a lost runner is replaced by a new one, started with backoff until
      // the database answers, and the jobs the old one had locked are released at once rather
      // than after graphile-worker's 4-hour timeout (at least once: a job may run again). Runners
      // lost again and again soon after starting (a job that can never be completed) are replaced
      // with backoff too, rather than in a tight loop.
      const supervise = Effect.gen(function* () {
        // Of runners lost soon after starting, one after another, the first is replaced at once
        // and each further one after the backoff's next delay.
        let quickLossPause: Effect.Effect<void> | undefined
        for (;;) {
          const { current: lost } = yield* Ref.get(state)
          const why = yield* Effect.promise(() => lost.lost)
          if ((yield* Ref.get(state)).stopping) return
          yield* Effect.logError("graphile-worker runner lost; starting a new one", { reason: why })
          const quick = performance.now() - lost.startedAt < QUICK_LOSS_MS
          // Its ids join `retired` only once it is stopped or given up on, so the heartbeat
          // never releases a job the old runner may still be finishing.
          yield* retire(lost)
          yield* Ref.update(state, (s) => ({ ...s, retired: [...s.retired, ...lost.ids] }))
          if (!quick) quickLossPause = undefined
          else if (quickLossPause === undefined) {
            const step = yield* onRealClock(Schedule.toStepWithSleep(RESTART_BACKOFF))
            quickLossPause = Effect.ignore(onRealClock(step(undefined)))
          } else yield* quickLossPause
          if (!(yield* replace.pipe(Effect.retry(RESTART_BACKOFF), onRealClock))) return
          // The new runner's ids are in the heartbeat row before the old one's jobs are released,
          // so whatever it locks is released by another process if this one dies now.
          const released = yield* Effect.gen(function* () {
            const { current, retired: releasing } = yield* Ref.get(state)
            yield* beat(processId, [...current.ids, ...releasing])
            yield* releaseWorkers(releasing)
            return releasing
          }).pipe(
            Effect.provideService(SqlClient.SqlClient, sql),
            Effect.catchCause((cause) =>
              Effect.as(
                Effect.logError("releasing a lost runner's jobs failed; the heartbeat retries", cause),
                [] as ReadonlyArray<string>,
              ),
            ),
          )
          yield* Ref.update(state, (s) => ({ ...s, retired: s.retired.filter((id) => !released.includes(id)) }))
          yield* Effect.logWarning("graphile-worker runner started again", { released_worker_ids: released })
        }
      })
      yield* Effect.forkScoped(supervise)
      const tick = Effect.gen(function* () {
        const { current, retired } = yield* Ref.get(state)
        const beaten = yield* Effect.exit(beat(processId, [...current.ids, ...retired]))
        if (beaten._tag === "Failure") {
          yield* Ref.update(state, (s) => ({ ...s, databaseWasDown: true }))
          return yield* Effect.logError("worker heartbeat failed", beaten.cause)
        }
        const wasDown = yield* Ref.modify(state, (s) => [s.databaseWasDown, { ...s, databaseWasDown: false }] as const)
        const { current: now } = yield* Ref.get(state)
        const fetchOrphans = now.ids.some((id) => fetchFailed.has(id))
        fetchFailed.clear()
        if (wasDown) now.markLost("the database is back after a failed heartbeat")
        else if (fetchOrphans) now.markLost("the database is back after a failed job fetch")
        const releasing = (yield* Ref.get(state)).retired
        if (releasing.length > 0) {
          yield* releaseWorkers(releasing)
          yield* Ref.update(state, (s) => ({ ...s, retired: s.retired.filter((id) => !releasing.includes(id)) }))
          yield* Effect.logWarning("released a lost runner's jobs", { worker_ids: releasing })
        }
        const released = yield* releaseStaleWorkers(heartbeat.staleAfterMs)
        if (released.length > 0)
          yield* Effect.logWarning("released the jobs of workers that stopped beating", { worker_ids: released })
      }).pipe(
        Effect.provideService(SqlClient.SqlClient, sql),
        Effect.catchCause((cause) => Effect.logError("worker heartbeat failed", cause)),
      )
      yield* tick
      yield* Effect.forkScoped(Effect.forever(Effect.andThen(Effect.sleep(heartbeat.intervalMs), tick)))
      return { current: () => Ref.getUnsafe(state).current.runner }
    }),
  )
