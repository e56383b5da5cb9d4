import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { htmlPage } from "../hosted-login/page.js"
import { CurrentEnvironment } from "../tenancy/current-environment.js"
import { route } from "../http/route.js"
import { loginClient } from "../login/clients.js"
import { stillRegistered } from "../login/rules.js"
import * as transactions from "../login/transactions/repo.js"
import { socialProofMatches } from "../login/transactions/social-proof.js"
import { boundBrowserRoutes } from "./bound-browser.js"
import { hostedLoginSocialRoutes } from "./hosted-login/http.js"
import { appendQuery, browserRedirect, SOCIAL_RETURN_PATH } from "./urls.js"

const OUTCOMES: ReadonlyArray<string> = ["completed", "link_required", "failed"]

/** A return that cannot go on to the application (an unknown transaction: nothing to vouch for). */
const cannotContinue = () =>
  htmlPage(
    "Sign-in failed",
    `<main id="social-return" class="card" data-social="failed">
  <h1>Sign-in failed</h1>
  <p>The sign-in could not continue. Return to the application and try again.</p>
</main>`,
  )

/**
 * Where the browser lands after the provider in redirect mode for a custom UI (spec: Social
 * login rule 4, "the browser returns to the Interaction Domain and the client reads the
 * transaction status"). It goes on (302) to the transaction's registered redirect URI with
 * `tx`, the original `state`, `social` and the completion proof, as `native_return` does, so
 * the app instance that owns this browser completes the transaction (docs/decisions/social-login.md, Social
 * login: "Custom UI: the completion proof"). The target is read from the transaction, never
 * from the URL; a proof is passed on only when it is the transaction's. An unknown
 * transaction, or one whose client no longer registers that URI, gets a static page.
 */
const socialReturn = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const env = yield* CurrentEnvironment
  const q = request.url.indexOf("?")
  const params = new URLSearchParams(q < 0 ? "" : request.url.slice(q + 1))
  const given = params.get("social") ?? ""
  const outcome = OUTCOMES.includes(given) ? given : "failed"
  const txn = yield* transactions.transactionById(env.record.id, params.get("tx") ?? "").pipe(Effect.orDie)
  if (txn?.source !== "api" || txn.response_mode !== "redirect") return cannotContinue()
  if (!stillRegistered(yield* loginClient(env.record.id, txn.client_id), txn.redirect_uri)) return cannotContinue()
  const proof = params.get("social_proof") ?? undefined
  return browserRedirect(
    appendQuery(txn.redirect_uri, {
      tx: txn.id,
      state: txn.state,
      social: outcome,
      ...(outcome !== "failed" && socialProofMatches(txn, proof) ? { social_proof: proof! } : {}),
    }),
  )
})

export const socialPageRoutes = [
  route("GET", SOCIAL_RETURN_PATH, socialReturn),
  ...hostedLoginSocialRoutes,
  ...boundBrowserRoutes,
]
