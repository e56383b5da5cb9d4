import { Effect } from "effect"
import { SqlError } from "effect/sql"
import { UserUnavailable } from "../oidc/access-token/errors.js"

const unavailable = (cause: unknown) =>
  Effect.logError("/me: user, session or security state could not be read", cause).pipe(
    Effect.andThen(Effect.fail(new UserUnavailable({ retryAfterSeconds: 1 }))),
  )

/**
 * Spec, Errors: 503 `user_unavailable` is a temporary failure reading user, session or
 * security state; the caller retries without re-authenticating. Every /me service runs its
 * SQL through this, so a database failure is that 503 (logged with its cause), never a 500:
 * a typed SqlError, or one that a shared service (Users, Events) turned into a defect.
 */
export const unavailableOnSqlError = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
): Effect.Effect<A, Exclude<E, SqlError.SqlError> | UserUnavailable, R> =>
  effect.pipe(
    Effect.catch(
      (e): Effect.Effect<never, Exclude<E, SqlError.SqlError> | UserUnavailable> =>
        SqlError.isSqlError(e) ? unavailable(e) : Effect.fail(e as Exclude<E, SqlError.SqlError>),
    ),
    Effect.catchDefect((defect) => (SqlError.isSqlError(defect) ? unavailable(defect) : Effect.die(defect))),
  )
