import { Clock, Effect } from "effect"
import { Audit } from "../../platform/audit.js"
import { Crypto } from "../../platform/crypto.js"
import { Ids } from "../../platform/ids.js"
import type { EnvironmentRecord } from "../../tenancy/schema.js"
import { userById } from "../../users/repo.js"
import { CurrentCaller } from "../auth/caller.js"
import { UserNotFound } from "../users/errors.js"
import { presentIdentity, presentPasskey, presentSession, presentUser } from "../users/present.js"
import { ExportExpired, ExportNotReady } from "./errors.js"
import * as repo from "./repo.js"
import { reachableJob } from "./reachable.js"

/** How long a completed export can be downloaded (decisions: "Export download"). */
export const EXPORT_DOWNLOAD_TTL_MS = 15 * 60_000

/** The artifact is sealed under the master key, bound to its job row. */
export const artifactSealContext = (jobId: string) => ({ purpose: "user-export-artifact", table: "user_export_jobs", rowId: jobId })

/**
 * The user's data as a JSON document: profile, linked identities, passkey summaries and
 * every login session (live or ended). The same presenters as the Users routes, so nothing
 * leaves that those never show: no security version, user handle, credential ids, public
 * keys, sign counts, provider subjects, IP hashes or tokens.
 */
const buildArtifact = (env: EnvironmentRecord, jobId: string, userId: string, exportedAt: Date) => Effect.gen(function* () {
  const user = yield* userById(env.id, userId)
  if (!user) return undefined
  const identities = yield* repo.identitiesForExport(env.id, userId)
  const passkeys = yield* repo.passkeysForExport(env.id, userId)
  const sessions = yield* repo.sessionsForExport(env.id, userId)
  return {
    format: "authservice.user-export" as const,
    version: 1 as const,
    job_id: jobId,
    exported_at: exportedAt.toISOString(),
    environment_id: env.id,
    user: presentUser(user),
    identities: identities.map(presentIdentity),
    passkeys: passkeys.map(presentPasskey),
    sessions: sessions.map((s) => ({
      ...presentSession(s), revoked_at: s.revoked_at?.toISOString() ?? null, revoked_reason: s.revoked_reason,
    })),
  }
}).pipe(Effect.orDie)

/**
 * POST /user-export-jobs: builds the artifact during the request (spec: "the ... artifact
 * creation runs inside the request"), seals it in the job row and opens a 15-minute
 * download window. An unknown target user is 404 `user_not_found` and creates no job.
 */
export const runExport = (env: EnvironmentRecord, targetUserId: string) => Effect.gen(function* () {
  const caller = yield* CurrentCaller
  const crypto = yield* Crypto
  const id = yield* (yield* Ids).make("job")
  const nowMs = yield* Clock.currentTimeMillis
  const now = new Date(nowMs)
  const artifact = yield* buildArtifact(env, id, targetUserId, now)
  if (!artifact) return yield* new UserNotFound({ detail: "User not found" })
  const text = JSON.stringify(artifact)
  const job = yield* repo.insertExportJob({
    id, workspace_id: env.workspaceId, environment_id: env.id, target_user_id: targetUserId, status: "completed",
    artifact_sealed: yield* crypto.seal(artifactSealContext(id), text), artifact_bytes: Buffer.byteLength(text),
    failure_code: null, failure_message: null, created_at: now, completed_at: now,
    download_expires_at: new Date(nowMs + EXPORT_DOWNLOAD_TTL_MS),
    created_by_type: caller.actor.type, created_by_id: caller.actor.id ?? null,
  }).pipe(Effect.orDie)
  yield* (yield* Audit).append({
    workspaceId: env.workspaceId, environmentId: env.id, actor: caller.actor, action: "user_export_job.created",
    subjectType: "user", subjectId: targetUserId, details: { job_id: job.id, size_bytes: job.artifact_bytes },
  })
  return job
}).pipe(Effect.withSpan("userExport.run"))

export const getExportJob = (jobId: string) => reachableJob(repo.exportJobById, jobId)

/**
 * GET .../download: the artifact while the window is open; afterwards 410 `export_expired`
 * (the artifact itself is wiped by housekeeping). Each download is audited: personal data
 * leaves the service.
 */
export const downloadExport = (jobId: string) => Effect.gen(function* () {
  const job = yield* getExportJob(jobId)
  if (job.status !== "completed") return yield* new ExportNotReady({ detail: `The export is ${job.status}; there is nothing to download` })
  const nowMs = yield* Clock.currentTimeMillis
  if (job.artifact_sealed === null || job.download_expires_at === null || nowMs >= job.download_expires_at.getTime()) {
    return yield* new ExportExpired({ detail: "The download window of this export has passed; create a new export job" })
  }
  const artifact = yield* (yield* Crypto).open(artifactSealContext(job.id), job.artifact_sealed).pipe(Effect.orDie)
  const caller = yield* CurrentCaller
  yield* (yield* Audit).append({
    workspaceId: job.workspace_id, environmentId: job.environment_id, actor: caller.actor, action: "user_export_job.downloaded",
    subjectType: "user", subjectId: job.target_user_id, details: { job_id: job.id },
  })
  return { job, artifact }
})

/** Housekeeping: artifacts past their download window are wiped (data minimisation). */
export const purgeExpiredExports = Effect.gen(function* () {
  const now = new Date(yield* Clock.currentTimeMillis)
  return yield* repo.purgeExpiredArtifacts(now)
}).pipe(Effect.orDie)
