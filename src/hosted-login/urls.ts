/** Hosted Login paths on the Interaction Domain. */
export const HOSTED_LOGIN_PATH = "/login"
export const HANDOFF_PATH = "/login/continue"
export const ERROR_PATH = "/login/error"

/** Where /oauth2/authorize sends the browser: the one-time hand-off that sets the binding cookie. */
export const hostedLoginHandoffUrl = (interactionOrigin: string, handoffToken: string) =>
  `${interactionOrigin}${HANDOFF_PATH}?handoff=${encodeURIComponent(handoffToken)}`

/** The Hosted Login error page; `error` is one of ERROR_MESSAGES' keys. */
export const hostedLoginErrorUrl = (interactionOrigin: string, error: string) =>
  `${interactionOrigin}${ERROR_PATH}?error=${encodeURIComponent(error)}`
