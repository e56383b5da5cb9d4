import { readFileSync } from "node:fs"
import { Clock, Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { CurrentEnvironment } from "../tenancy/current-environment.js"
import { json, route } from "../http/route.js"
import { loginClient } from "../login/clients.js"
import { requestBindingHash, setBindingCookie } from "../login/transactions/binding.js"
import { AuthTransactionNotFound } from "../login/transactions/errors.js"
import * as transactions from "../login/transactions/repo.js"
import { Config } from "../platform/config.js"
import { Crypto, sha256Hex } from "../platform/crypto.js"
import { devMailboxRoutes } from "./dev-mailbox.js"
import { errorReturnUrl } from "./error-return.js"
import { errorPage, loginPage } from "./page.js"
import { completeWithHostedLoginSession, continueAs, continueAsOffer, requireSameOrigin } from "./sso.js"
import { COMPLETE_PATH, CONTINUE_AS_PATH, ERROR_PATH, HANDOFF_PATH, HOSTED_LOGIN_PATH } from "./urls.js"

const asset = (name: string) => readFileSync(new URL(`./assets/${name}`, import.meta.url), "utf8")
const LOGIN_JS = asset("login.js")
const LOGIN_CSS = asset("login.css")

const queryParam = (url: string, name: string) =>
  new URLSearchParams(url.includes("?") ? url.slice(url.indexOf("?") + 1) : "").get(name) ?? undefined

/** The page of one transaction, or the error page its status calls for. */
const pageFor = Effect.fnUntraced(function* (txn: transactions.TransactionRow) {
  const now = yield* Clock.currentTimeMillis
  if (txn.status === "expired" || txn.expires_at.getTime() <= now) {
    yield* transactions.expireIfDue(txn.environment_id, txn.id, new Date(now)).pipe(Effect.orDie)
    return errorPage("login_expired")
  }
  if (!transactions.ACTIVE_STATUSES.includes(txn.status)) return errorPage("login_finished")
  const client = yield* loginClient(txn.environment_id, txn.client_id)
  const continueAsEmail = yield* continueAsOffer(txn)
  return loginPage({
    transactionId: txn.id,
    clientId: txn.client_id,
    clientName: client?.name ?? "the application",
    status: txn.status,
    continueAsEmail,
  })
})

/** The transaction this browser's cookie is bound to, if any. */
const boundTransaction = Effect.gen(function* () {
  const env = yield* CurrentEnvironment
  const binding = yield* requestBindingHash
  if (binding === undefined) return undefined
  return yield* transactions.transactionByBinding(env.record.id, binding).pipe(Effect.orDie)
})

/**
 * The hand-off from /oauth2/authorize (docs/decisions/login-and-tokens.md): the one-time token in the URL is
 * exchanged, once and within 60 s, for a fresh 256-bit secret in an HttpOnly, SameSite=Lax
 * cookie (Secure except over http on localhost); the transaction keeps the secret's
 * SHA-256. The page is answered at once (the script then shows `/login` in the address
 * bar); a reload of this URL shows the page again only to the browser that holds the cookie.
 */
const handoff = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const env = yield* CurrentEnvironment
  const config = yield* Config
  const crypto = yield* Crypto
  const token = queryParam(request.url, "handoff")
  if (token === undefined || token === "") return errorPage("login_link_expired")
  const tokenHash = sha256Hex(token)
  const secret = yield* crypto.randomToken(32)
  const now = yield* Clock.currentTimeMillis
  const claimed = yield* transactions
    .claimHandoff(env.record.id, tokenHash, sha256Hex(secret), new Date(now))
    .pipe(Effect.orDie)
  if (claimed !== undefined) {
    const txn = yield* transactions.transactionById(env.record.id, claimed).pipe(Effect.orDie)
    return setBindingCookie(yield* pageFor(txn!), config.publicScheme, secret)
  }
  const bound = yield* boundTransaction
  if (bound && bound.handoff_token_hash === tokenHash) return yield* pageFor(bound)
  return errorPage("login_link_expired")
})

/** The sign-in page: only for the transaction bound to this browser's cookie (no transaction fixation). */
const page = Effect.gen(function* () {
  const txn = yield* boundTransaction
  return txn ? yield* pageFor(txn) : errorPage("no_login_session")
})

/**
 * The error page of /oauth2/authorize's client rule failures. For a returnable failure the
 * URL also names the client, redirect URI and state; the way back is offered only after the
 * client and redirect URI are checked again (src/hosted-login/error-return.ts).
 */
const errorRoute = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const env = yield* CurrentEnvironment
  const error = queryParam(request.url, "error") ?? "unknown"
  const clientId = queryParam(request.url, "client_id")
  const redirectUri = queryParam(request.url, "redirect_uri")
  const state = queryParam(request.url, "state")
  if (clientId === undefined || redirectUri === undefined) return errorPage(error)
  const client = yield* loginClient(env.record.id, clientId)
  const url = errorReturnUrl(error, { clientId, redirectUri, state }, client, env.urls.issuer)
  return url === undefined || client === undefined
    ? errorPage(error)
    : errorPage(error, { url, clientName: client.name })
})

/** The answer of a completion, as the Public API's `complete` gives it (the page builds the redirect from it). */
const completed = (row: transactions.TransactionRow, code: string, issuer: string) =>
  json(
    { transaction_id: row.id, authorization_code: code, state: row.state, redirect_uri: row.redirect_uri, iss: issuer },
    200,
    {
      "cache-control": "no-store",
    },
  )

/** The bound transaction of a POST from the page's own script. */
const boundForPost = Effect.gen(function* () {
  yield* requireSameOrigin
  const txn = yield* boundTransaction
  if (!txn) return yield* new AuthTransactionNotFound({})
  return txn
})

/**
 * The end of a real sign-in on Hosted Login: completes the cookie's transaction and starts this
 * browser's Hosted Login session (./sso.ts), whose cookie the answer sets.
 */
const completeRoute = Effect.gen(function* () {
  const env = yield* CurrentEnvironment
  const txn = yield* boundForPost
  const { completed: done, withCookie } = yield* completeWithHostedLoginSession(txn.id)
  return withCookie(completed(done.row, done.code, env.urls.issuer))
})

/** "Continue as": completes the cookie's transaction for the user of this browser's Hosted Login session (./sso.ts). */
const continueAsRoute = Effect.gen(function* () {
  const env = yield* CurrentEnvironment
  const txn = yield* boundForPost
  const done = yield* continueAs(txn.id)
  return completed(done.row, done.code, env.urls.issuer)
})

const ASSET_HEADERS = { "cache-control": "no-cache", "x-content-type-options": "nosniff" }

/** Hosted Login on the Interaction Domain: HTML pages plus their script and stylesheet (same origin). */
export const hostedLoginRoutes = [
  route("GET", HOSTED_LOGIN_PATH, page),
  route("GET", HANDOFF_PATH, handoff),
  route("GET", ERROR_PATH, errorRoute),
  route("POST", COMPLETE_PATH, completeRoute),
  route("POST", CONTINUE_AS_PATH, continueAsRoute),
  route(
    "GET",
    "/login/assets/login.js",
    Effect.succeed(
      HttpServerResponse.text(LOGIN_JS, {
        contentType: "text/javascript; charset=utf-8",
        headers: ASSET_HEADERS,
      }),
    ),
  ),
  route(
    "GET",
    "/login/assets/login.css",
    Effect.succeed(
      HttpServerResponse.text(LOGIN_CSS, {
        contentType: "text/css; charset=utf-8",
        headers: ASSET_HEADERS,
      }),
    ),
  ),
  ...devMailboxRoutes,
]
