import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { CurrentEnvironment } from "../../tenancy/current-environment.js"
import type { Page } from "../../management/conventions/pagination.js"
import * as passkeyRepo from "../../passkeys/repo.js"
import type { RegistrationOptionsBody, RegistrationVerifyBody } from "../../passkeys/schema.js"
import { type CeremonyScope, Passkeys } from "../../passkeys/service.js"
import { Audit } from "../../platform/audit.js"
import { Events } from "../../platform/events/service.js"
import { ID_PATTERN } from "../../platform/ids.js"
import { lockUser } from "../../users/repo.js"
import { CurrentMe, type Me } from "../auth.js"
import { requireFresh } from "../fresh.js"
import { LastFactorDeletionRequiresConfirmation, PasskeyNotFound } from "../errors.js"
import { authenticationMethodCount } from "../methods.js"
import { withCallSpan } from "../../platform/observability/span.js"

// The user's own passkeys (spec: Self-service /me, passkey routes; rules 1, 4, 6).

const scopeOf = Effect.fnUntraced(function* (me: Me) {
  const env = yield* CurrentEnvironment
  return {
    env: env.record,
    urls: env.urls,
    context: { kind: "session", sessionId: me.sessionId },
    clientId: me.clientId,
    actor: { type: "end_user", id: me.userId },
  } satisfies CeremonyScope
})

/** Spec, /me rule 1: registration needs a fresh session (`auth_time` within 5 minutes). */
const requireFreshSession = (me: Me) => requireFresh(me, "add a passkey")

export const listMyPasskeys = Effect.fnUntraced(function* (page: Page) {
  const me = yield* CurrentMe
  const env = yield* CurrentEnvironment
  return yield* passkeyRepo.passkeysOfUserPage(env.record.id, me.userId, page).pipe(Effect.orDie)
})

export const myRegistrationOptions = Effect.fnUntraced(function* (body: RegistrationOptionsBody) {
  const me = yield* CurrentMe
  yield* requireFreshSession(me)
  const passkeys = yield* Passkeys
  const sql = yield* SqlClient.SqlClient
  return yield* sql
    .withTransaction(passkeys.creationOptions(yield* scopeOf(me), me.user, body))
    .pipe(Effect.catchTag("SqlError", Effect.die))
}, withCallSpan("me.passkeyRegistrationOptions"))

export const myRegistrationVerify = Effect.fnUntraced(function* (body: RegistrationVerifyBody) {
  const me = yield* CurrentMe
  yield* requireFreshSession(me)
  const passkeys = yield* Passkeys
  return yield* passkeys.verifyRegistration(yield* scopeOf(me), me.user, {
    credential: body.credential,
    ...(body.name === undefined ? {} : { name: body.name }),
  })
}, withCallSpan("me.passkeyRegistrationVerify"))

/**
 * DELETE /me/passkeys/{passkeyId}. The user row is locked first, so concurrent deletions
 * are serialised and the last-method count (docs/architecture.md, Last factor) is exact: a deletion that
 * would leave no method is refused with 400 last_factor_deletion_requires_confirmation.
 */
export const deleteMyPasskey = Effect.fnUntraced(function* (passkeyId: string) {
  const me = yield* CurrentMe
  const env = yield* CurrentEnvironment
  const sql = yield* SqlClient.SqlClient
  const events = yield* Events
  const audit = yield* Audit
  if (!ID_PATTERN("psk").test(passkeyId)) return yield* new PasskeyNotFound({ detail: "No such passkey" })
  return yield* sql
    .withTransaction(
      Effect.gen(function* () {
        yield* lockUser(env.record.id, me.userId)
        const methods = yield* authenticationMethodCount(env.record.id, me.userId)
        const deleted = yield* passkeyRepo.deletePasskeyOfUser(env.record.id, me.userId, passkeyId)
        if (!deleted) return yield* new PasskeyNotFound({ detail: "No such passkey" })
        if (methods <= 1) {
          return yield* new LastFactorDeletionRequiresConfirmation({
            detail:
              "This passkey is your last way to sign in; add another method (a passkey, a linked account or a verified email) first",
          })
        }
        const actor = { type: "end_user" as const, id: me.userId }
        yield* events.emit({
          type: "passkey.deleted",
          workspaceId: env.record.workspaceId,
          environmentId: env.record.id,
          actor,
          payload: { userId: me.userId, passkeyId: deleted.id },
        })
        yield* audit.append({
          workspaceId: env.record.workspaceId,
          environmentId: env.record.id,
          actor,
          action: "passkey.deleted",
          subjectType: "passkey",
          subjectId: deleted.id,
          details: { user_id: me.userId, via: "me" },
        })
        return deleted
      }),
    )
    .pipe(Effect.catchTag("SqlError", Effect.die))
}, withCallSpan("me.deletePasskey"))
