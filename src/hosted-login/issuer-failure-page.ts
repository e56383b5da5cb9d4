import { HttpServerResponse } from "effect/http"
import type { BrowserFailure } from "../http/browser-failure.js"
import { escapeHtml, INLINE_STYLE, INLINE_STYLE_PAGE_HEADERS, layout } from "./page.js"

/**
 * These pages answer when the Environment may not be readable (storage down, NUL in the request
 * target refused before any lookup), so they load nothing, not even from the Interaction Domain:
 * the stylesheet is inlined and the CSP admits exactly it by its hash.
 */
const HEADERS = INLINE_STYLE_PAGE_HEADERS

const seconds = (n: number) => (n === 1 ? "1 second" : `${n} seconds`)

/** What the person reads, and what the developer reads below it (`note`: a second paragraph). */
interface Wording {
  readonly title: string
  readonly text: string
  readonly developer: string
  readonly note?: string
}

/** What the person and the developer read for each kind of failure, by code then by status. */
const wording = (failure: BrowserFailure): Wording => {
  const wait = failure.retryAfterSeconds
  if (failure.code === "environment_suspended")
    return {
      title: "Sign-in unavailable",
      text: "Signing in to this application is suspended. Contact the application's owner.",
      developer: "This Environment is suspended: only its discovery document and JWKS are served.",
    }
  if (failure.code === "not_found")
    return {
      title: "Unknown sign-in service",
      text: "The application sent you to a sign-in address that does not exist. Contact the application's owner.",
      developer: "No Environment has this id: check the issuer URL the client is configured with.",
    }
  switch (failure.status) {
    case 429:
      return {
        title: "Too many sign-in attempts",
        text: `Too many sign-in requests came from your network in a short time. Wait ${seconds(wait ?? 60)}, then return to the application and sign in again.`,
        developer: `The authorization endpoint's rate limit was reached; retry after the time in Retry-After. This error is not sent to the redirect URI, so that a flood of requests is not bounced to the application.`,
      }
    case 503:
      return {
        title: "Sign-in temporarily unavailable",
        text: `Signing in is unavailable for a moment. Wait ${seconds(wait ?? 1)}, then reload this page.`,
        developer: "The service cannot reach its storage right now; retry after the time in Retry-After.",
      }
    default:
      return failure.status < 500
        ? {
            title: "Invalid sign-in request",
            text: "The application sent you here with a sign-in request that cannot be processed. Return to the application and try again, or contact its owner.",
            developer: failure.detail ?? "The authorization request was refused.",
          }
        : {
            title: "Sign-in error",
            text: "Something went wrong on our side. Return to the application and try again.",
            developer: "The service failed to answer the authorization request.",
          }
  }
}

/**
 * A failure of the issuer's /oauth2/authorize as a page in the Hosted Login style (the status
 * and Retry-After of the OAuth or Problem Details answer it replaces): a person's browser never
 * shows a JSON body there, whatever it accepts (docs/decisions/rp-libraries.md, "Authorize
 * refusals reaching the client").
 */
export const issuerFailurePage = (failure: BrowserFailure) => render(failure, wording(failure))

/**
 * An authorization request whose `client_id` or `redirect_uri` is missing or repeated: nowhere
 * to send an error (RFC 6749 4.1.2.1), so the issuer answers 400 itself with the spec's
 * `invalid_request` and the broken rule.
 */
export const malformedAuthorizationPage = (rule: string) =>
  render(
    { status: 400, code: "invalid_request", detail: rule, retryAfterSeconds: undefined },
    {
      title: "Invalid sign-in request",
      text: "The application sent you here with an incomplete sign-in request, so the sign-in cannot start. Return to the application and try again, or contact its owner.",
      developer: rule,
      note: "Without a registered client_id and redirect_uri the error cannot be sent to the application (RFC 6749 4.1.2.1).",
    },
  )

const render = (failure: BrowserFailure, w: Wording) => {
  const note = w.note === undefined ? "" : `\n    <p>${escapeHtml(w.note)}</p>`
  const body = `<main id="login-error" class="card" data-error="${escapeHtml(failure.code)}">
  <h1>${escapeHtml(w.title)}</h1>
  <p>${escapeHtml(w.text)}</p>
  <section class="developer" aria-label="For the developer">
    <h2>For the developer</h2>
    <p>Error <code>${escapeHtml(failure.code)}</code>: <span id="rule">${escapeHtml(w.developer)}</span></p>${note}
  </section>
</main>`
  return HttpServerResponse.text(layout(w.title, body, { inlineStyle: INLINE_STYLE }), {
    status: failure.status,
    contentType: "text/html; charset=utf-8",
    headers:
      failure.retryAfterSeconds === undefined
        ? HEADERS
        : { ...HEADERS, "retry-after": String(failure.retryAfterSeconds) },
  })
}
