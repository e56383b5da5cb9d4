import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { InvalidRedirectUri } from "../management/clients/errors.js"
import type { ConnectionRow } from "../management/connections/repo.js"
import type { Provider } from "../management/connections/schema.js"
import { loginClient } from "../login/clients.js"
import { CurrentMe } from "../me/auth.js"
import { requireFresh } from "../me/fresh.js"
import { unavailableOnSqlError } from "../me/unavailable.js"
import { Audit } from "../platform/audit.js"
import { Crypto, sha256Hex } from "../platform/crypto.js"
import { redeemCallback } from "./exchange.js"
import { prepareRedirect, requireUsableConnection } from "./redirect.js"
import * as repo from "./repo.js"
import { appendQuery } from "./urls.js"
import { withCallSpan } from "../platform/observability/span.js"

/**
 * `POST /me/identities/{provider}/link` (spec: /me rules 1 and 2). In order: a fresh session
 * (`auth_time` within 5 minutes, else 403 `reauthentication_required`); `redirect_uri`
 * byte-equal to a registered redirect URI of the token's client and without a fragment
 * (else 400 `invalid_redirect_uri`); a usable Connection of the provider (else 404
 * `connection_not_found`). The redirect URI and the calling session are kept in the state row.
 * A database failure anywhere is 503 `user_unavailable`, as on every /me route (src/me/unavailable.ts).
 */
export const startLink = (provider: Provider, redirectUri: string) =>
  unavailableOnSqlError(
    Effect.gen(function* () {
      const me = yield* CurrentMe
      yield* requireFresh(me, "link an identity")
      const client = yield* loginClient(me.user.environment_id, me.clientId)
      if (
        redirectUri.includes("#") ||
        !client ||
        client.status !== "active" ||
        !client.redirect_uris.includes(redirectUri)
      ) {
        return yield* new InvalidRedirectUri({
          detail: "redirect_uri must equal a redirect URI registered for this client, without a fragment",
        })
      }
      const connection = yield* requireUsableConnection(me.user.environment_id, provider)
      const redirect = yield* prepareRedirect({
        kind: "link",
        connection,
        userId: me.userId,
        clientId: client.id,
        sessionId: me.sessionId,
        linkRedirectUri: redirectUri,
      })
      const sql = yield* SqlClient.SqlClient
      const audit = yield* Audit
      yield* sql
        .withTransaction(
          Effect.gen(function* () {
            yield* redirect.store
            yield* audit.append({
              workspaceId: me.user.workspace_id,
              environmentId: me.user.environment_id,
              actor: { type: "end_user", id: me.userId },
              action: "identity.link_started",
              subjectType: "user",
              subjectId: me.userId,
              details: { provider: connection.provider_key, client_id: client.id },
            })
          }),
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
      return { authorization_url: redirect.url }
    }),
  ).pipe(withCallSpan("social.startLink"))

export const linkResultSealContext = (stateId: string) => ({
  purpose: "social-link-result",
  table: "social_states",
  rowId: stateId,
})

/** What the link's callback verified, kept sealed for the confirm. */
interface LinkResult {
  readonly subject: string
  readonly issuer: string
  readonly subjectClaim: string
  readonly email: string | null
}

/**
 * The provider's callback for a link state (docs/decisions/social-login.md, Social login: "/me link: the
 * callback no longer links"). The browser that comes back may not be the user's: an attacker
 * can start a link on its own account and send the authorization URL to a victim signed in at
 * the provider. So the callback only redeems the code and keeps the verified result (sealed,
 * bound to the state row), and sends the browser to the link's redirect URI with a one-time
 * 256-bit `link_code` (SHA-256 kept); the link happens at the confirm, which needs the access
 * token of the user, client and session that started it. A refusal or failed exchange:
 * `linked=false&error=social_provider_error`.
 */
export const finishLink = Effect.fnUntraced(function* (
  stateRow: repo.SocialStateRow,
  connection: ConnectionRow,
  state: string,
  params: URLSearchParams,
) {
  const provider = connection.provider_key
  const redirectUri = stateRow.link_redirect_uri ?? ""
  const userId = stateRow.user_id ?? ""
  const redeemed = yield* redeemCallback(connection, stateRow, state, params)
  const sql = yield* SqlClient.SqlClient
  const audit = yield* Audit
  const crypto = yield* Crypto
  const base = { workspaceId: stateRow.workspace_id, environmentId: stateRow.environment_id } as const
  const actor = { type: "end_user" as const, id: userId }
  if (!redeemed.ok) {
    yield* audit.append({
      ...base,
      actor,
      action: "identity.link_failed",
      subjectType: "user",
      subjectId: userId,
      result: "failure",
      details: { provider, reason: "social_provider_error", failure: redeemed.failure.kind },
    })
    return appendQuery(redirectUri, { linked: "false", error: "social_provider_error", provider })
  }
  const result: LinkResult = {
    subject: redeemed.profile.subject,
    issuer: redeemed.profile.issuer,
    subjectClaim: redeemed.profile.subjectClaim,
    email: redeemed.profile.email ?? null,
  }
  const code = yield* crypto.randomToken(32)
  const sealed = yield* crypto.seal(linkResultSealContext(stateRow.id), JSON.stringify(result))
  yield* sql
    .withTransaction(
      Effect.gen(function* () {
        yield* repo.keepLinkResult(stateRow.environment_id, stateRow.id, sealed, sha256Hex(code))
        yield* audit.append({
          ...base,
          actor,
          action: "identity.link_verified",
          subjectType: "user",
          subjectId: userId,
          details: { provider, client_id: stateRow.client_id },
        })
      }),
    )
    .pipe(Effect.catchTag("SqlError", Effect.die))
  return appendQuery(redirectUri, { link_code: code, provider })
}, withCallSpan("social.finishLink"))
