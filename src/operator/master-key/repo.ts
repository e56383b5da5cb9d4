import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { KeyCheckRow } from "../../platform/master-key.js"
import type { ProcessKind } from "../../platform/process-heartbeat.js"
import { SEALED_JOB_TASKS, SEALED_VALUES, type SealedValues } from "./sealed-values.js"

/** Rows sealed under `currentKeyId`'s key are left alone: only other keys' seals are re-sealed. */
const staleCondition = (v: SealedValues) =>
  `${v.sealed} is not null and split_part(${v.sealed}, '.', 2) <> $1${v.where ? ` and ${v.where}` : ""}`

export interface StaleRow {
  readonly row: string
  readonly sealed: string
  readonly fields: Readonly<Record<string, string>>
}

/**
 * The next batch after `after`, in row order. The comparison and the ORDER BY use the same
 * (default) collation, so the cursor is consistent, and a primary key's index serves both.
 */
export const staleBatch = (v: SealedValues, currentKeyId: string, after: string, limit: number) =>
  SqlClient.SqlClient.use((sql) => {
    const fields = Object.entries(v.fields)
      .map(([name, expr]) => `, ${expr} as "f_${name}"`)
      .join("")
    return sql.unsafe<Record<string, string>>(
      `select ${v.row} as "row", ${v.sealed} as "sealed"${fields} from ${v.from}
      where ${staleCondition(v)} and ${v.row} > $2 order by ${v.row} limit $3`,
      [currentKeyId, after, limit],
    )
  }).pipe(
    Effect.map((rows) =>
      rows.map(
        (r): StaleRow => ({
          row: r["row"]!,
          sealed: r["sealed"]!,
          fields: {
            row: r["row"]!,
            ...Object.fromEntries(Object.keys(v.fields).map((name) => [name, r[`f_${name}`]!])),
          },
        }),
      ),
    ),
  )

/** Compare-and-set: replaces the sealed value only if nobody changed it since it was read. */
export const replaceSealed = (v: SealedValues, row: string, from: string, to: string) =>
  SqlClient.SqlClient.use((sql) =>
    sql.unsafe<{ n: number }>(
      `with changed as (update ${v.table} set ${v.assignment.replace("$to", "$3")}
      where ${v.rowMatch ?? `${v.row} = $1`} and ${v.sealed} = $2${v.updatableWhen ? ` and ${v.updatableWhen}` : ""} returning 1)
    select count(*)::int as n from changed`,
      [row, from, to],
    ),
  ).pipe(Effect.map((rows) => rows[0]!.n > 0))

export const countStale = (v: SealedValues, currentKeyId: string) =>
  SqlClient.SqlClient.use((sql) =>
    sql.unsafe<{ n: number }>(`select count(*)::int as n from ${v.from} where ${staleCondition(v)}`, [currentKeyId]),
  ).pipe(Effect.map((rows) => rows[0]!.n))

/**
 * Sealed values the registry does not know, so re-sealing could not be complete: columns named
 * `*_sealed` or `sealed`, and queued jobs of other tasks whose payload carries `sealed`.
 */
export const unregisteredSealedValues = SqlClient.SqlClient.use((sql) =>
  Effect.gen(function* () {
    const columns = yield* sql<{
      name: string
    }>`select table_name || '.' || column_name as name from information_schema.columns
    where table_schema = current_schema() and (column_name like '%\\_sealed' or column_name = 'sealed') order by 1`
    const jobs = yield* sql<{ name: string }>`select distinct 'graphile_worker.jobs.' || t.identifier as name
    from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
    where j.payload->>'sealed' is not null and not (t.identifier = any(${SEALED_JOB_TASKS as Array<string>}::text[])) order by 1`
    return [
      ...columns.map((r) => r.name).filter((name) => !SEALED_VALUES.some((v) => v.name === name)),
      ...jobs.map((r) => r.name),
    ]
  }),
)

export interface Progress {
  readonly last_row: string
  readonly resealed: number
}

export const loadProgress = (toKeyId: string, name: string, now: Date) =>
  SqlClient.SqlClient.use((sql) =>
    Effect.gen(function* () {
      yield* sql`insert into master_key_rotation_progress (to_key_id, sealed_column, updated_at) values (${toKeyId}, ${name}, ${now})
    on conflict do nothing`
      const [row] = yield* sql<{
        last_row: string
        resealed: string
      }>`select last_row, resealed::text from master_key_rotation_progress
    where to_key_id = ${toKeyId} and sealed_column = ${name}`
      return { last_row: row!.last_row, resealed: Number(row!.resealed) } satisfies Progress
    }),
  )

export const saveProgress = (
  toKeyId: string,
  name: string,
  p: Progress & { readonly completed: boolean; readonly now: Date },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql`update master_key_rotation_progress set last_row = ${p.last_row}, resealed = ${p.resealed},
      completed_at = ${p.completed ? p.now : null}, updated_at = ${p.now}
    where to_key_id = ${toKeyId} and sealed_column = ${name}`,
  ).pipe(Effect.asVoid)

/**
 * The key-check row, locked (FOR UPDATE) for the caller's transaction: a process's key check at
 * start takes the same lock while it records its heartbeat (src/platform/master-key.ts), so one
 * that passed its check is seen by `liveProcesses` in the same transaction.
 */
export const lockKeyCheckState = SqlClient.SqlClient.use(
  (sql) =>
    sql<KeyCheckRow>`select check_value, previous_check_value, old_key_needed_until from master_key_check for update`,
).pipe(Effect.map((rows) => rows[0]))

export interface LiveProcess {
  readonly kind: ProcessKind
  readonly host: string
  readonly pid: number
  readonly master_key_id: string
  readonly previous_master_key_id: string | null
  /** The key it seals under, as of its last beat (null: a process of an earlier version). */
  readonly sealing_key_id: string | null
}

/** Processes that beat within `liveForMs`, by the database's clock (src/platform/process-heartbeat.ts). */
export const liveProcesses = (liveForMs: number) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<LiveProcess>`select kind, host, pid, master_key_id, previous_master_key_id, sealing_key_id from process_heartbeats
    where beat_at >= now() - make_interval(secs => ${liveForMs / 1000}::float8) order by kind, host, pid`,
  )

/**
 * The switch of a rotation: the key check moves to the new key and keeps the old one's, so a
 * start with the old key only is refused from now on, and every process holding both keys seals
 * under the new one (at start, or at its next heartbeat). Run under lockKeyCheckState's lock.
 */
export const recordSwitch = (currentCheck: string, previousCheck: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql`update master_key_check set check_value = ${currentCheck}, previous_check_value = ${previousCheck}, old_key_needed_until = null
    where check_value = ${previousCheck} and previous_check_value is null`,
  ).pipe(Effect.asVoid)

/**
 * Ends the rotation (compare-and-set): a start without the old key is allowed again once
 * `oldKeyNeededUntil` has passed (the life of what was HMAC'd under it and is only verified).
 */
export const finishRotation = (currentCheck: string, previousCheck: string, oldKeyNeededUntil: Date) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql`update master_key_check set previous_check_value = null, old_key_needed_until = ${oldKeyNeededUntil}
    where check_value = ${currentCheck} and previous_check_value = ${previousCheck}`,
  ).pipe(Effect.asVoid)
