import type { LiveState } from "../access-token/repo.js"
import type { AccessTokenClaims } from "../access-token/verify.js"
import { scopedUserClaims } from "../tokens/claims.js"

/**
 * The UserInfo response (spec: UserInfo): always `sub`; `name`, `locale`, `updated_at` with
 * `profile`; `email`, `email_verified` with `email`; the user's current values. One function for
 * the application's answer and the listener's (from-memory.ts), so they cannot differ.
 */
export const userinfoClaims = (claims: AccessTokenClaims, live: LiveState) => ({
  sub: claims.sub,
  ...scopedUserClaims(claims.scopes, live),
})
