import { HttpServerResponse } from "effect/http"

/** The Interaction Domain page a redirect-mode custom UI's browser lands on after the provider (src/social/http.ts). */
export const SOCIAL_RETURN_PATH = "/login/social/return"

/** Where a Hosted Login transaction's social callback finishes, in the browser bound to it (src/social/bound-browser.ts). */
export const SOCIAL_CONTINUE_PATH = "/login/social/continue"

/** `uri` with `params` added to its query (a registered redirect URI may already have one). */
export const appendQuery = (uri: string, params: Readonly<Record<string, string>>) =>
  `${uri}${uri.includes("?") ? "&" : "?"}${new URLSearchParams(params).toString()}`

/** A browser redirect that leaks nothing onwards (the URL may carry a code, a proof or a link code). */
export const browserRedirect = (location: string) =>
  HttpServerResponse.empty({
    status: 302,
    headers: { location, "cache-control": "no-store", "referrer-policy": "no-referrer" },
  })
