import { Clock, Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Audit } from "../../platform/audit.js"
import { Config } from "../../platform/config.js"
import { Crypto } from "../../platform/crypto.js"
import { TASKS } from "../../platform/jobs.js"
import type { Actor } from "../../platform/request-context.js"
import { csvRows } from "./csv-stream.js"
import { openSource, SOURCE_TIMEOUT_MS, SourceFailure } from "./fetch-source.js"
import { IMPORT_BATCH_ROWS, importBatch, type ImportTarget, type SourceRow, triage } from "./import-batch.js"
import { importAuditDetails, MAX_CSV_SOURCE_BYTES, sourceSealContext } from "./import-service.js"
import { MAX_CSV_ROWS } from "./parse-source.js"
import * as repo from "./repo.js"
import { withCallSpan } from "../../platform/observability/span.js"

/**
 * The worker task `user_import.run` (decisions: "User import at scale"): imports a large CSV
 * source of a `processing` job, streamed, in batches of IMPORT_BATCH_ROWS, one transaction
 * per batch. Two passes over the source: the first only parses (UTF-8, CSV, header, row
 * count), so a file-level problem fails the job before any user exists and `total_rows` is
 * known while the second pass imports; each batch commits with the job's counters and its
 * checkpoint (`rows_done`). A run that dies is retried by graphile-worker and resumes after
 * the checkpoint: the committed rows are read again only to rebuild the in-file duplicate
 * check, never imported twice (and the checkpoint's compare-and-set refuses a batch that
 * another run committed first).
 */

/**
 * A source that drops the connection or falls silent fails the run, which graphile-worker
 * retries with its backoff (about 3, 7, 20 and 55 s); the fifth such run fails the job.
 */
export const MAX_IMPORT_RUNS = 5
const TRANSIENT = new Set(["source_unreachable", "source_timeout"])

const decodePayload = Schema.decodeUnknownOption(TASKS.userImport.payload)

type Next = IteratorResult<SourceRow, undefined>

const nextRow = (rows: AsyncGenerator<SourceRow>) =>
  Effect.tryPromise({
    try: () => rows.next() as Promise<Next>,
    catch: (e) => (e instanceof SourceFailure ? e : new SourceFailure("source_unreachable", String(e))),
  })

const closeRows = (rows: AsyncGenerator<SourceRow>) =>
  Effect.promise(() =>
    rows.return(undefined).then(
      () => undefined,
      () => undefined,
    ),
  )

/** Opens the source and reads it as CSV rows (the caller closes the iterator). */
const openRows = Effect.fnUntraced(function* (url: string) {
  const config = yield* Config
  const opened = yield* openSource(url, {
    allowPrivateTargets: config.webhookAllowPrivateTargets,
    maxBytes: MAX_CSV_SOURCE_BYTES,
    timeoutMs: SOURCE_TIMEOUT_MS,
    idleTimeoutMs: SOURCE_TIMEOUT_MS,
  })
  if (!opened.ok) return yield* Effect.fail(new SourceFailure(opened.code, opened.message))
  return csvRows(opened.body, MAX_CSV_ROWS)
})

/** Pass 1: the number of data rows, or the file-level problem. */
const countRows = (url: string) =>
  Effect.acquireUseRelease(
    openRows(url),
    (rows) =>
      Effect.gen(function* () {
        let count = 0
        while (!(yield* nextRow(rows)).done) count++
        return count
      }),
    closeRows,
  )

/** Pass 2: the batches after the checkpoint. */
const importRows = (url: string, target: ImportTarget, rowsDone: number) =>
  Effect.acquireUseRelease(
    openRows(url),
    (rows) =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const seen = new Set<string>()
        let done = rowsDone
        let replayed = 0
        let batch: Array<SourceRow> = []
        const flush = Effect.gen(function* () {
          if (batch.length === 0) return
          const rowsOfBatch = batch
          batch = []
          yield* sql
            .withTransaction(importBatch(target, rowsOfBatch, seen, done))
            .pipe(Effect.catchTag("SqlError", Effect.die))
          done += rowsOfBatch.length
        })
        for (;;) {
          const next = yield* nextRow(rows)
          if (next.done) break
          if (replayed < rowsDone) {
            // Committed by an earlier run: only its emails matter (in-file duplicates).
            replayed++
            triage([next.value], seen)
            continue
          }
          batch.push(next.value)
          if (batch.length === IMPORT_BATCH_ROWS) yield* flush
        }
        yield* flush
      }),
    closeRows,
  )

export const runImportTask = Effect.fnUntraced(function* (payload: unknown) {
  const decoded = decodePayload(payload)
  if (decoded._tag === "None")
    return yield* Effect.logWarning(`${TASKS.userImport.name}: payload without a jobId; dropped`)
  const job = yield* repo.importJobForWork(decoded.value.jobId).pipe(Effect.orDie)
  // Ended (or never ours): a re-delivered job has nothing to do.
  if (job?.status !== "processing" || job.source_url_sealed === null) return
  const url = (yield* (yield* Crypto)
    .open(sourceSealContext(job.id), job.source_url_sealed)
    .pipe(Effect.orDie)).toString("utf8")
  const actor: Actor = {
    type: job.created_by_type as Actor["type"],
    ...(job.created_by_id ? { id: job.created_by_id } : {}),
  }
  const target: ImportTarget = {
    jobId: job.id,
    workspaceId: job.workspace_id,
    environmentId: job.environment_id,
    actor,
  }

  const run = yield* repo.startImportRun(job.id).pipe(Effect.orDie)
  const outcome = yield* Effect.gen(function* () {
    const total = yield* countRows(url)
    yield* repo.setImportTotal(job.id, total).pipe(Effect.orDie)
    yield* importRows(url, target, job.rows_done)
  }).pipe(
    Effect.as(undefined),
    Effect.catchTag("ImportSuperseded", () => Effect.succeed("superseded" as const)),
    Effect.catch((e: SourceFailure) => Effect.succeed(e)),
  )
  if (outcome === "superseded") {
    return yield* Effect.logWarning(
      `${TASKS.userImport.name}: another run moved the job's checkpoint; this run stops`,
      { job_id: job.id },
    )
  }
  if (outcome !== undefined && TRANSIENT.has(outcome.code) && run < MAX_IMPORT_RUNS) {
    // The committed batches stay; graphile-worker runs the task again, which resumes after them.
    return yield* Effect.die(
      new Error(`${TASKS.userImport.name} ${job.id}: ${outcome.code} (run ${run} of ${MAX_IMPORT_RUNS}); retried`),
    )
  }

  const sql = yield* SqlClient.SqlClient
  yield* sql
    .withTransaction(
      Effect.gen(function* () {
        const at = new Date(yield* Clock.currentTimeMillis)
        const ended = yield* repo
          .finishImport(
            job.id,
            outcome === undefined
              ? { status: "completed", failureCode: null, failureMessage: null, at }
              : { status: "failed", failureCode: outcome.code, failureMessage: outcome.message, at },
          )
          .pipe(Effect.orDie)
        if (!ended) return
        yield* (yield* Audit).append({
          workspaceId: ended.workspace_id,
          environmentId: ended.environment_id,
          actor,
          action: "user_import_job.finished",
          subjectType: "user_import_job",
          subjectId: ended.id,
          result: ended.status === "failed" ? "failure" : "success",
          details: importAuditDetails(ended),
        })
      }),
    )
    .pipe(Effect.catchTag("SqlError", Effect.die))
}, withCallSpan("userImport.task"))
