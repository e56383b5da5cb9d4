import { Clock, Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { CurrentEnvironment } from "../tenancy/current-environment.js"
import { errorPage } from "../hosted-login/page.js"
import { route } from "../http/route.js"
import { usableConnection } from "../management/connections/repo.js"
import { requestBindingHash } from "../login/transactions/binding.js"
import type * as transactions from "../login/transactions/repo.js"
import { Audit } from "../platform/audit.js"
import { Crypto, sha256Hex } from "../platform/crypto.js"
import { callbackTransaction, finishSocialLogin } from "./login.js"
import * as repo from "./repo.js"
import { browserRedirect, SOCIAL_CONTINUE_PATH } from "./urls.js"

// A Hosted Login transaction's social login finishes only in the browser bound to it
// (docs/architecture.md: "Hosted Login drives only the transaction of its cookie"). Without this, a link to
// the provider's authorization URL of an attacker's transaction, opened by a victim already
// signed in at the provider, would sign the victim in on the attacker's transaction. The
// provider's callback may not carry the login cookie (managed callbacks land on the issuer
// host; Apple posts cross-site), so it keeps the answer, sealed, and sends the browser to the
// Interaction Domain with a one-time token; there the cookie must match before the answer
// is used. Custom UIs (API transactions) have no cookie: their callback hands a one-time
// completion proof to the browser instead (src/login/transactions/social-proof.ts).

export const callbackSealContext = (stateId: string) => ({
  purpose: "social-callback",
  table: "social_states",
  rowId: stateId,
})

/** The callback's half: keep the answer, send the browser to the Interaction Domain. */
export const deferToBoundBrowser = Effect.fnUntraced(function* (
  stateRow: repo.SocialStateRow,
  state: string,
  params: URLSearchParams,
) {
  const env = yield* CurrentEnvironment
  const crypto = yield* Crypto
  const token = yield* crypto.randomToken(32)
  const sealed = yield* crypto.seal(callbackSealContext(stateRow.id), JSON.stringify({ state, params: [...params] }))
  yield* repo.deferCallback(stateRow.environment_id, stateRow.id, sealed, sha256Hex(token)).pipe(Effect.orDie)
  return `${env.urls.interactionOrigin}${SOCIAL_CONTINUE_PATH}?handoff=${encodeURIComponent(token)}`
})

/**
 * `GET /login/social/continue?handoff=...` on the Interaction Domain: the token is used once;
 * the request's login cookie must be the transaction's; then the provider's answer is used
 * as in any login callback and the browser goes on to /login. A token used or unknown:
 * `login_link_expired`; another browser: `social_other_browser` (nothing changes: the
 * transaction stays `challenge_issued`, the provider's code is never redeemed).
 */
const continueInBoundBrowser = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const env = yield* CurrentEnvironment
  const crypto = yield* Crypto
  const audit = yield* Audit
  const q = request.url.indexOf("?")
  const token = new URLSearchParams(q < 0 ? "" : request.url.slice(q + 1)).get("handoff") ?? ""
  if (token === "") return errorPage("login_link_expired")
  const now = yield* Clock.currentTimeMillis
  const row = yield* repo.claimDeferredCallback(env.record.id, sha256Hex(token), new Date(now)).pipe(Effect.orDie)
  if (!row) return errorPage("login_link_expired")
  const txn: transactions.TransactionRow | undefined = yield* callbackTransaction(row).pipe(
    Effect.catchTags({
      AuthTransactionExpired: () => Effect.succeed(undefined),
      InvalidTransactionState: () => Effect.succeed(undefined),
    }),
  )
  if (!txn) return errorPage("login_finished")
  const binding = yield* requestBindingHash
  if (binding === undefined || txn.browser_binding_hash === null || binding !== txn.browser_binding_hash) {
    yield* audit
      .append({
        workspaceId: txn.workspace_id,
        environmentId: txn.environment_id,
        actor: { type: "end_user" },
        action: "login.social_browser_mismatch",
        subjectType: "auth_transaction",
        subjectId: txn.id,
        result: "failure",
        details: { provider: row.provider, client_id: txn.client_id },
      })
      .pipe(Effect.orDie)
    return errorPage("social_other_browser")
  }
  const connection = yield* usableConnection(env.record.id, row.provider)
  if (!connection || connection.id !== row.connection_id) return errorPage("login_finished")
  const opened = yield* crypto.open(callbackSealContext(row.id), row.callback_sealed).pipe(Effect.orDie)
  const answer = JSON.parse(opened.toString("utf8")) as { state: string; params: Array<[string, string]> }
  const next = yield* finishSocialLogin(txn, row, connection, answer.state, new URLSearchParams(answer.params)).pipe(
    Effect.catchTag("InvalidTransactionState", () => Effect.succeed(undefined)),
  )
  return next === undefined ? errorPage("login_finished") : browserRedirect(next)
})

export const boundBrowserRoutes = [route("GET", SOCIAL_CONTINUE_PATH, continueInBoundBrowser)]
