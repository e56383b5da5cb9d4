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
