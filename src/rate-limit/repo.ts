import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Hits to add to one fixed-window counter. */
export interface CounterHit {
  readonly environmentId: string
  readonly bucket: string
  readonly subject: string
  readonly windowStart: Date
  readonly windowEnd: Date
}

/**
 * Adds `hits` to each counter (one row each) in one auto-committed statement and returns every
 * counter's count after it. Rows are locked in key order, so two concurrent groups on the same
 * counters wait for each other instead of deadlocking. Callers group through
 * ./counters.ts (outside any business transaction: a count sticks when the request then fails;
 * docs/architecture.md: failure bookkeeping commits).
 */
export const hitMany = (counters: ReadonlyArray<CounterHit & { readonly hits: number }>) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ environment_id: string; bucket: string; subject: string; window_start: Date; hits: number }>`
    insert into rate_limit_counters (environment_id, bucket, subject, window_start, window_end, hits)
    select environment_id, bucket, subject, window_start, window_end, hits
    from unnest(${counters.map((c) => c.environmentId)}::text[], ${counters.map((c) => c.bucket)}::text[],
      ${counters.map((c) => c.subject)}::text[], ${counters.map((c) => c.windowStart.toISOString())}::timestamptz[],
      ${counters.map((c) => c.windowEnd.toISOString())}::timestamptz[], ${counters.map((c) => c.hits)}::int[])
      as h(environment_id, bucket, subject, window_start, window_end, hits)
    order by environment_id, bucket, subject, window_start
    on conflict (environment_id, bucket, subject, window_start)
      do update set hits = rate_limit_counters.hits + excluded.hits
    returning environment_id, bucket, subject, window_start, hits`,
  ).pipe(
    Effect.map((rows) =>
      rows.map((r) => ({
        environmentId: r.environment_id,
        bucket: r.bucket,
        subject: r.subject,
        windowStart: r.window_start,
        hits: r.hits,
      })),
    ),
    Effect.orDie,
  )

/** The current counts of several windows in one round trip (0 when nothing was counted), in order. */
export const peekAll = (
  environmentId: string,
  windows: ReadonlyArray<{ bucket: string; subject: string; windowStart: Date }>,
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{
      bucket: string
      subject: string
      hits: number
    }>`select bucket, subject, hits from rate_limit_counters
    where environment_id = ${environmentId} and (${sql.join(
      " or ",
      false,
    )(
      windows.map((w) => sql`(bucket = ${w.bucket} and subject = ${w.subject} and window_start = ${w.windowStart})`),
    )})`,
  ).pipe(
    Effect.map((rows) =>
      windows.map((w) => rows.find((r) => r.bucket === w.bucket && r.subject === w.subject)?.hits ?? 0),
    ),
    Effect.orDie,
  )

/** The current count of a window (0 when nothing was counted). */
export const peek = (c: { environmentId: string; bucket: string; subject: string; windowStart: Date }) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ hits: number }>`select hits from rate_limit_counters
    where environment_id = ${c.environmentId} and bucket = ${c.bucket} and subject = ${c.subject}
      and window_start = ${c.windowStart}`,
  ).pipe(
    Effect.map((rows) => rows[0]?.hits ?? 0),
    Effect.orDie,
  )

/**
 * Adds one hit to a caller's fixed-window counter (sql/0170: a Management API key or Dashboard
 * user, not per Environment) and returns the count after it; auto-committed like `hit`.
 */
export const hitCaller = (c: { bucket: string; subject: string; windowStart: Date; windowEnd: Date }) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ hits: number }>`insert into caller_rate_counters
      (bucket, subject, window_start, window_end, hits)
    values (${c.bucket}, ${c.subject}, ${c.windowStart}, ${c.windowEnd}, 1)
    on conflict (bucket, subject, window_start)
      do update set hits = caller_rate_counters.hits + 1
    returning hits`,
  ).pipe(
    Effect.map((rows) => rows[0]!.hits),
    Effect.orDie,
  )

/** Housekeeping: windows that have ended count nothing any more. */
export const deleteEndedWindows = (now: Date) =>
  SqlClient.SqlClient.use((sql) =>
    Effect.andThen(
      sql`delete from rate_limit_counters where window_end <= ${now}`,
      sql`delete from caller_rate_counters where window_end <= ${now}`,
    ),
  ).pipe(Effect.orDie)

/**
 * A remembered fact ("this address signed in as this email") is a counter row whose window
 * runs from the epoch to the fact's expiry: housekeeping deletes it with the ended windows.
 * Remembering again extends it.
 */
const FOREVER_START = new Date(0)

export const remember = (c: { environmentId: string; bucket: string; subject: string; until: Date }) =>
  SqlClient.SqlClient.use(
    (sql) => sql`insert into rate_limit_counters
      (environment_id, bucket, subject, window_start, window_end, hits)
    values (${c.environmentId}, ${c.bucket}, ${c.subject}, ${FOREVER_START}, ${c.until}, 1)
    on conflict (environment_id, bucket, subject, window_start)
      do update set window_end = greatest(rate_limit_counters.window_end, excluded.window_end), hits = rate_limit_counters.hits + 1`,
  ).pipe(Effect.asVoid, Effect.orDie)

export const remembered = (c: { environmentId: string; bucket: string; subject: string; now: Date }) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ n: number }>`select 1 as n from rate_limit_counters
    where environment_id = ${c.environmentId} and bucket = ${c.bucket} and subject = ${c.subject}
      and window_start = ${FOREVER_START} and window_end > ${c.now}`,
  ).pipe(
    Effect.map((rows) => rows.length > 0),
    Effect.orDie,
  )
