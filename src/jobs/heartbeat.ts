import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { withCallSpan } from "../platform/observability/span.js"

/**
 * Worker liveness. graphile-worker frees the jobs of a worker that died (SIGKILL, OOM, lost
 * host) only after 4 hours. Each worker process instead records, every few seconds, the ids
 * of its graphile-worker workers; any worker process (and housekeeping) releases the jobs
 * of processes that stopped beating with `graphile_worker.force_unlock_workers`, so an
 * interrupted webhook attempt runs again within a minute (at least once).
 *
 * Beats and the stale check both use the database's clock (`now()`), never a process's: the
 * processes run on several hosts, and one whose clock is 30 s behind the others would otherwise
 * look dead while it beats, and have its live jobs released and run twice (one 30 s ahead would
 * look alive for 30 s after it died). This is liveness (scheduling), not a decision of the
 * spec, so the Effect Clock has no say in it.
 */

export interface HeartbeatOptions {
  /** How often a process records that it is alive. */
  readonly intervalMs: number
  /** A process silent for this long is presumed dead and its jobs are released. */
  readonly staleAfterMs: number
}

export const DEFAULT_HEARTBEAT: HeartbeatOptions = { intervalMs: 5_000, staleAfterMs: 30_000 }

export const beat = (processId: string, workerIds: ReadonlyArray<string>) =>
  SqlClient.SqlClient.use(
    (sql) => sql`insert into worker_heartbeats (process_id, worker_ids, beat_at)
    values (${processId}, ${workerIds as Array<string>}::text[], now())
    on conflict (process_id) do update set worker_ids = excluded.worker_ids, beat_at = excluded.beat_at`,
  ).pipe(Effect.asVoid)

/** A process that stops cleanly removes its row: its jobs were finished or handed back. */
export const forget = (processId: string) =>
  SqlClient.SqlClient.use((sql) => sql`delete from worker_heartbeats where process_id = ${processId}`)

/**
 * Releases the locked jobs of every process whose last beat is older than `staleAfterMs` (by
 * the database's clock). The rows are deleted in the same transaction, so of several processes
 * sweeping at once exactly one releases each dead process. Returns the worker ids released.
 */
export const releaseStaleWorkers = Effect.fnUntraced(function* (staleAfterMs: number) {
  const sql = yield* SqlClient.SqlClient
  return yield* sql.withTransaction(
    Effect.gen(function* () {
      const rows = yield* sql<{ worker_ids: ReadonlyArray<string> }>`delete from worker_heartbeats
      where beat_at < now() - make_interval(secs => ${staleAfterMs / 1000}::float8) returning worker_ids`
      const workerIds = rows.flatMap((r) => r.worker_ids)
      if (workerIds.length > 0)
        yield* sql`select graphile_worker.force_unlock_workers(${workerIds as Array<string>}::text[])`
      return workerIds
    }),
  )
}, withCallSpan("jobs.releaseStaleWorkers"))

/**
 * Releases the jobs locked by the given worker ids of this very process: a runner that
 * stopped (its database went away) is replaced by a new one with new ids, and the jobs the
 * old one had locked would otherwise wait for graphile-worker's 4-hour timeout.
 */
export const releaseWorkers = (workerIds: ReadonlyArray<string>) =>
  workerIds.length === 0
    ? Effect.void
    : SqlClient.SqlClient.use(
        (sql) => sql`select graphile_worker.force_unlock_workers(${workerIds as Array<string>}::text[])`,
      ).pipe(Effect.asVoid)
