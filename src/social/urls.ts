/** The Interaction Domain page a redirect-mode custom UI's browser lands on after the provider (src/social/http.ts). */
export const SOCIAL_RETURN_PATH = "/login/social/return"

/** Where a Hosted Login transaction's social callback finishes, in the browser bound to it (src/social/bound-browser.ts). */
export const SOCIAL_CONTINUE_PATH = "/login/social/continue"
