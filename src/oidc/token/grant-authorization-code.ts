import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Audit } from "../../platform/audit.js"
import { sha256Hex } from "../../platform/crypto.js"
import { createFamily, revokeSessionAndFamilies } from "../refresh/service.js"
import { mintTokens } from "../tokens/mint.js"
import { MAX_RESOURCES, narrow } from "./check-narrowing.js"
import { isWellFormedVerifier, pkceMatches } from "./check-pkce.js"
import { checkGrantState } from "./check-user.js"
import { consumeCode, lockCode } from "./code-repo.js"
import { invalidGrant, invalidRequest, invalidScope } from "./errors.js"
import type { GrantContext } from "./grant.js"
import { tokenResponseBody } from "./response.js"
import { markTransactionConsumed } from "./transaction.js"

/**
 * grant_type=authorization_code (spec: Token; RFC 6749 4.1.3, RFC 7636 4.5-4.6).
 * Required: code, redirect_uri, code_verifier; optional: resource (narrows the set stored
 * at authorize time). The code lives 60 s and is single use: of concurrent exchanges the
 * code row lock lets exactly one win; a replayed code is invalid_grant and revokes the
 * refresh family and login session its first exchange created (RFC 6749 4.1.2,
 * DESIGN.md), committed before the error is returned.
 */
export const authorizationCodeGrant = (ctx: GrantContext) => Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const audit = yield* Audit
  const code = yield* ctx.params.required("code")
  const redirectUri = yield* ctx.params.required("redirect_uri")
  const verifier = yield* ctx.params.required("code_verifier")
  if (!isWellFormedVerifier(verifier)) {
    return yield* invalidRequest("code_verifier must be 43 to 128 unreserved characters (RFC 7636 4.1)")
  }
  const requestedResources = ctx.params.many("resource")
  if (requestedResources.length > MAX_RESOURCES) return yield* invalidRequest(`At most ${MAX_RESOURCES} resource values`)
  const codeHash = sha256Hex(code)

  const outcome = yield* sql.withTransaction(Effect.gen(function* () {
    const nowMs = yield* Clock.currentTimeMillis
    const now = new Date(nowMs)
    const row = yield* lockCode(ctx.environmentId, codeHash)
    if (!row || row.client_id !== ctx.client.id) return yield* invalidGrant("The authorization code is invalid")
    if (row.consumed_at !== null) {
      // Replay: revoke what the first exchange issued, keep that revocation, then refuse.
      yield* revokeSessionAndFamilies({
        environmentId: ctx.environmentId, userId: row.user_id, sessionId: row.session_id,
        reason: "refresh_token_reuse", familyReason: "code_replayed", actor: { type: "system" }, now,
        audit: { action: "token.code_replayed", details: { client_id: row.client_id, refresh_family_id: row.refresh_family_id } },
      })
      return { error: invalidGrant("The authorization code has already been used") } as const
    }
    if (row.expires_at.getTime() <= nowMs) return yield* invalidGrant("The authorization code has expired")
    if (row.redirect_uri !== redirectUri) return yield* invalidGrant("redirect_uri does not match the authorization request")
    if (!pkceMatches(verifier, row.code_challenge)) return yield* invalidGrant("code_verifier does not match the code_challenge")
    const resources = narrow(row.resources, requestedResources)
    if (!resources.ok) return yield* invalidScope(`resource not granted at authorization: ${resources.outside.join(" ")}`)
    const refused = checkGrantState(row, nowMs)
    if (refused) return yield* refused

    const family = row.scopes.includes("offline_access")
      ? yield* createFamily({
        workspaceId: row.workspace_id, environmentId: ctx.environmentId, clientId: row.client_id, userId: row.user_id,
        sessionId: row.session_id, scopes: row.scopes, resources: row.resources, authTime: row.auth_time, now,
      })
      : undefined
    yield* consumeCode(ctx.environmentId, codeHash, now, family?.familyId ?? null)
    yield* markTransactionConsumed(ctx.environmentId, row.transaction_id)
    const tokens = yield* mintTokens({
      issuer: ctx.issuer, environmentId: ctx.environmentId, clientId: row.client_id, userId: row.user_id,
      sessionId: row.session_id, scopes: row.scopes, resources: resources.values, amr: row.method, acr: row.acr,
      authTime: row.auth_time, securityVersion: row.user_security_version, nonce: row.nonce,
      user: { name: row.name, locale: row.locale, updated_at: row.user_updated_at, email: row.email, email_verified: row.email_verified },
    }, nowMs)
    yield* audit.append({
      workspaceId: row.workspace_id, environmentId: ctx.environmentId, actor: { type: "end_user", id: row.user_id },
      action: "token.code_exchanged", subjectType: "session", subjectId: row.session_id,
      details: { client_id: row.client_id, scope: row.scopes.join(" "), refresh_family_id: family?.familyId ?? null },
    })
    return {
      body: tokenResponseBody({
        accessToken: tokens.accessToken, idToken: tokens.idToken, refreshToken: family?.refreshToken, scopes: row.scopes,
      }),
    } as const
  }))
  if ("error" in outcome) return yield* outcome.error
  return JSON.stringify(outcome.body)
}).pipe(Effect.withSpan("oidc.token.authorization_code"))
