import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { jobKeySql, TASKS } from "../../platform/jobs.js"
import type { PasskeySummaryRow } from "../../users/passkey-summary.js"
import type { IdentityRow } from "../users/repo.js"
import type { SessionRow } from "../../sessions/repo.js"
import type { RowError } from "./parse-source.js"

// SQL of the import / export jobs (sql/0060_user_data_jobs.sql). Jobs are read by id within
// the caller's Workspace; the Environment check is the service's.

export type JobStatus = "pending" | "processing" | "completed" | "failed"

export interface ImportJobRow {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string
  readonly format: "json" | "csv"
  readonly source_url: string
  readonly status: JobStatus
  readonly total_rows: number
  readonly imported_count: number
  readonly skipped_count: number
  readonly failed_count: number
  readonly failure_code: string | null
  readonly failure_message: string | null
  readonly created_at: Date
  readonly started_at: Date | null
  readonly completed_at: Date | null
}

const importColumns = (
  sql: SqlClient.SqlClient,
) => sql`id, workspace_id, environment_id, format, source_url, status, total_rows,
  imported_count, skipped_count, failed_count, failure_code, failure_message, created_at, started_at, completed_at`

export const insertImportJob = (
  j: ImportJobRow & { readonly created_by_type: string; readonly created_by_id: string | null },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<ImportJobRow>`insert into user_import_jobs (id, workspace_id, environment_id, format, source_url,
      status, total_rows, imported_count, skipped_count, failed_count, failure_code, failure_message, created_by_type, created_by_id,
      created_at, started_at, completed_at)
    values (${j.id}, ${j.workspace_id}, ${j.environment_id}, ${j.format}, ${j.source_url}, ${j.status}, ${j.total_rows},
      ${j.imported_count}, ${j.skipped_count}, ${j.failed_count}, ${j.failure_code}, ${j.failure_message}, ${j.created_by_type},
      ${j.created_by_id}, ${j.created_at}, ${j.started_at}, ${j.completed_at})
    returning ${importColumns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]!))

/** Row errors in one statement per 1,000 (a JSON document of records, unpacked by Postgres). */
export const insertImportErrors = (jobId: string, errors: ReadonlyArray<RowError>) =>
  SqlClient.SqlClient.use((sql) =>
    Effect.forEach(
      chunks(errors, 1000),
      (part) => sql`insert into user_import_job_errors (job_id, row_number, code, field, message, line_number)
    select ${jobId}, v.row_number, v.code, v.field, v.message, v.line_number
    from jsonb_to_recordset(${JSON.stringify(
      part.map((e) => ({
        row_number: e.row,
        code: e.code,
        field: e.field,
        message: e.message,
        line_number: e.line ?? null,
      })),
    )}::jsonb) as v(row_number int, code text, field text, message text, line_number int)`,
      { discard: true },
    ),
  )

/** A job as its worker task needs it (sql/0150): the sealed source, the creator, the checkpoint. */
export interface ImportJobWork extends ImportJobRow {
  readonly source_url_sealed: string | null
  readonly rows_done: number
  readonly created_by_type: string
  readonly created_by_id: string | null
}

export const importJobForWork = (id: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<ImportJobWork>`select ${importColumns(sql)}, source_url_sealed, rows_done, created_by_type, created_by_id
    from user_import_jobs where id = ${id}`,
  ).pipe(Effect.map((rows) => rows[0]))

/** Counts a run of the worker task; the run's number. */
export const startImportRun = (id: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ runs: number }>`update user_import_jobs set runs = runs + 1 where id = ${id} returning runs`,
  ).pipe(Effect.map((rows) => rows[0]?.runs ?? 0))

export const setImportSource = (id: string, sealed: string) =>
  SqlClient.SqlClient.use((sql) => sql`update user_import_jobs set source_url_sealed = ${sealed} where id = ${id}`)

export const setImportTotal = (id: string, totalRows: number) =>
  SqlClient.SqlClient.use(
    (sql) => sql`update user_import_jobs set total_rows = ${totalRows} where id = ${id} and status = 'processing'`,
  )

/**
 * Adds one batch's outcome to the counters and moves the checkpoint, if the checkpoint is
 * still where this run left it (compare-and-set: a second run of the job, or a run that
 * was superseded, cannot commit a batch twice). false: the batch must roll back.
 */
export const advanceImport = (
  id: string,
  expectedRowsDone: number,
  batch: {
    readonly rows: number
    readonly imported: number
    readonly skipped: number
    readonly failed: number
  },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ id: string }>`update user_import_jobs
    set rows_done = rows_done + ${batch.rows}, imported_count = imported_count + ${batch.imported},
      skipped_count = skipped_count + ${batch.skipped}, failed_count = failed_count + ${batch.failed}
    where id = ${id} and status = 'processing' and rows_done = ${expectedRowsDone} returning id`,
  ).pipe(Effect.map((rows) => rows.length === 1))

/** Ends a processing job (completed, or failed with a file-level code); the sealed source is wiped. */
export const finishImport = (
  id: string,
  end: {
    readonly status: "completed" | "failed"
    readonly failureCode: string | null
    readonly failureMessage: string | null
    readonly at: Date
  },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<ImportJobRow>`update user_import_jobs
    set status = ${end.status}, failure_code = ${end.failureCode}, failure_message = ${end.failureMessage}, completed_at = ${end.at},
      source_url_sealed = null
    where id = ${id} and status = 'processing' returning ${importColumns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]))

/**
 * Fails every `processing` import whose worker task can no longer run it: its graphile-worker
 * job (key `user_import.run:<id>`) is gone, or has used its attempts and is not running. A job
 * still queued, retrying or locked by a worker (live, or dead and awaiting the heartbeat's
 * release) keeps its import. The sealed source is wiped. Returns the ended jobs and their creators.
 */
export const failAbandonedImports = (end: {
  readonly failureCode: string
  readonly failureMessage: string
  readonly at: Date
}) =>
  SqlClient.SqlClient.use(
    (sql) => sql<
      ImportJobRow & { readonly created_by_type: string; readonly created_by_id: string | null }
    >`update user_import_jobs i
    set status = 'failed', failure_code = ${end.failureCode}, failure_message = ${end.failureMessage}, completed_at = ${end.at},
      source_url_sealed = null
    where i.status = 'processing'
      and not exists (select 1 from graphile_worker.jobs j
        where j.key = ${jobKeySql(sql, TASKS.userImport, sql`i.id`)} and (j.attempts < j.max_attempts or j.locked_at is not null))
    returning ${importColumns(sql)}, created_by_type, created_by_id`,
  )

const chunks = <A>(items: ReadonlyArray<A>, size: number): Array<Array<A>> => {
  const out: Array<Array<A>> = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}

export const importJobById = (workspaceId: string, id: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<ImportJobRow>`select ${importColumns(sql)} from user_import_jobs where workspace_id = ${workspaceId} and id = ${id}`,
  ).pipe(Effect.map((rows) => rows[0]))

export interface ImportErrorRow {
  readonly row_number: number
  readonly line_number: number | null
  readonly code: RowError["code"]
  readonly field: string | null
  readonly message: string
}

/** Keyset page of a job's row errors, by row number (limit + 1 rows: the extra tells whether more exist). */
export const importErrorsPage = (
  jobId: string,
  page: { readonly afterRow: number | undefined; readonly limit: number },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<ImportErrorRow>`select row_number, line_number, code, field, message from user_import_job_errors
    where job_id = ${jobId} ${page.afterRow === undefined ? sql`` : sql`and row_number > ${page.afterRow}`}
    order by row_number limit ${page.limit + 1}`,
  )

export interface ExportJobRow {
  readonly id: string
  readonly workspace_id: string
  readonly environment_id: string
  readonly target_user_id: string
  readonly status: JobStatus
  readonly artifact_sealed: string | null
  readonly artifact_bytes: number | null
  readonly failure_code: string | null
  readonly failure_message: string | null
  readonly created_at: Date
  readonly completed_at: Date | null
  readonly download_expires_at: Date | null
  /** Chunks in user_export_chunks (sql/0152); null for an export stored whole in artifact_sealed. */
  readonly artifact_chunks: number | null
  readonly artifact_purged_at: Date | null
}

const exportColumns = (
  sql: SqlClient.SqlClient,
) => sql`id, workspace_id, environment_id, target_user_id, status, artifact_sealed,
  artifact_bytes, failure_code, failure_message, created_at, completed_at, download_expires_at, artifact_chunks, artifact_purged_at`

export const insertExportJob = (
  j: Omit<ExportJobRow, "artifact_chunks" | "artifact_purged_at"> & {
    readonly created_by_type: string
    readonly created_by_id: string | null
  },
) =>
  SqlClient.SqlClient.use(
    (sql) => sql<ExportJobRow>`insert into user_export_jobs (id, workspace_id, environment_id, target_user_id,
      status, artifact_sealed, artifact_bytes, failure_code, failure_message, created_by_type, created_by_id, created_at, completed_at,
      download_expires_at)
    values (${j.id}, ${j.workspace_id}, ${j.environment_id}, ${j.target_user_id}, ${j.status}, ${j.artifact_sealed}, ${j.artifact_bytes},
      ${j.failure_code}, ${j.failure_message}, ${j.created_by_type}, ${j.created_by_id}, ${j.created_at}, ${j.completed_at},
      ${j.download_expires_at})
    returning ${exportColumns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]!))

export const exportJobById = (workspaceId: string, id: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<ExportJobRow>`select ${exportColumns(sql)} from user_export_jobs where workspace_id = ${workspaceId} and id = ${id}`,
  ).pipe(Effect.map((rows) => rows[0]))

/** Wipes the artifacts (whole or chunked) whose download window has passed; returns how many. */
export const purgeExpiredArtifacts = (now: Date) =>
  SqlClient.SqlClient.use((sql) =>
    Effect.gen(function* () {
      const rows = yield* sql<{
        id: string
      }>`update user_export_jobs set artifact_sealed = null, artifact_purged_at = ${now}
    where download_expires_at <= ${now}
      and (artifact_sealed is not null or (artifact_chunks is not null and artifact_purged_at is null)) returning id`
      if (rows.length > 0)
        yield* sql`delete from user_export_chunks where job_id = any(${rows.map((r) => r.id)}::text[])`
      return rows.length
    }),
  )

export const insertExportChunk = (jobId: string, seq: number, sealed: string) =>
  SqlClient.SqlClient.use(
    (sql) => sql`insert into user_export_chunks (job_id, seq, sealed) values (${jobId}, ${seq}, ${sealed})`,
  )

export const exportChunk = (jobId: string, seq: number) =>
  SqlClient.SqlClient.use(
    (sql) => sql<{ sealed: string }>`select sealed from user_export_chunks where job_id = ${jobId} and seq = ${seq}`,
  ).pipe(Effect.map((rows) => rows[0]?.sealed))

/** A chunked export is complete: its size and number of chunks. */
export const completeExportJob = (id: string, bytes: number, chunks: number) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<ExportJobRow>`update user_export_jobs set artifact_bytes = ${bytes}, artifact_chunks = ${chunks} where id = ${id}
    returning ${exportColumns(sql)}`,
  ).pipe(Effect.map((rows) => rows[0]!))

// ---- the user's data, for the export artifact (every row of the user, not a page) ----------

export const identitiesForExport = (environmentId: string, userId: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<IdentityRow>`select id, user_id, provider, connection_id, email, linked_at, last_used_at
    from identities where environment_id = ${environmentId} and user_id = ${userId} order by id`,
  )

export const passkeysForExport = (environmentId: string, userId: string) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<PasskeySummaryRow>`select id, user_id, name, aaguid, device_type, backed_up, rp_id, created_at, last_used_at
    from passkeys where environment_id = ${environmentId} and user_id = ${userId} order by id`,
  )

/** One keyset page of the user's sessions, by (created_at, id): the export reads them page by page. */
export const sessionsForExport = (
  environmentId: string,
  userId: string,
  after: { createdAt: Date; id: string } | undefined,
  limit: number,
) =>
  SqlClient.SqlClient.use(
    (sql) =>
      sql<SessionRow>`select id, workspace_id, environment_id, user_id, client_id, device_name, method, acr, auth_time, security_version,
        created_at, last_active_at, idle_expires_at, absolute_expires_at, revoked_at, revoked_reason
      from login_sessions where environment_id = ${environmentId} and user_id = ${userId}
        ${after === undefined ? sql`` : sql`and (created_at, id) > (${after.createdAt}, ${after.id})`}
      order by created_at, id limit ${limit}`,
  )
