import { Effect } from "effect"
import { CurrentEnvironment } from "../tenancy/current-environment.js"
import { UserUnavailable } from "../oidc/access-token/errors.js"
import { lockUser } from "../users/repo.js"
import type { Me } from "./auth.js"

/**
 * The caller's user row, locked (FOR UPDATE) for the rest of the SQL transaction: every /me
 * write of one user is serialised (last-factor counts, email switch, deletion).
 */
export const lockMe = Effect.fnUntraced(function* (me: Me) {
  const env = yield* CurrentEnvironment
  const user = yield* lockUser(env.record.id, me.userId)
  // withMe found the user active a moment ago; a vanished row is a failed read of user state.
  if (!user) return yield* new UserUnavailable({ retryAfterSeconds: 1 })
  return user
})

export const actorOf = (me: Me) => ({ type: "end_user" as const, id: me.userId })
