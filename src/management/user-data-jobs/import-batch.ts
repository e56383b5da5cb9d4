import { Effect, Schema } from "effect"
import type { Actor } from "../../platform/request-context.js"
import { normalizeEmail } from "../../users/repo.js"
import { Users } from "../../users/service.js"
import type { ImportUser, ParsedRow, RowError } from "./parse-source.js"
import * as repo from "./repo.js"
import { withCallSpan } from "../../platform/observability/span.js"

/**
 * One batch of an import (decisions: "User import at scale"): its users in one multi-row
 * INSERT ... ON CONFLICT DO NOTHING RETURNING (Users.createMany, with one outbox INSERT for
 * their `user.created` events), its row errors in one INSERT, and the job's counters and
 * checkpoint in one compare-and-set UPDATE, all on the caller's connection: the worker runs
 * each batch in its own transaction, the request runs them in its one transaction.
 */

/** Rows per batch: one round trip of each kind per 1,000 users. */
export const IMPORT_BATCH_ROWS = 1000

export interface SourceRow {
  /** The CSV line (csv-parse's count); null for JSON. */
  readonly line: number | null
  readonly parsed: ParsedRow
}

export interface ImportTarget {
  readonly jobId: string
  readonly workspaceId: string
  readonly environmentId: string
  readonly actor: Actor
}

/** The checkpoint moved under this run: another run of the job committed first. Its batch rolls back. */
export class ImportSuperseded extends Schema.TaggedError<ImportSuperseded>()("ImportSuperseded", {
  jobId: Schema.String,
}) {}

interface Candidate {
  readonly row: number
  readonly line: number | null
  readonly key: string
  readonly user: ImportUser
}

/**
 * Sorts a batch's rows into refusals, in-file duplicates and candidates. `seen` holds the
 * normalized emails of the file's earlier valid rows (file order decides which row is the
 * duplicate); it is updated. Pure: a resumed run replays the committed rows through it.
 */
export const triage = (rows: ReadonlyArray<SourceRow>, seen: Set<string>) => {
  const errors: Array<RowError> = []
  const candidates: Array<Candidate> = []
  let failed = 0
  let skipped = 0
  for (const { line, parsed } of rows) {
    if (!parsed.ok) {
      failed++
      errors.push({ row: parsed.row, line, code: parsed.code, field: parsed.field, message: parsed.message })
      continue
    }
    const key = normalizeEmail(parsed.user.email)
    if (seen.has(key)) {
      skipped++
      errors.push({
        row: parsed.row,
        line,
        code: "duplicate_in_file",
        field: "email",
        message: "The email appears in an earlier row of the file",
      })
      continue
    }
    seen.add(key)
    candidates.push({ row: parsed.row, line, key, user: parsed.user })
  }
  return { errors, candidates, failed, skipped }
}

export const importBatch = (
  target: ImportTarget,
  rows: ReadonlyArray<SourceRow>,
  seen: Set<string>,
  rowsDone: number,
) =>
  Effect.gen(function* () {
    const users = yield* Users
    const { errors, candidates, failed, skipped: duplicates } = triage(rows, seen)
    let skipped = duplicates
    const created = yield* users.createMany(
      candidates.map(({ user }) => ({
        workspaceId: target.workspaceId,
        environmentId: target.environmentId,
        email: user.email,
        emailVerified: user.email_verified ?? false,
        name: user.name,
        avatarUrl: user.avatar_url,
        locale: user.locale,
        timezone: user.timezone,
        metadata: user.metadata,
        method: "email_otp" as const,
        actor: target.actor,
      })),
    )
    const createdKeys = new Set(created.map((u) => u.email_normalized))
    for (const c of candidates) {
      if (createdKeys.has(c.key)) continue
      skipped++
      errors.push({
        row: c.row,
        line: c.line,
        code: "email_already_registered",
        field: "email",
        message: "A user with this email already exists in the Environment",
      })
    }
    errors.sort((a, b) => a.row - b.row)
    yield* repo.insertImportErrors(target.jobId, errors).pipe(Effect.orDie)
    const outcome = { rows: rows.length, imported: created.length, skipped, failed }
    const advanced = yield* repo.advanceImport(target.jobId, rowsDone, outcome).pipe(Effect.orDie)
    if (!advanced) return yield* new ImportSuperseded({ jobId: target.jobId })
    return outcome
  }).pipe(withCallSpan("userImport.batch", { attributes: { rows: rows.length } }))
