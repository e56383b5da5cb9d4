import type { LiveState } from "../access-token/repo.js"
import { accessDenied, invalidGrant } from "./errors.js"

/** The live state a grant depends on (user and login session behind it). */
export interface GrantState {
  readonly user_status: "active" | "blocked" | "pending_deletion"
  readonly user_security_version: number
  readonly session_revoked_at: Date | null
  readonly session_idle_expires_at: Date
  readonly session_absolute_expires_at: Date
  readonly session_security_version: number
}

/**
 * Spec: a blocked user gets no code exchange and no refresh (403 access_denied). A user
 * pending deletion, a raised security version (email change, block) or an ended session
 * make the grant itself invalid (invalid_grant).
 */
export const checkGrantState = (state: GrantState, nowMs: number) => {
  if (state.user_status === "blocked") return accessDenied("The user is blocked")
  if (state.user_status !== "active") return invalidGrant("The user is no longer active")
  if (state.user_security_version !== state.session_security_version) {
    return invalidGrant("The user's security state changed since the grant was issued; sign in again")
  }
  if (state.session_revoked_at !== null) return invalidGrant("The login session behind this grant has ended")
  if (state.session_idle_expires_at.getTime() <= nowMs || state.session_absolute_expires_at.getTime() <= nowMs) {
    return invalidGrant("The login session behind this grant has expired")
  }
  return undefined
}

/** A grant's read with the user and session columns the live-state memory keeps. */
export interface GrantRead extends GrantState {
  readonly workspace_id: string
  readonly user_id: string
  readonly session_id: string
  readonly email: string
  readonly email_verified: boolean
  readonly name: string | null
  readonly locale: string | null
  readonly user_updated_at: Date
}

/**
 * The live state behind the tokens a grant issues, as the grant read it: what UserInfo and
 * introspection check (src/oidc/access-token/verify.ts). The session's expiry is the one read
 * before the grant stretched it: earlier, so at worst it makes the memory read the row again.
 */
export const liveStateOfGrant = (row: GrantRead): LiveState => ({
  user_id: row.user_id,
  workspace_id: row.workspace_id,
  status: row.user_status,
  security_version: row.user_security_version,
  email: row.email,
  email_verified: row.email_verified,
  name: row.name,
  locale: row.locale,
  updated_at: row.user_updated_at,
  session_id: row.session_id,
  session_revoked_at: row.session_revoked_at,
  session_idle_expires_at: row.session_idle_expires_at,
  session_absolute_expires_at: row.session_absolute_expires_at,
})
