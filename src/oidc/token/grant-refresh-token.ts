import { Clock, Effect } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { Crypto, constantTimeEqual, type SecretBoxError, sha256Hex } from "../../platform/crypto.js"
import type { Audit } from "../../platform/audit.js"
import type { Keys } from "../../platform/keys/service.js"
import { Events } from "../../platform/events/service.js"
import type { PipelinedReads } from "../../platform/pipelined-reads.js"
import { ACR_BASIC } from "../codes/issue.js"
import { OAuthError, type OriginNotAllowed } from "../../http/errors.js"
import { type FamilyState, readClientAndFamily, rotateFamily } from "../refresh/repo.js"
import { assertOriginAllowedForClient } from "../../http/cors/client-origins.js"
import { checkClient } from "./client-auth.js"
import { clientOf } from "./client-repo.js"
import {
  graceSealContext,
  newGenerationSecret,
  REFRESH_GRACE_MS,
  REFRESH_IDLE_MS,
  sessionIdleExpiry,
  revokeSessionAndFamilies,
} from "../refresh/service.js"
import { type ParsedRefreshToken, parseRefreshToken } from "../refresh/token-format.js"
import { mintTokens } from "../tokens/mint.js"
import { recordMonthlyActiveUser } from "../../usage/mau.js"
import { billingMonthOf } from "../../usage/limits.js"
import { MAX_RESOURCES } from "../../login/rules.js"
import { narrow, splitScope } from "./check-narrowing.js"
import { checkGrantState, liveStateOfGrant } from "./check-user.js"
import { liveStatePrimer } from "../access-token/live-cache.js"
import { accessDenied, invalidGrant, invalidRequest, invalidScope } from "./errors.js"
import type { GrantContext } from "./grant.js"
import { tokenResponseBody } from "./response.js"
import { refreshRefusedForBlockedUser, refreshSucceededEvent } from "./refresh-events.js"
import { countWith } from "../../platform/observability/metrics.js"
import { withCallSpan } from "../../platform/observability/span.js"

interface RefreshRequest {
  readonly token: ParsedRefreshToken
  readonly scopes: ReadonlyArray<string> | undefined
  readonly resources: ReadonlyArray<string>
}

/** Reuse (spec: "Old generation reused after 5 seconds"): revoke the family and its session, commit, refuse. */
const refuseReuse = Effect.fnUntraced(function* (
  ctx: GrantContext,
  family: FamilyState,
  generation: number,
  now: Date,
) {
  const sql = yield* SqlClient.SqlClient
  yield* sql.withTransaction(
    revokeSessionAndFamilies({
      environmentId: ctx.environmentId,
      userId: family.user_id,
      sessionId: family.session_id,
      reason: "refresh_token_reuse",
      familyReason: "refresh_token_reuse",
      actor: { type: "system" },
      now,
      audit: {
        action: "token.refresh_reuse_detected",
        details: {
          client_id: family.client_id,
          refresh_family_id: family.id,
          generation,
          current_generation: family.generation,
        },
      },
    }),
  )
  yield* countWith((m) => m.refreshReuse.inc())
  return yield* invalidGrant("The refresh token was already used; the grant has been revoked")
})

/** What a refresh may fail with: a refusal (OAuth error, CORS), or the database or a sealed response failing. */
type RefreshFailure = OAuthError | OriginNotAllowed | SqlError.SqlError | SecretBoxError

/** The services a refresh uses: it reads and rotates the family, mints tokens, writes events and audit records. */
type RefreshServices = SqlClient.SqlClient | PipelinedReads | Crypto | Events | Audit | Keys

/** One attempt: read the family, decide, and (for the current generation) rotate by compare-and-set. */
const attempt = Effect.fnUntraced(function* (
  ctx: GrantContext,
  request: RefreshRequest,
  isRetry: boolean,
): Effect.fn.Return<string, RefreshFailure, RefreshServices> {
  const crypto = yield* Crypto
  const sql = yield* SqlClient.SqlClient
  const { token } = request
  const nowMs = yield* Clock.currentTimeMillis
  const now = new Date(nowMs)
  // Taken before the read, as for the code exchange (src/oidc/access-token/live-cache.ts).
  const prime = yield* liveStatePrimer
  const read = yield* readClientAndFamily(
    ctx.environmentId,
    ctx.presented.clientId,
    token.familyId,
    token.generation,
    billingMonthOf(nowMs),
  )
  const client = checkClient(ctx.presented, read && clientOf(read))
  if (client instanceof OAuthError) return yield* client
  // A browser's cross-origin call must come from an Origin this client registered (CORS; docs/architecture.md, Decisions).
  yield* assertOriginAllowedForClient(client)
  const family = read!.id === null ? undefined : (read as FamilyState)
  if (!family || family.client_id !== client.id) return yield* invalidGrant("The refresh token is invalid")
  // Only a holder of this generation's secret gets further (a guessed generation number
  // must not revoke someone else's family).
  if (family.presented_hash === null || !constantTimeEqual(sha256Hex(token.secret), family.presented_hash)) {
    return yield* invalidGrant("The refresh token is invalid")
  }
  // Spec, OAuth errors: "access_denied 403: blocked user". Blocking also revokes the family
  // (and raises the security version), so the block is answered before those checks, and
  // before reuse detection: nothing changes for a blocked user's token (decisions, Tokens).
  if (family.user_status === "blocked") {
    yield* refreshRefusedForBlockedUser(ctx.environmentId, family)
    return yield* accessDenied("The user is blocked")
  }
  if (family.revoked_at !== null) return yield* invalidGrant("The refresh token has been revoked")
  if (family.idle_expires_at.getTime() <= nowMs || family.absolute_expires_at.getTime() <= nowMs) {
    return yield* invalidGrant("The refresh token has expired")
  }

  if (token.generation !== family.generation) {
    const inGrace =
      token.generation === family.grace_generation &&
      family.grace_response_sealed !== null &&
      family.grace_until !== null &&
      nowMs <= family.grace_until.getTime()
    if (!inGrace) return yield* refuseReuse(ctx, family, token.generation, now)
    const refused = checkGrantState(family, nowMs)
    if (refused) return yield* refused
    const replay = yield* crypto.open(graceSealContext(family.id, token.generation), family.grace_response_sealed!)
    return replay.toString("utf8")
  }

  const refused = checkGrantState(family, nowMs)
  if (refused) return yield* refused
  const scopes = narrow(family.scopes, request.scopes)
  if (!scopes.ok) return yield* invalidScope(`scope beyond the original grant: ${scopes.outside.join(" ")}`)
  const resources = narrow(family.resources, request.resources)
  if (!resources.ok) return yield* invalidScope(`resource beyond the original grant: ${resources.outside.join(" ")}`)

  const tokens = yield* mintTokens(
    {
      issuer: ctx.issuer,
      environmentId: ctx.environmentId,
      clientId: family.client_id,
      userId: family.user_id,
      sessionId: family.session_id,
      scopes: scopes.values,
      resources: resources.values,
      amr: "refresh_token",
      acr: ACR_BASIC,
      authTime: family.auth_time,
      securityVersion: family.user_security_version,
      nonce: null,
      user: {
        name: family.name,
        locale: family.locale,
        updated_at: family.user_updated_at,
        email: family.email,
        email_verified: family.email_verified,
      },
    },
    nowMs,
  )
  const nextGeneration = family.generation + 1
  const next = yield* newGenerationSecret(family.id, nextGeneration)
  const body = JSON.stringify(
    tokenResponseBody({
      accessToken: tokens.accessToken,
      idToken: tokens.idToken,
      refreshToken: next.token,
      scopes: scopes.values,
    }),
  )
  const idleExpiresAt = Math.min(nowMs + REFRESH_IDLE_MS, family.absolute_expires_at.getTime())
  const rotation = {
    environmentId: ctx.environmentId,
    familyId: family.id,
    sessionId: family.session_id,
    retiredGeneration: family.generation,
    nextGeneration,
    nextSecretHash: next.hash,
    graceResponseSealed: yield* crypto.seal(graceSealContext(family.id, family.generation), body),
    graceUntil: new Date(nowMs + REFRESH_GRACE_MS),
    now,
    idleExpiresAt: new Date(idleExpiresAt),
    absoluteExpiresAt: family.absolute_expires_at,
    sessionIdleExpiresAt: sessionIdleExpiry(idleExpiresAt),
    // A successful rotation is a login by refresh token (decisions, "Tokens: refresh events"):
    // login.succeeded with method refresh_token, written by the rotation's statement. No
    // session.created: the login session goes on, none is created.
    event: yield* refreshSucceededEvent(ctx.environmentId, family),
  }
  // A refresh makes the user active this month (src/usage, decisions "Usage"); the read above
  // already knows whether that was recorded, so usually the rotation is the whole transaction.
  const rotated = family.mau_counted
    ? yield* rotateFamily(rotation)
    : yield* sql.withTransaction(
        Effect.gen(function* () {
          const won = yield* rotateFamily(rotation)
          if (won)
            yield* recordMonthlyActiveUser({
              workspaceId: family.workspace_id,
              environmentId: ctx.environmentId,
              userId: family.user_id,
            })
          return won
        }),
      )
  if (rotated) {
    prime?.(ctx.environmentId, liveStateOfGrant(family))
    yield* (yield* Events).written(rotation.event)
    return body
  }
  // A concurrent refresh of the same generation rotated first (or the family was revoked
  // meanwhile): read again, which finds the winner's sealed response (or the revocation).
  if (isRetry) return yield* invalidGrant("The refresh token is invalid")
  return yield* attempt(ctx, request, true)
})

/**
 * grant_type=refresh_token (spec: Token, "Refresh token family"; RFC 6749 6; RFC 9700 4.14.2).
 * - the current generation rotates: a new token of the next generation, the old one
 *   retired; the response is sealed and kept for 5 seconds. The rotation is a
 *   compare-and-set on the generation, so of concurrent refreshes exactly one rotates;
 *   the others re-read and get the winner's response;
 * - the generation just retired, within those 5 seconds, gets that same response again
 *   (only that family and generation: the seal is bound to both);
 * - any older generation proven by its secret, or the retired one after 5 seconds, is
 *   reuse: the family and its login session are revoked (committed), then invalid_grant.
 * Scope and resource may only narrow the original grant (invalid_scope otherwise); the
 * family keeps the original grant. After a refresh amr is ["refresh_token"] and acr basic;
 * auth_time is unchanged.
 */
export const refreshTokenGrant = Effect.fnUntraced(function* (ctx: GrantContext) {
  const presented = yield* ctx.params.required("refresh_token")
  const scopes = splitScope(yield* ctx.params.one("scope"))
  const resources = ctx.params.many("resource")
  if (resources.length > MAX_RESOURCES) return yield* invalidRequest(`At most ${MAX_RESOURCES} resource values`)
  const token = parseRefreshToken(presented)
  if (!token) return yield* invalidGrant("The refresh token is invalid")
  return yield* attempt(ctx, { token, scopes, resources }, false)
}, withCallSpan("oidc.token.refresh_token"))
