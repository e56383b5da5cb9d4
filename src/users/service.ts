import { Clock, Context, Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql"
import { Crypto } from "../platform/crypto.js"
import { Events } from "../platform/events/service.js"
import { maskEmail } from "../platform/events/schema.js"
import { Ids } from "../platform/ids.js"
import type { Actor } from "../platform/request-context.js"
import * as refresh from "../oidc/refresh/repo.js"
import * as sessions from "../sessions/repo.js"
import * as repo from "./repo.js"

export interface CreateUserInput extends repo.UserFields {
  /** How the user came to be (the `user.created` payload's `method`). */
  readonly method: "email_otp" | "passkey" | "social"
  readonly actor?: Actor | undefined
}

/**
 * Creating users, shared by the Management API and first logins: one place inserts the row
 * and emits `user.created` in the caller's transaction.
 */
export type SessionRevocationReason = "user_logout" | "admin_revocation" | "refresh_token_reuse" | "session_expired"

export interface RevokeSessionsInput {
  readonly workspaceId: string
  readonly environmentId: string
  readonly userId: string
  /** One session; all of the user's live sessions when absent. */
  readonly sessionId?: string | undefined
  readonly reason: SessionRevocationReason
  readonly actor?: Actor | undefined
}

export interface RequestDeletionInput {
  /** The user row, locked by the caller (`lockUser`) in the current transaction. */
  readonly user: repo.UserRow
  readonly reason: "user_request" | "admin_action"
  /** How the user's sessions end (`admin_revocation` for admin deletes, `user_logout` for DELETE /me). */
  readonly sessionReason: SessionRevocationReason
  readonly actor?: Actor | undefined
}

export class Users extends Context.Service<
  Users,
  {
    /** undefined when the email is already registered in the Environment. */
    readonly create: (input: CreateUserInput) => Effect.Effect<repo.UserRow | undefined, never, SqlClient.SqlClient>
    /**
     * `create` for many users in one INSERT and one outbox INSERT (user import): each new user
     * emits its `user.created`. Returns the created rows; emails already registered are left out.
     */
    readonly createMany: (
      inputs: ReadonlyArray<CreateUserInput>,
    ) => Effect.Effect<ReadonlyArray<repo.UserRow>, never, SqlClient.SqlClient>
    /**
     * Revokes live login sessions and emits one `session.revoked` per session, in the caller's
     * transaction. Returns the revoked session ids (empty when none was live).
     */
    readonly revokeSessions: (
      input: RevokeSessionsInput,
    ) => Effect.Effect<ReadonlyArray<string>, never, SqlClient.SqlClient>
    /**
     * Logical deletion (spec: "States and transitions", User status): the user moves to
     * `pending_deletion`, the security version increases (every access token becomes
     * inactive), every live session is revoked and `user.deleted` is emitted. Returns the
     * updated row, or the row unchanged when it was already pending deletion.
     */
    readonly requestDeletion: (input: RequestDeletionInput) => Effect.Effect<repo.UserRow, never, SqlClient.SqlClient>
  }
>()("users/Users") {}

export const UsersLive = Layer.effect(
  Users,
  Effect.gen(function* () {
    const ids = yield* Ids
    const crypto = yield* Crypto
    const events = yield* Events

    const revokeSessions = Effect.fnUntraced(function* (input: RevokeSessionsInput) {
      const now = new Date(yield* Clock.currentTimeMillis)
      // A revoked session takes its refresh families with it (docs/architecture.md, Decisions). Families are
      // locked before sessions: the lock order of the refresh path, so the two never deadlock.
      for (const sessionId of yield* sessions.liveSessionIds(input, now)) {
        yield* refresh.revokeFamiliesOfSession(input.environmentId, sessionId, "revoked", now)
      }
      const revoked = yield* sessions.revokeLiveSessions(
        { environmentId: input.environmentId, userId: input.userId, sessionId: input.sessionId },
        input.reason,
        now,
      )
      for (const session of revoked) {
        yield* events.emit({
          type: "session.revoked",
          workspaceId: input.workspaceId,
          environmentId: input.environmentId,
          actor: input.actor,
          payload: { userId: input.userId, sessionId: session.id, reason: input.reason },
        })
      }
      return revoked.map((s) => s.id)
    }, Effect.orDie)

    return Users.of({
      create: (input) =>
        Effect.gen(function* () {
          const id = yield* ids.make("usr")
          const userHandle = yield* crypto.randomToken(32)
          const now = new Date(yield* Clock.currentTimeMillis)
          const row = yield* repo.insertUser({ ...input, id, userHandle, now })
          if (!row) return undefined
          yield* events.emit({
            type: "user.created",
            workspaceId: input.workspaceId,
            environmentId: input.environmentId,
            actor: input.actor,
            payload: { userId: row.id, method: input.method, maskedEmail: maskEmail(row.email) },
          })
          return row
        }).pipe(Effect.orDie),
      createMany: (inputs) =>
        Effect.gen(function* () {
          if (inputs.length === 0) return []
          const now = new Date(yield* Clock.currentTimeMillis)
          const rows: Array<repo.NewUser> = []
          for (const input of inputs)
            rows.push({ ...input, id: yield* ids.make("usr"), userHandle: yield* crypto.randomToken(32), now })
          const created = yield* repo.insertUsers(rows)
          const byEmail = new Map(inputs.map((input) => [repo.normalizeEmail(input.email), input]))
          yield* events.emitMany(
            created.map((row) => {
              const input = byEmail.get(row.email_normalized)!
              return {
                type: "user.created" as const,
                workspaceId: input.workspaceId,
                environmentId: input.environmentId,
                actor: input.actor,
                payload: { userId: row.id, method: input.method, maskedEmail: maskEmail(row.email) },
              }
            }),
          )
          return created
        }).pipe(Effect.orDie),
      revokeSessions,
      requestDeletion: (input) =>
        Effect.gen(function* () {
          const { user } = input
          if (user.status === "pending_deletion") return user
          const now = new Date(yield* Clock.currentTimeMillis)
          const updated = yield* repo.setUserStatus(
            user.environment_id,
            user.id,
            user.version,
            {
              status: "pending_deletion",
              blockedReason: user.blocked_reason,
              bumpSecurityVersion: true,
              deletedAt: now,
            },
            now,
          )
          // The caller holds the row lock, so the version cannot have moved.
          if (!updated) return yield* Effect.die(new Error(`user ${user.id} changed under its row lock`))
          yield* revokeSessions({
            workspaceId: user.workspace_id,
            environmentId: user.environment_id,
            userId: user.id,
            reason: input.sessionReason,
            actor: input.actor,
          })
          yield* events.emit({
            type: "user.deleted",
            workspaceId: user.workspace_id,
            environmentId: user.environment_id,
            actor: input.actor,
            payload: { userId: user.id, reason: input.reason },
          })
          return updated
        }).pipe(Effect.orDie),
    })
  }),
)
