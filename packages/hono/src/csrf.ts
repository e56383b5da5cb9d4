import type { Context } from "hono"

/**
 * CSRF defence for the state-changing auth routes, without a token: the browser tells us
 * where a request comes from.
 * - POST login/logout: refused unless `Origin` equals the application's origin, or (when a
 *   browser omits Origin) `Sec-Fetch-Site` is `same-origin`. A `Sec-Fetch-Site` other than
 *   `same-origin` is refused even when Origin matches. Every browser that sends cookies with
 *   SameSite=Lax sends Origin on POST (Fetch standard, "origin header"), so a request with
 *   neither header is refused too: it is not a browser form of ours.
 * - GET logout: refused when `Sec-Fetch-Site` says `cross-site` or `same-site` (an <img> or a
 *   link on another site must not sign the user out); `same-origin`, `none` (typed, bookmark)
 *   and absent (older browsers, scripts) are accepted: logging out is harmless to repeat.
 * A double-submit token would add a form field to every template for no extra protection
 * over these headers in the browsers that can hold our SameSite=Lax cookies.
 */
export const isSameOriginPost = (c: Context, appOrigin: string): boolean => {
  const site = c.req.header("sec-fetch-site")
  if (site !== undefined && site !== "same-origin") return false
  const origin = c.req.header("origin")
  if (origin !== undefined) return origin === appOrigin
  return site === "same-origin"
}

export const isAcceptableLogoutGet = (c: Context): boolean => {
  const site = c.req.header("sec-fetch-site")
  return site === undefined || site === "same-origin" || site === "none"
}
