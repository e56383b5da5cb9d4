import { Clock, Effect } from "effect"
import { InvalidRequest } from "../../http/errors.js"
import { Audit } from "../../platform/audit.js"
import { Ids } from "../../platform/ids.js"
import type { EnvironmentRecord } from "../../tenancy/schema.js"
import { normalizeEmail } from "../../users/repo.js"
import { Users } from "../../users/service.js"
import { redactUrl } from "../../webhooks/url-policy.js"
import { CurrentCaller } from "../auth/caller.js"
import type { Page } from "../http/pagination.js"
import type { FetchOutcome } from "./fetch-source.js"
import { type ImportUser, parseSource, type RowError } from "./parse-source.js"
import * as repo from "./repo.js"
import { reachableJob } from "./reachable.js"

export interface ImportRequest {
  readonly env: EnvironmentRecord
  readonly format: "json" | "csv"
  readonly sourceUrl: string
  /** The source as fetched during the request (before the job's transaction). */
  readonly fetched: FetchOutcome
  readonly startedAt: Date
}

/**
 * POST /user-import-jobs, after the fetch: parses the file and creates its users, in the
 * route's one SQL transaction (the job, its users, their `user.created` events, its row
 * errors and its audit record commit together; nothing is half-imported). Users are made by
 * `Users.create` (method `email_otp`, as POST /users); an email already registered in the
 * Environment, or repeated in the file, is skipped with a row error; an invalid row is
 * refused with a row error. A fetch or file problem fails the whole job (`error`).
 */
export const runImport = (input: ImportRequest) => Effect.gen(function* () {
  const caller = yield* CurrentCaller
  const users = yield* Users
  const ids = yield* Ids
  const { env } = input
  const id = yield* ids.make("job")
  const errors: Array<RowError> = []
  let failure: { code: string; message: string } | undefined
  let total = 0
  let imported = 0
  let skipped = 0

  const parsed = input.fetched.ok ? parseSource(input.format, input.fetched.body) : undefined
  if (!input.fetched.ok) failure = { code: input.fetched.code, message: input.fetched.message }
  else if (parsed && !parsed.ok) failure = { code: parsed.code, message: parsed.message }
  else if (parsed && parsed.ok) {
    total = parsed.rows.length
    // File order decides which of two rows with one email is the duplicate ...
    const seen = new Set<string>()
    const candidates: Array<{ readonly row: number; readonly key: string; readonly user: ImportUser }> = []
    for (const row of parsed.rows) {
      if (!row.ok) {
        errors.push({ row: row.row, code: row.code, field: row.field, message: row.message })
        continue
      }
      const key = normalizeEmail(row.user.email)
      if (seen.has(key)) {
        skipped++
        errors.push({ row: row.row, code: "duplicate_in_file", field: "email", message: "The email appears in an earlier row of the file" })
        continue
      }
      seen.add(key)
      candidates.push({ row: row.row, key, user: row.user })
    }
    // ... and users are inserted in email order: concurrent imports then take the unique
    // index's locks in one order and cannot deadlock on overlapping files.
    candidates.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    for (const { row, user } of candidates) {
      const created = yield* users.create({
        workspaceId: env.workspaceId, environmentId: env.id, email: user.email, emailVerified: user.email_verified ?? false,
        name: user.name, avatarUrl: user.avatar_url, locale: user.locale, timezone: user.timezone,
        metadata: user.metadata, method: "email_otp", actor: caller.actor,
      })
      if (created) imported++
      else {
        skipped++
        errors.push({ row, code: "email_already_registered", field: "email", message: "A user with this email already exists in the Environment" })
      }
    }
  }

  const completedAt = new Date(yield* Clock.currentTimeMillis)
  const job = yield* repo.insertImportJob({
    id, workspace_id: env.workspaceId, environment_id: env.id, format: input.format, source_url: redactUrl(input.sourceUrl),
    status: failure ? "failed" : "completed", total_rows: total, imported_count: imported, skipped_count: skipped,
    failed_count: errors.length - skipped, failure_code: failure?.code ?? null, failure_message: failure?.message ?? null,
    created_at: input.startedAt, started_at: input.startedAt, completed_at: completedAt,
    created_by_type: caller.actor.type, created_by_id: caller.actor.id ?? null,
  }).pipe(Effect.orDie)
  yield* repo.insertImportErrors(job.id, errors).pipe(Effect.orDie)
  yield* (yield* Audit).append({
    workspaceId: env.workspaceId, environmentId: env.id, actor: caller.actor, action: "user_import_job.created",
    subjectType: "user_import_job", subjectId: job.id, result: failure ? "failure" : "success",
    details: {
      format: job.format, source_url: job.source_url, status: job.status, total_rows: total, imported_count: imported,
      skipped_count: skipped, failed_count: job.failed_count, ...(failure ? { failure_code: failure.code } : {}),
    },
  })
  return job
}).pipe(Effect.withSpan("userImport.run"))

export const getImportJob = (jobId: string) => reachableJob(repo.importJobById, jobId)

export const importErrors = (jobId: string, page: Page) => Effect.gen(function* () {
  const job = yield* getImportJob(jobId)
  let afterRow: number | undefined
  if (page.after !== undefined) {
    if (!/^\d{1,9}$/.test(page.after)) return yield* new InvalidRequest({ detail: "cursor is not valid" })
    afterRow = Number(page.after)
  }
  return yield* repo.importErrorsPage(job.id, { afterRow, limit: page.limit }).pipe(Effect.orDie)
})
