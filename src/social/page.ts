import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { escapeHtml, htmlPage } from "../hosted-login/page.js"
import { route } from "../http/route.js"
import { boundBrowserRoutes } from "./bound-browser.js"
import { hostedLoginSocialRoutes } from "./hosted-login/http.js"
import { SOCIAL_RETURN_PATH } from "./urls.js"

const MESSAGES: Readonly<Record<string, { title: string; text: string }>> = {
  completed: { title: "Signed in", text: "You are signed in with your provider. Return to the application to continue." },
  link_required: { title: "Confirm your account", text: "An account with this email already exists. Return to the application to confirm it is yours." },
  failed: { title: "Sign-in failed", text: "The provider did not sign you in. Return to the application and try again." },
}

/**
 * Where the browser lands after the provider in redirect mode for a custom UI (spec: Social
 * login rule 4, "the browser returns to the Interaction Domain and the client reads the
 * transaction status"): a static page; the transaction id is in the URL for the client.
 */
const socialReturn = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const q = request.url.indexOf("?")
  const params = new URLSearchParams(q < 0 ? "" : request.url.slice(q + 1))
  const outcome = params.get("social") ?? ""
  const message = MESSAGES[outcome] ?? MESSAGES["failed"]!
  return htmlPage(message.title, `<main id="social-return" class="card" data-social="${escapeHtml(MESSAGES[outcome] ? outcome : "failed")}">
  <h1>${escapeHtml(message.title)}</h1>
  <p>${escapeHtml(message.text)}</p>
</main>`)
})

export const socialPageRoutes = [route("GET", SOCIAL_RETURN_PATH, socialReturn), ...hostedLoginSocialRoutes, ...boundBrowserRoutes]
