import { Clock, Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Keys } from "../platform/keys/service.js"
import * as repo from "../platform/keys/repo.js"
import { withCallSpan } from "../platform/observability/span.js"

export class UnknownEnvironment extends Schema.TaggedError<UnknownEnvironment>()("UnknownEnvironment", {
  message: Schema.String,
}) {}

export interface SigningKeyRotation {
  readonly environment_id: string
  /** `staged`: a next key is now published; `waiting`: it is published but not long enough; `rotated`: it signs now. */
  readonly action: "staged" | "waiting" | "rotated"
  readonly active_kid: string
  readonly next_kid: string | null
  /** When the staged key may be promoted (publish-ahead elapsed); null once promoted. */
  readonly promotable_at: string | null
}

/**
 * Signing-key rotation that publishes the next key before it signs (docs/decisions/security-hardening.md). Run it twice:
 * the first run stages a key (it appears in the JWKS at once); a run after `publishAheadMs`
 * promotes it and retires the old key, which stays in the JWKS until the tokens it signed
 * have expired. Verifiers that cache the JWKS for less than the publish-ahead period never
 * meet an unknown `kid`. The Environment row lock serialises concurrent runs.
 */
export const rotateSigningKey = Effect.fnUntraced(function* (environmentId: string, publishAheadMs: number) {
  const sql = yield* SqlClient.SqlClient
  const keys = yield* Keys
  return yield* sql.withTransaction(
    Effect.gen(function* () {
      if (!(yield* repo.lockEnvironmentKeys(environmentId))) {
        return yield* new UnknownEnvironment({ message: `No Environment ${environmentId}` })
      }
      const now = yield* Clock.currentTimeMillis
      const active = (yield* repo.activeKey(environmentId))?.kid
      if (active === undefined)
        return yield* new UnknownEnvironment({ message: `Environment ${environmentId} has no active signing key` })
      const staged = yield* repo.nextKey(environmentId)
      if (!staged) {
        yield* keys.stage(environmentId)
        const published = (yield* repo.nextKey(environmentId))!
        return {
          environment_id: environmentId,
          action: "staged",
          active_kid: active,
          next_kid: published.kid,
          promotable_at: new Date(published.published_at.getTime() + publishAheadMs).toISOString(),
        } satisfies SigningKeyRotation
      }
      const promotableAt = staged.published_at.getTime() + publishAheadMs
      if (promotableAt > now) {
        return {
          environment_id: environmentId,
          action: "waiting",
          active_kid: active,
          next_kid: staged.kid,
          promotable_at: new Date(promotableAt).toISOString(),
        } satisfies SigningKeyRotation
      }
      yield* keys.promote(environmentId, staged.kid)
      return {
        environment_id: environmentId,
        action: "rotated",
        active_kid: staged.kid,
        next_kid: null,
        promotable_at: null,
      } satisfies SigningKeyRotation
    }),
  )
}, withCallSpan("operator.rotateSigningKey"))
