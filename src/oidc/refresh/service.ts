import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Audit } from "../../platform/audit.js"
import { Crypto, sha256Hex } from "../../platform/crypto.js"
import { Events } from "../../platform/events/service.js"
import { Ids } from "../../platform/ids.js"
import { liveStateChanged } from "../../platform/live-state-changes.js"
import type { Actor } from "../../platform/request-context.js"
import { revokeLiveSessions } from "../../sessions/repo.js"
import { SESSION_ABSOLUTE_MS, SESSION_IDLE_MS } from "../codes/issue.js"
import * as repo from "./repo.js"
import { formatRefreshToken } from "./token-format.js"

/** Spec, Limits: refresh token 30 days since last use / 90 days since issue; reuse window 5 seconds. */
export const REFRESH_IDLE_MS = 30 * 24 * 3600_000
export const REFRESH_ABSOLUTE_MS = 90 * 24 * 3600_000
export const REFRESH_GRACE_MS = 5_000
/** A rotation renews its login session's row at most once per this long. */
const SESSION_RENEWAL_MS = 60_000

/**
 * The idle expiry a rotation renews its session to: the family's, rounded up to the minute, so the
 * rotations of the rest of that minute leave the session's row alone and it is never short of the
 * family's (docs/decisions/login-and-tokens.md, "Tokens: session activity").
 */
export const sessionIdleExpiry = (familyIdleExpiresAtMs: number) =>
  new Date(Math.ceil(familyIdleExpiresAtMs / SESSION_RENEWAL_MS) * SESSION_RENEWAL_MS)

/** Where a sealed winner response may be opened: this family and this retired generation only. */
export const graceSealContext = (familyId: string, generation: number) => ({
  purpose: "refresh-grace",
  table: "refresh_families",
  rowId: `${familyId}.${generation}`,
})

/** A fresh 256-bit secret for one generation: the token (shown once) and its stored hash. */
export const newGenerationSecret = Effect.fnUntraced(function* (familyId: string, generation: number) {
  const crypto = yield* Crypto
  const secret = yield* crypto.randomToken(32)
  return { token: formatRefreshToken(familyId, generation, secret), hash: sha256Hex(secret) }
})

/** A new family's id, its first (generation 1) token and the family's expiry, for a code exchange. */
export interface NewFamily {
  readonly familyId: string
  readonly refreshToken: string
  readonly secretHash: string
  readonly idleExpiresAt: Date
  readonly absoluteExpiresAt: Date
}

/** Prepares a family for a code exchange that grants `offline_access` (written with the code's consumption). */
export const newFamily = Effect.fnUntraced(function* (nowMs: number) {
  const ids = yield* Ids
  const familyId = yield* ids.make("fam")
  const first = yield* newGenerationSecret(familyId, 1)
  return {
    familyId,
    refreshToken: first.token,
    secretHash: first.hash,
    idleExpiresAt: new Date(nowMs + REFRESH_IDLE_MS),
    absoluteExpiresAt: new Date(nowMs + REFRESH_ABSOLUTE_MS),
  } satisfies NewFamily
})

type SessionRevocationReason = "user_logout" | "refresh_token_reuse"

/**
 * Ends a login session and every refresh family behind it, in the caller's transaction:
 * families first, then the session (the lock order every path here keeps: family, then
 * session), then `session.revoked` and an audit record. Used by logout, refresh-token
 * reuse and authorization-code replay.
 */
export const revokeSessionAndFamilies = (input: {
  readonly environmentId: string
  readonly userId: string
  readonly sessionId: string
  readonly reason: SessionRevocationReason
  readonly familyReason: repo.FamilyRevokedReason
  readonly actor: Actor
  readonly now: Date
  readonly audit: { readonly action: string; readonly details: Record<string, unknown> }
}) =>
  Effect.gen(function* () {
    const events = yield* Events
    const audit = yield* Audit
    const families = yield* repo.revokeFamiliesOfSession(
      input.environmentId,
      input.sessionId,
      input.familyReason,
      input.now,
    )
    // Only a live session is reported revoked: one already past its expiry ended by itself.
    const sessions = yield* revokeLiveSessions(
      { environmentId: input.environmentId, userId: input.userId, sessionId: input.sessionId },
      input.reason,
      input.now,
    )
    for (const s of sessions) {
      yield* events.emit({
        type: "session.revoked",
        workspaceId: s.workspace_id,
        environmentId: input.environmentId,
        actor: input.actor,
        payload: { userId: s.user_id, sessionId: s.id, reason: input.reason },
      })
    }
    const workspaceId = sessions[0]?.workspace_id ?? families[0]?.workspace_id
    if (workspaceId !== undefined) {
      yield* audit.append({
        workspaceId,
        environmentId: input.environmentId,
        actor: input.actor,
        action: input.audit.action,
        subjectType: "session",
        subjectId: input.sessionId,
        details: {
          ...input.audit.details,
          revoked_families: families.map((f) => f.id),
          session_revoked: sessions.length > 0,
        },
      })
    }
    return { families, sessionRevoked: sessions.length > 0 }
  })

/**
 * `POST /oauth2/revoke` with a refresh token: revokes the whole family (spec: Refresh token
 * family). The session's own expiry limits apply again. Idempotent: an already revoked
 * family changes nothing.
 */
export const revokeFamilyByToken = Effect.fnUntraced(function* (environmentId: string, familyId: string, now: Date) {
  const sql = yield* SqlClient.SqlClient
  const audit = yield* Audit
  return yield* sql.withTransaction(
    Effect.gen(function* () {
      const [family] = yield* repo.revokeFamily(environmentId, familyId, "revoked", now)
      if (!family) return false
      yield* repo.restoreSessionLimits(environmentId, family.session_id, SESSION_IDLE_MS, SESSION_ABSOLUTE_MS)
      liveStateChanged(environmentId, family.user_id)
      yield* audit.append({
        workspaceId: family.workspace_id,
        environmentId,
        actor: { type: "end_user", id: family.user_id },
        action: "refresh_family.revoked",
        subjectType: "refresh_family",
        subjectId: family.id,
        details: {
          client_id: family.client_id,
          session_id: family.session_id,
          user_id: family.user_id,
          via: "oauth2.revoke",
        },
      })
      return true
    }),
  )
})
