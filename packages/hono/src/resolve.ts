import type { Context } from "hono"
import type { Auth } from "./auth.js"
import { clearSession, hasSessionCookie, readSession, type StoredSession, writeSession } from "./session.js"

/**
 * The request's session, refreshed when its access token expires within
 * `refreshBeforeExpirySeconds`. Adds Set-Cookie when the session was refreshed (new
 * tokens) or ended (unreadable cookie, or the token endpoint refused the refresh for good:
 * refusal.ts). Throws IssuerUnavailableError
 * when the refresh failed for a temporary reason; the cookie is then left as it was.
 */
export const resolveSession = async (c: Context, auth: Auth): Promise<StoredSession | undefined> => {
  const session = readSession(c, auth)
  if (session === undefined) {
    // tampered, sealed with a retired secret, or expired: remove it rather than resend it forever
    if (hasSessionCookie(c, auth)) clearSession(c, auth)
    return undefined
  }
  if (session.atExp - auth.refreshBeforeExpiryMs > auth.now()) return session
  const refreshed = await auth.refresher.refresh(session, auth.scope)
  if (refreshed === undefined) {
    clearSession(c, auth)
    return undefined
  }
  writeSession(c, auth, refreshed)
  return refreshed
}
