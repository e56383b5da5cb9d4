import { Readable } from "node:stream"
import { Clock, Effect } from "effect"
import { InvalidRequest } from "../../http/errors.js"
import { Audit } from "../../platform/audit.js"
import { Crypto } from "../../platform/crypto.js"
import { Ids } from "../../platform/ids.js"
import { addJob, jobKey, TASKS } from "../../platform/jobs.js"
import type { EnvironmentRecord } from "../../tenancy/schema.js"
import { redactUrl } from "../../platform/outbound/url-policy.js"
import { CurrentCaller } from "../auth/caller.js"
import type { Page } from "../conventions/pagination.js"
import { csvRows } from "./csv-stream.js"
import {
  fetchSource,
  MAX_SOURCE_BYTES,
  openSource,
  readHead,
  SOURCE_TIMEOUT_MS,
  SourceFailure,
} from "./fetch-source.js"
import { IMPORT_BATCH_ROWS, importBatch, type SourceRow } from "./import-batch.js"
import { MAX_CSV_ROWS, parseJsonSource } from "./parse-source.js"
import * as repo from "./repo.js"
import { reachableJob } from "./reachable.js"
import { withCallSpan } from "../../platform/observability/span.js"

/**
 * POST /user-import-jobs (decisions: "User import at scale"). A JSON source, and a CSV source
 * of at most INLINE_CSV_BYTES and INLINE_CSV_ROWS, is imported inside the request, in the
 * route's one SQL transaction (job, users, `user.created` events, row errors and audit record
 * commit together): the job is `completed` or `failed` on return. A larger CSV source is
 * checked at its head (UTF-8, header) and handed to the worker task `user_import.run`
 * (./import-task.ts): the job is `processing` on return and its counters move batch by batch.
 */

/** CSV sources up to this size are imported inside the request (1 MiB). */
export const INLINE_CSV_BYTES = 1024 * 1024
/** ... and up to this many data rows (the old per-job cap: about 2 s of batches). */
export const INLINE_CSV_ROWS = 10_000
/** A streamed CSV source may be this large (256 MiB; it is never held in memory). */
export const MAX_CSV_SOURCE_BYTES = 256 * 1024 * 1024

/** The full source URL is sealed in the job row for the worker, bound to that row. */
export const sourceSealContext = (jobId: string) => ({
  purpose: "user-import-source",
  table: "user_import_jobs",
  rowId: jobId,
})

/** What the request learnt of the source, before any SQL transaction (no connection is held while a remote server answers). */
export type PreparedSource =
  | { readonly kind: "failed"; readonly code: string; readonly message: string }
  | { readonly kind: "rows"; readonly rows: ReadonlyArray<SourceRow> }
  | { readonly kind: "background" }

const fromFailure = (e: unknown): PreparedSource =>
  e instanceof SourceFailure
    ? { kind: "failed", code: e.code, message: e.message }
    : { kind: "failed", code: "source_unreachable", message: "The source could not be read" }

/** Collects a small CSV's rows; "background" when it has more than INLINE_CSV_ROWS. */
const collectCsv = (body: Buffer) =>
  Effect.promise(async (): Promise<PreparedSource> => {
    const rows: Array<SourceRow> = []
    try {
      for await (const row of csvRows(Readable.from([body]), MAX_CSV_ROWS)) {
        if (rows.length === INLINE_CSV_ROWS) return { kind: "background" }
        rows.push(row)
      }
    } catch (e) {
      return fromFailure(e)
    }
    return { kind: "rows", rows }
  })

/**
 * The head of a large CSV, cut after its last complete line: a broken header or a byte that
 * is not UTF-8 fails the job in the request. A problem after the first data row is left to
 * the worker (the cut may split a quoted field).
 */
const checkCsvHead = (head: Buffer) =>
  Effect.promise(async (): Promise<PreparedSource> => {
    const cut = head.subarray(0, head.lastIndexOf(0x0a) + 1)
    let sawRow = false
    try {
      for await (const _ of csvRows(Readable.from([cut]), MAX_CSV_ROWS)) {
        sawRow = true
        break
      }
    } catch (e) {
      if (!sawRow) return fromFailure(e)
    }
    return { kind: "background" }
  })

export const prepareSource = Effect.fnUntraced(function* (
  format: "json" | "csv",
  sourceUrl: string,
  allowPrivateTargets: boolean,
) {
  if (format === "json") {
    const fetched = yield* fetchSource(sourceUrl, {
      allowPrivateTargets,
      maxBytes: MAX_SOURCE_BYTES,
      timeoutMs: SOURCE_TIMEOUT_MS,
    })
    if (!fetched.ok) return { kind: "failed", code: fetched.code, message: fetched.message } satisfies PreparedSource
    const parsed = parseJsonSource(fetched.body)
    if (!parsed.ok) return { kind: "failed", code: parsed.code, message: parsed.message } satisfies PreparedSource
    return { kind: "rows", rows: parsed.rows.map((p) => ({ line: null, parsed: p })) } satisfies PreparedSource
  }
  // Transport deadline on the monotonic clock, as in fetchSource (real time, not a decision).
  const startedMs = performance.now()
  const opened = yield* openSource(sourceUrl, {
    allowPrivateTargets,
    maxBytes: MAX_CSV_SOURCE_BYTES,
    timeoutMs: SOURCE_TIMEOUT_MS,
    idleTimeoutMs: SOURCE_TIMEOUT_MS,
  })
  if (!opened.ok) return { kind: "failed", code: opened.code, message: opened.message } satisfies PreparedSource
  const read = yield* readHead(
    opened.body,
    INLINE_CSV_BYTES,
    Math.max(1, SOURCE_TIMEOUT_MS - (performance.now() - startedMs)),
    SOURCE_TIMEOUT_MS,
  )
  if (!read.ok) return { kind: "failed", code: read.code, message: read.message } satisfies PreparedSource
  return yield* read.complete ? collectCsv(read.head) : checkCsvHead(read.head)
}, withCallSpan("userImport.prepareSource"))

export interface ImportRequest {
  readonly env: EnvironmentRecord
  readonly format: "json" | "csv"
  readonly sourceUrl: string
  readonly prepared: PreparedSource
  readonly startedAt: Date
}

/** Creates the job (inside the route's transaction) and, for a small source, runs it. */
export const runImport = Effect.fnUntraced(function* (input: ImportRequest) {
  const caller = yield* CurrentCaller
  const { env, prepared } = input
  const id = yield* (yield* Ids).make("job")
  const failed = prepared.kind === "failed" ? prepared : undefined
  yield* repo
    .insertImportJob({
      id,
      workspace_id: env.workspaceId,
      environment_id: env.id,
      format: input.format,
      source_url: redactUrl(input.sourceUrl),
      status: failed ? "failed" : "processing",
      total_rows: prepared.kind === "rows" ? prepared.rows.length : 0,
      imported_count: 0,
      skipped_count: 0,
      failed_count: 0,
      failure_code: failed?.code ?? null,
      failure_message: failed?.message ?? null,
      created_at: input.startedAt,
      started_at: input.startedAt,
      completed_at: failed ? input.startedAt : null,
      created_by_type: caller.actor.type,
      created_by_id: caller.actor.id ?? null,
    })
    .pipe(Effect.orDie)
  if (prepared.kind === "background") {
    yield* repo
      .setImportSource(id, yield* (yield* Crypto).seal(sourceSealContext(id), input.sourceUrl))
      .pipe(Effect.orDie)
    yield* addJob(TASKS.userImport, { jobId: id }, { jobKey: jobKey(TASKS.userImport, id) })
  }
  if (prepared.kind === "rows") {
    const seen = new Set<string>()
    const target = { jobId: id, workspaceId: env.workspaceId, environmentId: env.id, actor: caller.actor }
    for (let done = 0; done < prepared.rows.length; done += IMPORT_BATCH_ROWS) {
      // Nothing else can move this job's checkpoint before the route's transaction commits.
      yield* importBatch(target, prepared.rows.slice(done, done + IMPORT_BATCH_ROWS), seen, done).pipe(Effect.orDie)
    }
    yield* repo
      .finishImport(id, {
        status: "completed",
        failureCode: null,
        failureMessage: null,
        at: new Date(yield* Clock.currentTimeMillis),
      })
      .pipe(Effect.orDie)
  }
  const job = (yield* repo.importJobById(env.workspaceId, id).pipe(Effect.orDie))!
  yield* (yield* Audit).append({
    workspaceId: env.workspaceId,
    environmentId: env.id,
    actor: caller.actor,
    action: "user_import_job.created",
    subjectType: "user_import_job",
    subjectId: job.id,
    result: job.status === "failed" ? "failure" : "success",
    details: importAuditDetails(job),
  })
  return job
}, withCallSpan("userImport.run"))

/** The job's counts and redacted URL for its audit records (never an email). */
export const importAuditDetails = (job: repo.ImportJobRow) => ({
  format: job.format,
  source_url: job.source_url,
  status: job.status,
  total_rows: job.total_rows,
  imported_count: job.imported_count,
  skipped_count: job.skipped_count,
  failed_count: job.failed_count,
  ...(job.failure_code ? { failure_code: job.failure_code } : {}),
})

export const getImportJob = (jobId: string) => reachableJob(repo.importJobById, jobId)

export const importErrors = Effect.fnUntraced(function* (jobId: string, page: Page) {
  const job = yield* getImportJob(jobId)
  let afterRow: number | undefined
  if (page.after !== undefined) {
    if (!/^\d{1,9}$/.test(page.after)) return yield* new InvalidRequest({ detail: "cursor is not valid" })
    afterRow = Number(page.after)
  }
  return yield* repo.importErrorsPage(job.id, { afterRow, limit: page.limit }).pipe(Effect.orDie)
})
