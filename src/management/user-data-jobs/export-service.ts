import { Clock, Effect, Stream } from "effect"
import type { SqlClient } from "effect/sql"
import { Audit } from "../../platform/audit.js"
import { Crypto } from "../../platform/crypto.js"
import { Ids } from "../../platform/ids.js"
import type { EnvironmentRecord } from "../../tenancy/schema.js"
import { type UserRow, userById } from "../../users/repo.js"
import { CurrentCaller } from "../auth/caller.js"
import { UserNotFound } from "../users/errors.js"
import { presentIdentity, presentPasskey, presentSession, presentUser } from "../users/present.js"
import { ExportExpired, ExportNotReady } from "./errors.js"
import * as repo from "./repo.js"
import { reachableJob } from "./reachable.js"
import { withCallSpan } from "../../platform/observability/span.js"

/** How long a completed export can be downloaded (decisions: "Export download"). */
export const EXPORT_DOWNLOAD_TTL_MS = 15 * 60_000

/** The artifact is sealed under the master key, bound to its job row. */
export const artifactSealContext = (jobId: string) => ({
  purpose: "user-export-artifact",
  table: "user_export_jobs",
  rowId: jobId,
})

/** Each stored chunk of a chunked artifact is sealed on its own, bound to its job and position. */
export const chunkSealContext = (rowKey: string) => ({
  purpose: "user-export-artifact-chunk",
  table: "user_export_chunks",
  rowId: rowKey,
})
/** The row key of a chunk, as the master-key rotation reads it: `job_id/seq` with seq padded to 10 digits. */
export const chunkRowKey = (jobId: string, seq: number) => `${jobId}/${String(seq).padStart(10, "0")}`

/** JSON bytes per stored chunk (64 KiB): what the export holds in memory besides one page of sessions. */
export const EXPORT_CHUNK_BYTES = 64 * 1024
/** Sessions read per query while the artifact is written. */
const SESSION_PAGE = 500

/**
 * The artifact's JSON text is written piece by piece; every EXPORT_CHUNK_BYTES it is sealed
 * and stored as the next chunk. Returns the total size and the number of chunks.
 */
const chunkWriter = Effect.fnUntraced(function* (jobId: string) {
  const crypto = yield* Crypto
  let pending: Array<Buffer> = []
  let pendingBytes = 0
  let total = 0
  let seq = 0
  const flush = Effect.gen(function* () {
    if (pendingBytes === 0) return
    const chunk = Buffer.concat(pending)
    pending = []
    pendingBytes = 0
    yield* repo
      .insertExportChunk(jobId, seq, yield* crypto.seal(chunkSealContext(chunkRowKey(jobId, seq)), chunk))
      .pipe(Effect.orDie)
    seq++
  })
  const write = Effect.fnUntraced(function* (text: string) {
    const bytes = Buffer.from(text, "utf8")
    pending.push(bytes)
    pendingBytes += bytes.length
    total += bytes.length
    if (pendingBytes >= EXPORT_CHUNK_BYTES) yield* flush
  })
  const end = Effect.map(flush, () => ({ bytes: total, chunks: seq }))
  return { write, end }
})

/**
 * The user's data as a JSON document: profile, linked identities, passkey summaries and
 * every login session (live or ended), written to the job's chunks as it is read (sessions
 * page by page). The same presenters as the Users routes, so nothing leaves that those never
 * show: no security version, user handle, credential ids, public keys, sign counts, provider
 * subjects, IP hashes or tokens.
 */
const writeArtifact = Effect.fnUntraced(function* (
  env: EnvironmentRecord,
  jobId: string,
  user: UserRow,
  exportedAt: Date,
) {
  const out = yield* chunkWriter(jobId)
  const identities = yield* repo.identitiesForExport(env.id, user.id)
  const passkeys = yield* repo.passkeysForExport(env.id, user.id)
  const head = JSON.stringify({
    format: "authservice.user-export",
    version: 1,
    job_id: jobId,
    exported_at: exportedAt.toISOString(),
    environment_id: env.id,
    user: presentUser(user),
    identities: identities.map(presentIdentity),
    passkeys: passkeys.map(presentPasskey),
  })
  // The head object without its closing brace, then the sessions array written as it is read.
  yield* out.write(`${head.slice(0, -1)},"sessions":[`)
  let after: { createdAt: Date; id: string } | undefined
  let first = true
  for (;;) {
    const page = yield* repo.sessionsForExport(env.id, user.id, after, SESSION_PAGE)
    for (const s of page) {
      yield* out.write(
        (first ? "" : ",") +
          JSON.stringify({
            ...presentSession(s),
            revoked_at: s.revoked_at?.toISOString() ?? null,
            revoked_reason: s.revoked_reason,
          }),
      )
      first = false
    }
    if (page.length < SESSION_PAGE) break
    const last = page[page.length - 1]!
    after = { createdAt: last.created_at, id: last.id }
  }
  yield* out.write("]}")
  return yield* out.end
}, Effect.orDie)

/**
 * POST /user-export-jobs: builds the artifact during the request (spec: "the ... artifact
 * creation runs inside the request"), seals it chunk by chunk in the route's transaction and
 * opens a 15-minute download window. An unknown target user is 404 `user_not_found` and
 * creates no job.
 */
export const runExport = Effect.fnUntraced(function* (env: EnvironmentRecord, targetUserId: string) {
  const caller = yield* CurrentCaller
  const id = yield* (yield* Ids).make("job")
  const nowMs = yield* Clock.currentTimeMillis
  const now = new Date(nowMs)
  const user = yield* userById(env.id, targetUserId).pipe(Effect.orDie)
  if (!user) return yield* new UserNotFound({ detail: "User not found" })
  yield* repo
    .insertExportJob({
      id,
      workspace_id: env.workspaceId,
      environment_id: env.id,
      target_user_id: targetUserId,
      status: "completed",
      artifact_sealed: null,
      artifact_bytes: 0,
      failure_code: null,
      failure_message: null,
      created_at: now,
      completed_at: now,
      download_expires_at: new Date(nowMs + EXPORT_DOWNLOAD_TTL_MS),
      created_by_type: caller.actor.type,
      created_by_id: caller.actor.id ?? null,
    })
    .pipe(Effect.orDie)
  const written = yield* writeArtifact(env, id, user, now)
  const job = yield* repo.completeExportJob(id, written.bytes, written.chunks).pipe(Effect.orDie)
  yield* (yield* Audit).append({
    workspaceId: env.workspaceId,
    environmentId: env.id,
    actor: caller.actor,
    action: "user_export_job.created",
    subjectType: "user",
    subjectId: targetUserId,
    details: { job_id: job.id, size_bytes: job.artifact_bytes },
  })
  return job
}, withCallSpan("userExport.run"))

export const getExportJob = (jobId: string) => reachableJob(repo.exportJobById, jobId)

/**
 * GET .../download: the artifact while the window is open, as a stream of its chunks (each
 * read and opened when the response needs it); afterwards 410 `export_expired` (the artifact
 * itself is wiped by housekeeping). Each download is audited: personal data leaves the service.
 */
export const downloadExport = Effect.fnUntraced(function* (jobId: string) {
  const job = yield* getExportJob(jobId)
  if (job.status !== "completed")
    return yield* new ExportNotReady({ detail: `The export is ${job.status}; there is nothing to download` })
  const nowMs = yield* Clock.currentTimeMillis
  const stored = job.artifact_sealed !== null || (job.artifact_chunks !== null && job.artifact_purged_at === null)
  if (!stored || job.download_expires_at === null || nowMs >= job.download_expires_at.getTime()) {
    return yield* new ExportExpired({
      detail: "The download window of this export has passed; create a new export job",
    })
  }
  const crypto = yield* Crypto
  const context = yield* Effect.context<SqlClient.SqlClient>()
  const artifact: Stream.Stream<Uint8Array> =
    job.artifact_sealed !== null
      ? Stream.fromEffect(crypto.open(artifactSealContext(job.id), job.artifact_sealed).pipe(Effect.orDie))
      : Stream.unfold(0, (seq) =>
          seq >= job.artifact_chunks!
            ? Effect.succeed(undefined)
            : Effect.gen(function* () {
                const sealed = yield* repo.exportChunk(job.id, seq)
                // Purged while being downloaded: the response ends short (the client sees a broken body).
                if (sealed === undefined) return yield* Effect.die(new Error(`export ${job.id}: chunk ${seq} is gone`))
                const plain = yield* crypto.open(chunkSealContext(chunkRowKey(job.id, seq)), sealed)
                return [new Uint8Array(plain), seq + 1] as const
              }).pipe(Effect.orDie),
        ).pipe(Stream.provideContext(context))
  const caller = yield* CurrentCaller
  yield* (yield* Audit).append({
    workspaceId: job.workspace_id,
    environmentId: job.environment_id,
    actor: caller.actor,
    action: "user_export_job.downloaded",
    subjectType: "user",
    subjectId: job.target_user_id,
    details: { job_id: job.id },
  })
  return { job, artifact }
})

/** Housekeeping: artifacts past their download window are wiped (data minimisation). */
export const purgeExpiredExports = Effect.gen(function* () {
  const now = new Date(yield* Clock.currentTimeMillis)
  return yield* repo.purgeExpiredArtifacts(now)
}).pipe(Effect.orDie)
