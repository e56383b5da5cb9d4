/** The Interaction Domain page a redirect-mode custom UI's browser lands on after the provider (src/social/http.ts). */
export const SOCIAL_RETURN_PATH = "/login/social/return"
