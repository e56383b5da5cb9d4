import type { ReturnTarget } from "./error-return.js"

/** Hosted Login paths on the Interaction Domain. */
export const HOSTED_LOGIN_PATH = "/login"
export const HANDOFF_PATH = "/login/continue"
export const ERROR_PATH = "/login/error"
/** The page's script completes a real sign-in here (it also starts the Hosted Login session: ./sso.ts). */
export const COMPLETE_PATH = "/login/complete"
/** The page's script continues as this browser's Hosted Login session's user here. */
export const CONTINUE_AS_PATH = "/login/continue-as"

/** Where /oauth2/authorize sends the browser: the one-time hand-off that sets the binding cookie. */
export const hostedLoginHandoffUrl = (interactionOrigin: string, handoffToken: string) =>
  `${interactionOrigin}${HANDOFF_PATH}?handoff=${encodeURIComponent(handoffToken)}`

/**
 * The Hosted Login error page; `error` is one of ERROR_MESSAGES' keys. With a return target
 * (a returnable failure, src/hosted-login/error-return.ts) the page can offer the way back
 * to the client, after checking the target again.
 */
export const hostedLoginErrorUrl = (interactionOrigin: string, error: string, target?: ReturnTarget) => {
  const query = new URLSearchParams({ error })
  if (target !== undefined) {
    query.set("client_id", target.clientId)
    query.set("redirect_uri", target.redirectUri)
    if (target.state !== undefined) query.set("state", target.state)
  }
  return `${interactionOrigin}${ERROR_PATH}?${query.toString()}`
}
