import { Clock, Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { CurrentEnvironment } from "../tenancy/current-environment.js"
import { InvalidRequest, InvalidRequestBody } from "../http/errors.js"
import { bodyText } from "../http/route.js"
import { ConnectionNotFound } from "../management/connections/errors.js"
import type { Provider } from "../management/connections/schema.js"
import { Crypto } from "../platform/crypto.js"
import { StateMismatch } from "./errors.js"
import { finishLink } from "./link.js"
import { deferToBoundBrowser } from "./bound-browser.js"
import { callbackTransaction, finishSocialLogin } from "./login.js"
import { requireUsableConnection } from "./redirect.js"
import * as repo from "./repo.js"
import { verifyState } from "./state.js"
import { withCallSpan } from "../platform/observability/span.js"

/**
 * The callback's parameters (spec: Social login, "GET query, or POST form / JSON body"):
 * the query of a GET; the body of a POST, form-encoded (Apple's `response_mode=form_post`)
 * or a JSON object of strings. Only one source per request, so a parameter cannot be
 * smuggled in twice.
 */
export const callbackParams = Effect.gen(function* () {
  const params = yield* readCallbackParams
  // No parameter may hold U+0000 (RFC 6749 Appendix A; Postgres cannot store it, and a
  // provider's `error` is recorded): refused before the state is used, so nothing changes.
  for (const [name, value] of params) {
    if (name.includes("\u0000") || value.includes("\u0000")) {
      return yield* new InvalidRequest({ detail: "Callback parameters must not contain the NUL character" })
    }
  }
  return params
})

const readCallbackParams = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  if (request.method === "GET") {
    const q = request.url.indexOf("?")
    return new URLSearchParams(q < 0 ? "" : request.url.slice(q + 1))
  }
  const text = yield* bodyText
  const type = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()
  if (type === "application/json") {
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      return yield* new InvalidRequestBody({ detail: "The request body is not valid JSON" })
    }
    if (
      value === null ||
      typeof value !== "object" ||
      Array.isArray(value) ||
      Object.values(value).some((v) => typeof v !== "string")
    ) {
      return yield* new InvalidRequestBody({ detail: "The JSON body must be an object of string parameters" })
    }
    return new URLSearchParams(value as Record<string, string>)
  }
  return new URLSearchParams(text)
})

/**
 * `GET|POST /auth/social/{provider}/callback`. The state is checked first (signature under
 * the Environment's derived key, expiry, then single use in one conditional UPDATE): every
 * failure is 400 `state_mismatch` and changes nothing else. Then the login transaction or
 * the link named by the state row continues; the answer is a redirect.
 */
export const handleCallback = Effect.fnUntraced(function* (provider: Provider) {
  const env = yield* CurrentEnvironment
  const crypto = yield* Crypto
  const params = yield* callbackParams
  const states = params.getAll("state")
  if (states.length !== 1) return yield* new StateMismatch({ detail: "The callback must carry exactly one state" })
  const state = states[0]!
  const now = yield* Clock.currentTimeMillis
  const check = verifyState(crypto, env.record.id, state, now)
  if (!check.ok) {
    return yield* new StateMismatch({
      detail:
        check.reason === "expired"
          ? "The social login state has expired; start again"
          : "The social login state is not valid",
    })
  }
  const row = yield* repo.useState(env.record.id, check.reference, provider, new Date(now)).pipe(Effect.orDie)
  if (!row) return yield* new StateMismatch({ detail: "The social login state was already used or is unknown" })
  const connection = yield* requireUsableConnection(env.record.id, provider)
  // The connection was deleted and recreated since the redirect: its credentials are not the ones used.
  if (connection.id !== row.connection_id)
    return yield* new ConnectionNotFound({ detail: `The ${provider} connection changed; start again` })
  if (row.kind === "link") return yield* finishLink(row, connection, state, params)
  const txn = yield* callbackTransaction(row)
  // Hosted Login: finish in the browser bound to the transaction (./bound-browser.ts).
  if (txn.source === "authorize") return yield* deferToBoundBrowser(row, state, params)
  return yield* finishSocialLogin(txn, row, connection, state, params)
}, withCallSpan("social.callback"))
