import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Audit } from "../../platform/audit.js"
import { Crypto, sha256Hex } from "../../platform/crypto.js"
import { Events } from "../../platform/events/service.js"
import { Ids } from "../../platform/ids.js"
import { insertSession } from "../../sessions/repo.js"
import { recordMonthlyActiveUser } from "../../usage/mau.js"
import { withCallSpan } from "../../platform/observability/span.js"

/** Spec, Limits: authorization code 60 s; login session 7 days idle / 30 days absolute. */
export const CODE_TTL_MS = 60_000
export const SESSION_IDLE_MS = 7 * 24 * 3600_000
export const SESSION_ABSOLUTE_MS = 30 * 24 * 3600_000

export type LoginMethod = "email_otp" | "passkey" | "social"

/** Spec, Authentication rule 8: phishing-resistant for passkeys, basic otherwise (and after any refresh). */
export const ACR_PHISHING_RESISTANT = "urn:example-auth:loa:phishing-resistant"
export const ACR_BASIC = "urn:example-auth:loa:basic"
export const acrOf = (method: LoginMethod | "refresh_token") =>
  method === "passkey" ? ACR_PHISHING_RESISTANT : ACR_BASIC

export interface CompletedLogin {
  readonly workspaceId: string
  readonly environmentId: string
  readonly transactionId: string
  readonly clientId: string
  readonly userId: string
  /** The user's security version now (the session records it). */
  readonly securityVersion: number
  readonly redirectUri: string
  readonly codeChallenge: string
  readonly scopes: ReadonlyArray<string>
  readonly resources: ReadonlyArray<string>
  readonly nonce: string | null
  readonly method: LoginMethod
  /** When the user proved their identity (`auth_time`). */
  readonly authTime: Date
  readonly deviceName?: string | null | undefined
  readonly ipPrefixHash?: string | undefined
}

/**
 * Completing a login: creates the login session (`ses_`) and a one-time authorization code
 * bound to the client, redirect URI and PKCE challenge, in the caller's transaction, and
 * emits `session.created` and `login.succeeded`. Returns the code (shown once; only its
 * SHA-256 is stored).
 */
export const issueAuthorizationCode = Effect.fnUntraced(
  function* (login: CompletedLogin) {
    const sql = yield* SqlClient.SqlClient
    const ids = yield* Ids
    const crypto = yield* Crypto
    const events = yield* Events
    const audit = yield* Audit
    const now = yield* Clock.currentTimeMillis
    const sessionId = yield* ids.make("ses")
    const acr = acrOf(login.method)
    yield* insertSession({
      id: sessionId,
      workspaceId: login.workspaceId,
      environmentId: login.environmentId,
      userId: login.userId,
      clientId: login.clientId,
      deviceName: login.deviceName ?? null,
      method: login.method,
      acr,
      authTime: login.authTime,
      securityVersion: login.securityVersion,
      ipPrefixHash: login.ipPrefixHash ?? null,
      now: new Date(now),
      idleExpiresAt: new Date(now + SESSION_IDLE_MS),
      absoluteExpiresAt: new Date(now + SESSION_ABSOLUTE_MS),
    })
    const code = yield* crypto.randomToken(32)
    // The code, the user's last login and the audit record in one statement (one round trip).
    const audited = yield* audit.cte({
      workspaceId: login.workspaceId,
      environmentId: login.environmentId,
      actor: { type: "end_user", id: login.userId },
      action: "login.succeeded",
      subjectType: "user",
      subjectId: login.userId,
      details: { session_id: sessionId, client_id: login.clientId, method: login.method },
    })
    yield* sql`with ${audited}, seen as (
      update users set last_login_at = ${new Date(now)} where environment_id = ${login.environmentId} and id = ${login.userId}
    )
    insert into authorization_codes (code_hash, workspace_id, environment_id, transaction_id, client_id, user_id,
      session_id, redirect_uri, code_challenge, scopes, resources, nonce, method, acr, auth_time, created_at, expires_at)
    values (${sha256Hex(code)}, ${login.workspaceId}, ${login.environmentId}, ${login.transactionId}, ${login.clientId},
      ${login.userId}, ${sessionId}, ${login.redirectUri}, ${login.codeChallenge}, ${login.scopes as Array<string>}::text[],
      ${login.resources as Array<string>}::text[], ${login.nonce}, ${login.method}, ${acr}, ${login.authTime},
      ${new Date(now)}, ${new Date(now + CODE_TTL_MS)})`
    const common = {
      userId: login.userId,
      sessionId,
      method: login.method,
      clientId: login.clientId,
      ...(login.ipPrefixHash ? { ipPrefixHash: login.ipPrefixHash } : {}),
    }
    const actor = { type: "end_user" as const, id: login.userId }
    yield* events.emit({
      type: "session.created",
      workspaceId: login.workspaceId,
      environmentId: login.environmentId,
      actor,
      payload: common,
    })
    yield* events.emit({
      type: "login.succeeded",
      workspaceId: login.workspaceId,
      environmentId: login.environmentId,
      actor,
      payload: common,
    })
    yield* recordMonthlyActiveUser({
      workspaceId: login.workspaceId,
      environmentId: login.environmentId,
      userId: login.userId,
    })
    return { code, sessionId }
  },
  Effect.orDie,
  withCallSpan("oidc.issueAuthorizationCode"),
)
