import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { sha256Hex } from "../../platform/crypto.js"
import { newFamily, revokeSessionAndFamilies } from "../refresh/service.js"
import { mintTokens } from "../tokens/mint.js"
import { MAX_RESOURCES } from "../../login/rules.js"
import { narrow } from "./check-narrowing.js"
import { isWellFormedVerifier, pkceMatches } from "./check-pkce.js"
import { checkGrantState, liveStateOfGrant } from "./check-user.js"
import { liveStatePrimer } from "../access-token/live-cache.js"
import { OAuthError } from "../../http/errors.js"
import { assertOriginAllowedForClient } from "../../http/cors/client-origins.js"
import { checkClient } from "./client-auth.js"
import { clientOf } from "./client-repo.js"
import { type CodeState, consumeCodeAndIssue, readClientAndCode } from "./code-repo.js"
import { accessDenied, invalidGrant, invalidRequest, invalidScope } from "./errors.js"
import type { GrantContext } from "./grant.js"
import { tokenResponseBody } from "./response.js"
import { withCallSpan } from "../../platform/observability/span.js"

/**
 * A replayed code (RFC 6749 4.1.2, docs/architecture.md): revoke the refresh family and the login
 * session its first exchange created, commit that, then refuse with invalid_grant.
 */
const refuseReplay = Effect.fnUntraced(function* (ctx: GrantContext, row: CodeState, nowMs: number) {
  const sql = yield* SqlClient.SqlClient
  yield* sql.withTransaction(
    revokeSessionAndFamilies({
      environmentId: ctx.environmentId,
      userId: row.user_id,
      sessionId: row.session_id,
      reason: "refresh_token_reuse",
      familyReason: "code_replayed",
      actor: { type: "system" },
      now: new Date(nowMs),
      audit: { action: "token.code_replayed", details: { client_id: row.client_id } },
    }),
  )
  return yield* invalidGrant("The authorization code has already been used")
})

/**
 * grant_type=authorization_code (spec: Token; RFC 6749 4.1.3, RFC 7636 4.5-4.6).
 * Required: code, redirect_uri, code_verifier; optional: resource (narrows the set stored
 * at authorize time). Steps: read the code; refuse a foreign client's or an unknown code;
 * then redirect URI and PKCE S256 (proof of possession before anything is revealed); a
 * blocked user (403); a used code is a replay; then expiry (60 s), resource, user and
 * session state; none of these refusals consumes the code. Then consume it with a
 * compare-and-set that also creates the refresh family (offline_access only) and marks
 * the login transaction consumed: of concurrent exchanges exactly one wins and the others
 * are replays. Tokens are signed once the code is won.
 */
export const authorizationCodeGrant = Effect.fnUntraced(function* (ctx: GrantContext) {
  const code = yield* ctx.params.required("code")
  const redirectUri = yield* ctx.params.required("redirect_uri")
  const verifier = yield* ctx.params.required("code_verifier")
  if (!isWellFormedVerifier(verifier)) {
    return yield* invalidRequest("code_verifier must be 43 to 128 unreserved characters (RFC 7636 4.1)")
  }
  const requestedResources = ctx.params.many("resource")
  if (requestedResources.length > MAX_RESOURCES)
    return yield* invalidRequest(`At most ${MAX_RESOURCES} resource values`)
  const codeHash = sha256Hex(code)
  const nowMs = yield* Clock.currentTimeMillis

  // Taken before the read: the user and session state read here is kept for UserInfo only if
  // nothing about that user changed since (src/oidc/access-token/live-cache.ts).
  const prime = yield* liveStatePrimer
  const read = yield* readClientAndCode(ctx.environmentId, ctx.presented.clientId, codeHash)
  const client = checkClient(ctx.presented, read && clientOf(read))
  if (client instanceof OAuthError) return yield* client
  // A browser's cross-origin call must come from an Origin this client registered (CORS; docs/architecture.md, Decisions).
  yield* assertOriginAllowedForClient(client)
  const row = read!.session_id === null ? undefined : (read as CodeState)
  if (!row || row.client_id !== client.id) return yield* invalidGrant("The authorization code is invalid")
  // Proof of possession first (RFC 7636 4.6; RFC 9700 2.1.1): a caller who holds the code but
  // not its verifier (a leaked code) learns nothing more than invalid_grant: not the block,
  // not whether the code was used, and it cannot make a replay revoke the user's session.
  if (row.redirect_uri !== redirectUri)
    return yield* invalidGrant("redirect_uri does not match the authorization request")
  if (!pkceMatches(verifier, row.code_challenge))
    return yield* invalidGrant("code_verifier does not match the code_challenge")
  // Spec, OAuth errors: "access_denied 403: blocked user", also when the code was already used
  // or has expired; nothing changes (blocking revoked the session and its families already).
  if (row.user_status === "blocked") return yield* accessDenied("The user is blocked")
  if (row.consumed_at !== null) return yield* refuseReplay(ctx, row, nowMs)
  if (row.expires_at.getTime() <= nowMs) return yield* invalidGrant("The authorization code has expired")
  const resources = narrow(row.resources, requestedResources)
  if (!resources.ok) return yield* invalidScope(`resource not granted at authorization: ${resources.outside.join(" ")}`)
  const refused = checkGrantState(row, nowMs)
  if (refused) return yield* refused

  const family = row.scopes.includes("offline_access") ? yield* newFamily(nowMs) : undefined
  const won = yield* consumeCodeAndIssue({
    environmentId: ctx.environmentId,
    codeHash,
    now: new Date(nowMs),
    workspaceId: row.workspace_id,
    clientId: row.client_id,
    userId: row.user_id,
    sessionId: row.session_id,
    transactionId: row.transaction_id,
    scopes: row.scopes,
    resources: row.resources,
    authTime: row.auth_time,
    family,
  })
  if (!won) return yield* refuseReplay(ctx, row, nowMs)
  prime?.(ctx.environmentId, liveStateOfGrant(row))

  const tokens = yield* mintTokens(
    {
      issuer: ctx.issuer,
      environmentId: ctx.environmentId,
      clientId: row.client_id,
      userId: row.user_id,
      sessionId: row.session_id,
      scopes: row.scopes,
      resources: resources.values,
      amr: row.method,
      acr: row.acr,
      authTime: row.auth_time,
      securityVersion: row.user_security_version,
      nonce: row.nonce,
      user: {
        name: row.name,
        locale: row.locale,
        updated_at: row.user_updated_at,
        email: row.email,
        email_verified: row.email_verified,
      },
    },
    nowMs,
  )
  return JSON.stringify(
    tokenResponseBody({
      accessToken: tokens.accessToken,
      idToken: tokens.idToken,
      refreshToken: family?.refreshToken,
      scopes: row.scopes,
    }),
  )
}, withCallSpan("oidc.token.authorization_code"))
