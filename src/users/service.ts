import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Crypto } from "../platform/crypto.js"
import { Events } from "../platform/events/service.js"
import { maskEmail } from "../platform/events/schema.js"
import { Ids } from "../platform/ids.js"
import type { Actor } from "../platform/request-context.js"
import * as repo from "./repo.js"

export interface CreateUserInput {
  readonly workspaceId: string
  readonly environmentId: string
  readonly email: string
  readonly emailVerified: boolean
  readonly name?: string | null | undefined
  readonly avatarUrl?: string | null | undefined
  readonly locale?: string | null | undefined
  readonly timezone?: string | null | undefined
  readonly metadata?: Record<string, unknown> | undefined
  /** How the user came to be (the `user.created` payload's `method`). */
  readonly method: "email_otp" | "passkey" | "social"
  readonly actor?: Actor | undefined
}

/**
 * Creating users, shared by the Management API and first logins: one place inserts the row
 * and emits `user.created` in the caller's transaction.
 */
export class Users extends Context.Service<Users, {
  /** undefined when the email is already registered in the Environment. */
  readonly create: (input: CreateUserInput) => Effect.Effect<repo.UserRow | undefined, never, SqlClient.SqlClient>
}>()("users/Users") {}

export const UsersLive = Layer.effect(Users, Effect.gen(function* () {
  const ids = yield* Ids
  const crypto = yield* Crypto
  const events = yield* Events
  return Users.of({
    create: (input) => Effect.gen(function* () {
      const id = yield* ids.make("usr")
      const userHandle = yield* crypto.randomToken(32)
      const now = new Date(yield* Clock.currentTimeMillis)
      const row = yield* repo.insertUser({ ...input, id, userHandle, now })
      if (!row) return undefined
      yield* events.emit({
        type: "user.created", workspaceId: input.workspaceId, environmentId: input.environmentId, actor: input.actor,
        payload: { userId: row.id, method: input.method, maskedEmail: maskEmail(row.email) },
      })
      return row
    }).pipe(Effect.orDie),
  })
}))
