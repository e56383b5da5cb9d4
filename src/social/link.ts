import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { InvalidRedirectUri } from "../management/clients/errors.js"
import type { ConnectionRow } from "../management/connections/repo.js"
import type { Provider } from "../management/connections/schema.js"
import { loginClient } from "../login/clients.js"
import { CurrentMe } from "../me/auth.js"
import { requireFresh } from "../me/fresh.js"
import { unavailableOnSqlError } from "../me/unavailable.js"
import { Audit } from "../platform/audit.js"
import { Events } from "../platform/events/service.js"
import { Ids } from "../platform/ids.js"
import { lockUser } from "../users/repo.js"
import { redeemCallback } from "./exchange.js"
import { prepareRedirect, requireUsableConnection } from "./redirect.js"
import * as repo from "./repo.js"
import { withCallSpan } from "../platform/observability/span.js"

/**
 * `POST /me/identities/{provider}/link` (spec: /me rules 1 and 2). In order: a fresh session
 * (`auth_time` within 5 minutes, else 403 `reauthentication_required`); `redirect_uri`
 * byte-equal to a registered redirect URI of the token's client and without a fragment
 * (else 400 `invalid_redirect_uri`); a usable Connection of the provider (else 404
 * `connection_not_found`). The redirect URI is kept in the state row. A database failure
 * anywhere is 503 `user_unavailable`, as on every /me route (src/me/unavailable.ts).
 */
export const startLink = (provider: Provider, redirectUri: string) => unavailableOnSqlError(Effect.gen(function* () {
  const me = yield* CurrentMe
  yield* requireFresh(me, "link an identity")
  const client = yield* loginClient(me.user.environment_id, me.clientId)
  if (redirectUri.includes("#") || !client || client.status !== "active" || !client.redirect_uris.includes(redirectUri)) {
    return yield* new InvalidRedirectUri({ detail: "redirect_uri must equal a redirect URI registered for this client, without a fragment" })
  }
  const connection = yield* requireUsableConnection(me.user.environment_id, provider)
  const redirect = yield* prepareRedirect({ kind: "link", connection, userId: me.userId, clientId: client.id, linkRedirectUri: redirectUri })
  const sql = yield* SqlClient.SqlClient
  const audit = yield* Audit
  yield* sql.withTransaction(Effect.gen(function* () {
    yield* redirect.store
    yield* audit.append({
      workspaceId: me.user.workspace_id, environmentId: me.user.environment_id, actor: { type: "end_user", id: me.userId },
      action: "identity.link_started", subjectType: "user", subjectId: me.userId,
      details: { provider: connection.provider_key, client_id: client.id },
    })
  })).pipe(Effect.catchTag("SqlError", Effect.die))
  return { authorization_url: redirect.url }
})).pipe(withCallSpan("social.startLink"))

/** The result query parameters added to the link's redirect URI (docs/decisions.md). */
export type LinkResult =
  | { readonly linked: true; readonly identityId: string }
  | { readonly linked: false; readonly error: "social_provider_error" | "identity_already_linked" | "provider_already_linked" | "user_unavailable" }

export const linkReturnUrl = (redirectUri: string, provider: string, result: LinkResult) => {
  const params = result.linked
    ? { linked: "true", identity_id: result.identityId, provider }
    : { linked: "false", error: result.error, provider }
  return `${redirectUri}${redirectUri.includes("?") ? "&" : "?"}${new URLSearchParams(params).toString()}`
}

/**
 * The provider's callback for a link state: the code is redeemed, then in one SQL
 * transaction (user row locked) the identity is linked to the state's user, unless that
 * provider subject already belongs to another user (never moved: `identity_already_linked`)
 * or the user already has an identity of this provider (`provider_already_linked`). Linking
 * the same subject again is a success that changes nothing.
 */
export const finishLink = (stateRow: repo.SocialStateRow, connection: ConnectionRow, state: string, params: URLSearchParams) =>
  Effect.gen(function* () {
    const provider = connection.provider_key
    const redirectUri = stateRow.link_redirect_uri ?? ""
    const userId = stateRow.user_id ?? ""
    const redeemed = yield* redeemCallback(connection, stateRow, state, params)
    const sql = yield* SqlClient.SqlClient
    const events = yield* Events
    const audit = yield* Audit
    const ids = yield* Ids
    const base = { workspaceId: stateRow.workspace_id, environmentId: stateRow.environment_id } as const
    const actor = { type: "end_user" as const, id: userId }
    const result: LinkResult = yield* sql.withTransaction(Effect.gen(function* () {
      const refuse = (error: Extract<LinkResult, { linked: false }>["error"], detail: Record<string, unknown> = {}) =>
        audit.append({
          ...base, actor, action: "identity.link_failed", subjectType: "user", subjectId: userId, result: "failure",
          details: { provider, reason: error, ...detail },
        }).pipe(Effect.as({ linked: false, error } as LinkResult))
      if (!redeemed.ok) return yield* refuse("social_provider_error", { failure: redeemed.failure.kind })
      const user = yield* lockUser(stateRow.environment_id, userId).pipe(Effect.orDie)
      if (!user || user.status !== "active") return yield* refuse("user_unavailable")
      const now = new Date(yield* Clock.currentTimeMillis)
      const existing = yield* repo.identityBySubject(stateRow.environment_id, provider, redeemed.profile.subject).pipe(Effect.orDie)
      if (existing && existing.user_id !== userId) return yield* refuse("identity_already_linked")
      if (existing) {
        yield* repo.touchIdentity(stateRow.environment_id, existing.id, redeemed.profile.email ?? null, now).pipe(Effect.orDie)
        return { linked: true, identityId: existing.id } as LinkResult
      }
      if (yield* repo.userHasProviderIdentity(stateRow.environment_id, userId, provider).pipe(Effect.orDie)) {
        return yield* refuse("provider_already_linked")
      }
      const identityId = yield* ids.make("idn")
      const inserted = yield* repo.insertIdentity({
        id: identityId, ...base, userId, connectionId: connection.id, provider, subject: redeemed.profile.subject,
        email: redeemed.profile.email ?? null, now,
      }).pipe(Effect.orDie)
      if (!inserted) return yield* refuse("identity_already_linked")
      yield* events.emit({ type: "identity.linked", ...base, actor, payload: { userId, identityId, provider } })
      yield* audit.append({
        ...base, actor, action: "identity.linked", subjectType: "user", subjectId: userId, details: { provider, identity_id: identityId },
      })
      return { linked: true, identityId } as LinkResult
    })).pipe(Effect.catchTag("SqlError", Effect.die))
    return linkReturnUrl(redirectUri, provider, result)
  }).pipe(withCallSpan("social.finishLink"))
