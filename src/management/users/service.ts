import { Clock, Effect } from "effect"
import { PreconditionFailed } from "../../http/errors.js"
import { canonicalJson } from "../../platform/canonical-json.js"
import { Audit } from "../../platform/audit.js"
import { Events } from "../../platform/events/service.js"
import * as sessions from "../../sessions/repo.js"
import type { EnvironmentRecord } from "../../tenancy/schema.js"
import { EmailAlreadyRegistered } from "../../users/errors.js"
import * as users from "../../users/repo.js"
import { Users } from "../../users/service.js"
import { CurrentCaller } from "../auth/caller.js"
import { type ExpectedVersion, matchVersion } from "../conventions/etag.js"
import type { Page } from "../conventions/pagination.js"
import {
  UserIdentityNotFound,
  UserNotFound,
  UserPasskeyNotFound,
  UserPendingDeletion,
  UserSessionNotFound,
} from "./errors.js"
import * as repo from "./repo.js"
import { canonicalLocale, canonicalTimeZone, type CreateUserBody, type UpdateUserBody } from "./schema.js"

// Rules of the Management Users routes. Every write runs inside the route's one SQL
// transaction (withIdempotency), locks the user row first, emits its domain events and
// appends its audit record there, so they exist exactly when the change commits.

const nowDate = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

const audit = (
  env: EnvironmentRecord,
  action: string,
  subject: { type: string; id: string },
  details: Record<string, unknown> = {},
) =>
  Effect.gen(function* () {
    const caller = yield* CurrentCaller
    yield* (yield* Audit).append({
      workspaceId: env.workspaceId,
      environmentId: env.id,
      actor: caller.actor,
      action,
      subjectType: subject.type,
      subjectId: subject.id,
      details,
    })
  })

const userOrNotFound = Effect.fnUntraced(function* (env: EnvironmentRecord, userId: string) {
  const user = yield* users.userById(env.id, userId).pipe(Effect.orDie)
  if (!user) return yield* new UserNotFound({ detail: "User not found" })
  return user
})

/** Locks the row (FOR UPDATE) and holds the version `If-Match` expects: every write to one user is serialised. */
const lockForWrite = Effect.fnUntraced(function* (
  env: EnvironmentRecord,
  userId: string,
  expectedVersion: ExpectedVersion,
) {
  const user = yield* users.lockUser(env.id, userId).pipe(Effect.orDie)
  if (!user) return yield* new UserNotFound({ detail: "User not found" })
  yield* matchVersion(expectedVersion, user.version)
  return user
})

const refusePendingDeletion = (user: users.UserRow) =>
  user.status === "pending_deletion"
    ? Effect.fail(new UserPendingDeletion({ detail: "The user is pending deletion" }))
    : Effect.void

/** Locale and time zone are stored in canonical form (`en-us` -> `en-US`, `europe/paris` -> `Europe/Paris`). */
export const canonicalProfile = <T extends { locale?: string | null; timezone?: string | null }>(fields: T): T => ({
  ...fields,
  ...(typeof fields.locale === "string" ? { locale: canonicalLocale(fields.locale) ?? fields.locale } : {}),
  ...(typeof fields.timezone === "string" ? { timezone: canonicalTimeZone(fields.timezone) ?? fields.timezone } : {}),
})

export const listUsers = (
  env: EnvironmentRecord,
  filter: { status?: users.UserRow["status"] | undefined; search?: string | undefined },
  page: Page,
) =>
  repo
    .listUsers({ environmentId: env.id, status: filter.status, search: filter.search?.toLowerCase(), ...page })
    .pipe(Effect.orDie)

export const getUser = userOrNotFound

/**
 * POST /users. Admin-created users are recorded with `user.created` method `email_otp`:
 * the payload requires one of the three login methods, and Email OTP is how such a user
 * signs in first. Email is unique per Environment (409 `email_already_registered`); the
 * unique index makes two concurrent creations of one address end with exactly one user.
 */
export const createUser = Effect.fnUntraced(function* (env: EnvironmentRecord, body: CreateUserBody) {
  const caller = yield* CurrentCaller
  const fields = canonicalProfile(body)
  const row = yield* (yield* Users).create({
    workspaceId: env.workspaceId,
    environmentId: env.id,
    email: fields.email,
    emailVerified: fields.email_verified ?? false,
    name: fields.name,
    avatarUrl: fields.avatar_url,
    locale: fields.locale,
    timezone: fields.timezone,
    metadata: fields.metadata,
    method: "email_otp",
    actor: caller.actor,
  })
  if (!row)
    return yield* new EmailAlreadyRegistered({ detail: "A user with this email already exists in the Environment" })
  yield* audit(
    env,
    "user.created",
    { type: "user", id: row.id },
    { method: "email_otp", email_verified: row.email_verified },
  )
  return row
})

export const sameValue = (a: unknown, b: unknown) => canonicalJson(a) === canonicalJson(b)

/**
 * PATCH /users/{id}: profile and metadata fields. Fields whose value does not change are
 * not reported; a PATCH that changes nothing leaves the version (ETag) as it was and emits
 * nothing. `user.updated` names the changed wire fields.
 */
export const updateUser = Effect.fnUntraced(function* (
  env: EnvironmentRecord,
  userId: string,
  body: UpdateUserBody,
  expectedVersion: ExpectedVersion,
) {
  const user = yield* lockForWrite(env, userId, expectedVersion)
  yield* refusePendingDeletion(user)
  const wanted = canonicalProfile(body)
  const changes: Record<string, unknown> = {}
  for (const [field, value] of Object.entries(wanted)) {
    if (value !== undefined && !sameValue(value, user[field as keyof users.UserRow])) changes[field] = value
  }
  const changedFields = Object.keys(changes)
  if (changedFields.length === 0) return user
  const updated = yield* users
    .updateUserFields(env.id, user.id, user.version, changes as users.UserFieldChanges, yield* nowDate)
    .pipe(Effect.orDie)
  if (!updated) return yield* new PreconditionFailed()
  const caller = yield* CurrentCaller
  yield* (yield* Events).emit({
    type: "user.updated",
    workspaceId: env.workspaceId,
    environmentId: env.id,
    actor: caller.actor,
    payload: { userId: user.id, changedFields: changedFields as [string, ...Array<string>] },
  })
  yield* audit(env, "user.updated", { type: "user", id: user.id }, { changed_fields: changedFields })
  return updated
})

/**
 * DELETE /users/{id}: logical deletion to `pending_deletion` (security version +1, sessions
 * revoked with `admin_revocation`, `user.deleted` reason `admin_action`). The last-factor
 * rule of /me does not apply to an administrator. Deleting a user already pending deletion
 * changes nothing and answers the same record.
 */
export const deleteUser = Effect.fnUntraced(function* (
  env: EnvironmentRecord,
  userId: string,
  expectedVersion: ExpectedVersion,
) {
  const user = yield* lockForWrite(env, userId, expectedVersion)
  if (user.status === "pending_deletion") return user
  const caller = yield* CurrentCaller
  const updated = yield* (yield* Users).requestDeletion({
    user,
    reason: "admin_action",
    sessionReason: "admin_revocation",
    actor: caller.actor,
  })
  yield* audit(
    env,
    "user.deleted",
    { type: "user", id: user.id },
    { reason: "admin_action", previous_status: user.status },
  )
  return updated
})

/**
 * POST /users/{id}/block: status `blocked`, security version +1 (every access token of the
 * user becomes inactive at once), every live session revoked (`session.revoked` reason
 * `admin_revocation`, so refresh tokens die too), `user.blocked` reason `admin_action`, or
 * `abuse_detection` when the body's `reason` is exactly that (an abuse-detection system calling
 * the block route: docs/decisions/management-api.md, "Block"). Blocking a blocked user changes nothing.
 */
export const blockUser = Effect.fnUntraced(function* (
  env: EnvironmentRecord,
  userId: string,
  reason: string | undefined,
  expectedVersion: ExpectedVersion,
) {
  const user = yield* lockForWrite(env, userId, expectedVersion)
  yield* refusePendingDeletion(user)
  if (user.status === "blocked") return user
  const caller = yield* CurrentCaller
  const now = yield* nowDate
  const eventReason = reason === "abuse_detection" ? "abuse_detection" : "admin_action"
  const updated = yield* users
    .setUserStatus(
      env.id,
      user.id,
      user.version,
      { status: "blocked", blockedReason: reason ?? null, bumpSecurityVersion: true },
      now,
    )
    .pipe(Effect.orDie)
  if (!updated) return yield* new PreconditionFailed()
  const revoked = yield* (yield* Users).revokeSessions({
    workspaceId: env.workspaceId,
    environmentId: env.id,
    userId: user.id,
    reason: "admin_revocation",
    actor: caller.actor,
  })
  yield* (yield* Events).emit({
    type: "user.blocked",
    workspaceId: env.workspaceId,
    environmentId: env.id,
    actor: caller.actor,
    payload: { userId: user.id, reason: eventReason },
  })
  yield* audit(
    env,
    "user.blocked",
    { type: "user", id: user.id },
    {
      reason: eventReason,
      ...(reason !== undefined ? { note: reason } : {}),
      revoked_sessions: revoked.length,
    },
  )
  return updated
})

/**
 * POST /users/{id}/unblock: back to `active`. No event type reports an unblock, so it is
 * `user.updated` with changedFields ["status"]. The security version is not restored:
 * tokens issued before the block stay inactive. Unblocking an active user changes nothing.
 */
export const unblockUser = Effect.fnUntraced(function* (
  env: EnvironmentRecord,
  userId: string,
  expectedVersion: ExpectedVersion,
) {
  const user = yield* lockForWrite(env, userId, expectedVersion)
  yield* refusePendingDeletion(user)
  if (user.status === "active") return user
  const caller = yield* CurrentCaller
  const updated = yield* users
    .setUserStatus(
      env.id,
      user.id,
      user.version,
      { status: "active", blockedReason: null, bumpSecurityVersion: false },
      yield* nowDate,
    )
    .pipe(Effect.orDie)
  if (!updated) return yield* new PreconditionFailed()
  yield* (yield* Events).emit({
    type: "user.updated",
    workspaceId: env.workspaceId,
    environmentId: env.id,
    actor: caller.actor,
    payload: { userId: user.id, changedFields: ["status"] },
  })
  yield* audit(env, "user.unblocked", { type: "user", id: user.id })
  return updated
})

// ---- identities, passkeys, sessions ------------------------------------------------------

export const listIdentities = Effect.fnUntraced(function* (env: EnvironmentRecord, userId: string, page: Page) {
  yield* userOrNotFound(env, userId)
  return yield* repo.identitiesOfUser(env.id, userId, page).pipe(Effect.orDie)
})

/** Unlinks an identity (`identity.unlinked`). An administrator may remove the last method. */
export const unlinkIdentity = Effect.fnUntraced(function* (env: EnvironmentRecord, userId: string, identityId: string) {
  yield* userOrNotFound(env, userId)
  const identity = yield* repo.deleteIdentity(env.id, userId, identityId).pipe(Effect.orDie)
  if (!identity) return yield* new UserIdentityNotFound({ detail: "Identity not found" })
  const caller = yield* CurrentCaller
  yield* (yield* Events).emit({
    type: "identity.unlinked",
    workspaceId: env.workspaceId,
    environmentId: env.id,
    actor: caller.actor,
    payload: { userId, identityId: identity.id, provider: identity.provider },
  })
  yield* audit(
    env,
    "identity.unlinked",
    { type: "identity", id: identity.id },
    { user_id: userId, provider: identity.provider },
  )
  return identity
})

export const listPasskeys = Effect.fnUntraced(function* (env: EnvironmentRecord, userId: string, page: Page) {
  yield* userOrNotFound(env, userId)
  return yield* repo.passkeysOfUser(env.id, userId, page).pipe(Effect.orDie)
})

/** Deletes a passkey (`passkey.deleted`). An administrator may remove the last method. */
export const deletePasskey = Effect.fnUntraced(function* (env: EnvironmentRecord, userId: string, passkeyId: string) {
  yield* userOrNotFound(env, userId)
  const passkey = yield* repo.deletePasskey(env.id, userId, passkeyId).pipe(Effect.orDie)
  if (!passkey) return yield* new UserPasskeyNotFound({ detail: "Passkey not found" })
  const caller = yield* CurrentCaller
  yield* (yield* Events).emit({
    type: "passkey.deleted",
    workspaceId: env.workspaceId,
    environmentId: env.id,
    actor: caller.actor,
    payload: { userId, passkeyId: passkey.id },
  })
  yield* audit(env, "passkey.deleted", { type: "passkey", id: passkey.id }, { user_id: userId })
  return passkey
})

export const listSessions = Effect.fnUntraced(function* (env: EnvironmentRecord, userId: string, page: Page) {
  yield* userOrNotFound(env, userId)
  return yield* sessions.liveSessionsOfUser(env.id, userId, yield* nowDate, page).pipe(Effect.orDie)
})

/**
 * Revokes one session (`session.revoked` reason `admin_revocation`). A session of the user
 * that already ended (revoked or expired) answers the same success and emits nothing.
 */
export const revokeSession = Effect.fnUntraced(function* (env: EnvironmentRecord, userId: string, sessionId: string) {
  yield* userOrNotFound(env, userId)
  const session = yield* sessions.lockSessionOfUser(env.id, userId, sessionId).pipe(Effect.orDie)
  if (!session) return yield* new UserSessionNotFound({ detail: "Session not found" })
  const caller = yield* CurrentCaller
  const revoked = yield* (yield* Users).revokeSessions({
    workspaceId: env.workspaceId,
    environmentId: env.id,
    userId,
    sessionId,
    reason: "admin_revocation",
    actor: caller.actor,
  })
  if (revoked.length > 0)
    yield* audit(
      env,
      "session.revoked",
      { type: "session", id: sessionId },
      { user_id: userId, reason: "admin_revocation" },
    )
  return session
})

/** Revokes every live session of the user (one `session.revoked` each). */
export const revokeAllSessions = Effect.fnUntraced(function* (env: EnvironmentRecord, userId: string) {
  yield* userOrNotFound(env, userId)
  const caller = yield* CurrentCaller
  const revoked = yield* (yield* Users).revokeSessions({
    workspaceId: env.workspaceId,
    environmentId: env.id,
    userId,
    reason: "admin_revocation",
    actor: caller.actor,
  })
  yield* audit(
    env,
    "user.sessions_revoked",
    { type: "user", id: userId },
    { reason: "admin_revocation", revoked_sessions: revoked.length },
  )
  return revoked
})
