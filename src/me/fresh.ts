import { Clock, Effect } from "effect"
import { ReauthenticationRequired } from "../passkeys/errors.js"
import { FRESH_SESSION_MS, type Me } from "./auth.js"

/**
 * Spec, /me rule 1 and Limits: a fresh session has `auth_time` within the last 5 minutes.
 * `auth_time` is the session's and a refresh does not change it, so a refreshed token of an
 * old sign-in is not fresh. Refused with 403 `reauthentication_required` naming the action.
 */
export const requireFresh = Effect.fnUntraced(function* (me: Me, action: string) {
  // `auth_time` is whole Unix seconds (spec, Authentication rule 8): compare in seconds, so a
  // sign-in exactly 5 minutes ago is still fresh whatever the milliseconds were.
  const nowSeconds = Math.floor((yield* Clock.currentTimeMillis) / 1000)
  if (nowSeconds * 1000 - me.authTimeMs > FRESH_SESSION_MS) {
    return yield* new ReauthenticationRequired({
      detail: `The session signed in more than 5 minutes ago; sign in again to ${action}`,
    })
  }
})
