import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { CurrentEnvironment } from "../tenancy/current-environment.js"
import { ConnectionNotFound } from "../management/connections/errors.js"
import { usableConnectionById } from "../management/connections/repo.js"
import type { Provider } from "../management/connections/schema.js"
import { CurrentMe, ME_REALM } from "../me/auth.js"
import { actorOf, lockMe } from "../me/lock.js"
import { unavailableOnSqlError } from "../me/unavailable.js"
import { AccessTokenRejected } from "../oidc/access-token/errors.js"
import { bearerChallenge } from "../oidc/access-token/verify.js"
import { Audit } from "../platform/audit.js"
import { Crypto, sha256Hex } from "../platform/crypto.js"
import { withCallSpan } from "../platform/observability/span.js"
import { attachIdentity } from "./attach.js"
import { IdentityAlreadyLinked, InvalidLinkCode, ProviderAlreadyLinked } from "./errors.js"
import { isCurrentFor } from "./identity-key.js"
import { linkResultSealContext } from "./link.js"
import * as repo from "./repo.js"

type ConfirmOutcome =
  | { readonly kind: "linked"; readonly identityId: string; readonly provider: string }
  | { readonly kind: "invalid_code" }
  | { readonly kind: "connection_changed" }
  | { readonly kind: "identity_already_linked" }
  | { readonly kind: "provider_already_linked" }

/**
 * `POST /me/identities/{provider}/link/confirm` `{link_code}` (docs/decisions/social-login.md, Social login:
 * "/me link: the callback no longer links"). The link code is used once (one conditional
 * UPDATE: of two racing confirms one wins) and only by the Bearer token of the user, client and
 * session that started the link, within the link state's 10 minutes; anything else is 400
 * `invalid_link_code` and changes nothing (the attempt is audited). Then, with the user row
 * locked, the link rules apply (src/social/attach.ts): the provider account already another
 * user's: 409 `identity_already_linked`; the user already has a (current) identity of this
 * provider: 409 `provider_already_linked`; the same one again: success, nothing changes; the
 * connection changed since the callback (deleted, disabled, re-pointed or remapped): 404
 * `connection_not_found`. A refusal after the code matched uses the code up (the same answer
 * would come again; start a new link). Success: `{identity_id, provider, linked: true}`.
 */
export const confirmLink = (provider: Provider, linkCode: string) =>
  unavailableOnSqlError(
    Effect.gen(function* () {
      const me = yield* CurrentMe
      const env = yield* CurrentEnvironment
      const sql = yield* SqlClient.SqlClient
      const audit = yield* Audit
      const crypto = yield* Crypto
      const now = new Date(yield* Clock.currentTimeMillis)
      const base = { workspaceId: env.record.workspaceId, environmentId: env.record.id } as const
      const actor = actorOf(me)
      const outcome: ConfirmOutcome = yield* sql.withTransaction(
        Effect.gen(function* () {
          const refuse = (reason: Exclude<ConfirmOutcome["kind"], "linked">, details: Record<string, unknown>) =>
            audit
              .append({
                ...base,
                actor,
                action: "identity.link_failed",
                subjectType: "user",
                subjectId: me.userId,
                result: "failure",
                details: { provider, reason, client_id: me.clientId, ...details },
              })
              .pipe(Effect.as({ kind: reason } as ConfirmOutcome))
          const row = yield* repo.claimLinkCode({
            environmentId: env.record.id,
            linkCodeHash: sha256Hex(linkCode),
            provider,
            userId: me.userId,
            clientId: me.clientId,
            sessionId: me.sessionId,
            now,
          })
          if (!row) return yield* refuse("invalid_code", {})
          const user = yield* lockMe(me)
          // Blocked since the token was checked: refused as every /me call of such a user (rolled back).
          if (user.status !== "active") {
            return yield* new AccessTokenRejected({
              detail: "The user is not active",
              wwwAuthenticate: bearerChallenge(ME_REALM, "The user is not active"),
            })
          }
          const opened = yield* crypto.open(linkResultSealContext(row.id), row.link_result_sealed).pipe(Effect.orDie)
          const result = JSON.parse(opened.toString("utf8")) as {
            subject: string
            issuer: string
            subjectClaim: string
            email: string | null
          }
          const connection = yield* usableConnectionById(env.record.id, row.connection_id)
          if (!connection || !isCurrentFor(connection, result)) return yield* refuse("connection_changed", {})
          const attached = yield* attachIdentity({
            ...base,
            userId: me.userId,
            connection,
            email: result.email,
            now,
            onePerProvider: true,
            key: {
              provider: connection.provider_key,
              issuer: result.issuer,
              subjectClaim: result.subjectClaim,
              subject: result.subject,
              adoptsLegacy: connection.provider === "microsoft",
            },
          })
          if (attached.kind === "other_user") return yield* refuse("identity_already_linked", {})
          if (attached.kind === "provider_taken") return yield* refuse("provider_already_linked", {})
          if (attached.kind === "linked") {
            yield* audit.append({
              ...base,
              actor,
              action: "identity.linked",
              subjectType: "user",
              subjectId: me.userId,
              details: {
                provider: connection.provider_key,
                identity_id: attached.identityId,
                via: "me",
                ...(attached.replaced.length > 0 ? { replaced_stale_identities: attached.replaced } : {}),
              },
            })
          }
          return {
            kind: "linked",
            identityId: attached.identityId,
            provider: connection.provider_key,
          } as ConfirmOutcome
        }),
      )
      switch (outcome.kind) {
        case "linked":
          return { identity_id: outcome.identityId, provider: outcome.provider, linked: true as const }
        case "invalid_code":
          return yield* new InvalidLinkCode({
            detail:
              "The link code is unknown, used or expired, or was not started by this session; start the link again",
          })
        case "connection_changed":
          return yield* new ConnectionNotFound({
            detail: `The ${provider} connection changed since the link started; start again`,
          })
        case "identity_already_linked":
          return yield* new IdentityAlreadyLinked({ detail: "This provider account is linked to another user" })
        case "provider_already_linked":
          return yield* new ProviderAlreadyLinked({
            detail: `You already have a linked ${provider} identity; unlink it first`,
          })
      }
    }),
  ).pipe(withCallSpan("social.confirmLink"))
