import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { CurrentEnvironment } from "../../tenancy/current-environment.js"
import { bodyText, route } from "../../http/route.js"
import { loginClient } from "../../login/clients.js"
import { checkAgainstClient } from "../../login/rules.js"
import { createTransaction, limitTransactionCreation } from "../../login/transactions/service.js"
import { authorizationErrorUrl } from "../../hosted-login/error-return.js"
import { malformedAuthorizationPage } from "../../hosted-login/issuer-failure-page.js"
import { hostedLoginErrorUrl, hostedLoginHandoffUrl } from "../../hosted-login/urls.js"
import { parseAuthorizeQuery, parseReturnTarget, requestObjectFailure, stateToReturn } from "./params.js"
import { withCallSpan } from "../../platform/observability/span.js"

const NO_STORE = { "cache-control": "no-store", "referrer-policy": "no-referrer" }

const redirect = (location: string) => HttpServerResponse.redirect(location, { status: 302, headers: NO_STORE })

const FORM = "application/x-www-form-urlencoded"

/**
 * The request's parameters: the query of a GET; the form body of a POST (OIDC Core 3.1.2.1:
 * both methods, form serialization for POST). A POST body of another type holds no parameter.
 */
const authorizationParameters = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  if (request.method === "POST") {
    const type = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase()
    const text = yield* bodyText
    return new URLSearchParams(type === FORM ? text : "")
  }
  return new URLSearchParams(request.url.includes("?") ? request.url.slice(request.url.indexOf("?") + 1) : "")
})

/**
 * GET and POST /oauth2/authorize (spec: OIDC Authorize). The order is the protocol
 * (docs/decisions/rp-libraries.md, "Authorize refusals reaching the client"):
 * 1. `client_id` and `redirect_uri` missing or repeated: nowhere to send an error, so a 400
 *    `invalid_request` page of the issuer's own, naming the rule;
 * 2. an unknown client or an unregistered redirect URI: the Hosted Login error page, never
 *    the client (RFC 6749 4.1.2.1); a disabled client: the page, with a link back;
 * 3. from here the redirect URI is trusted, and every refusal reaches the client as an
 *    authorization error response (error, error_description, state when sent, iss):
 *    a Request Object (OIDC Core 6), then the syntax rules (`invalid_request`);
 * 4. the other client rules (allowed scopes and resources, nonce for openid): the Hosted Login
 *    error page as the spec says, whose link back is the same error response;
 * 5. a login transaction bound to this browser through a one-time hand-off to the
 *    Interaction Domain (docs/decisions/login-and-tokens.md), then the Hosted Login page.
 */
export const authorize = Effect.gen(function* () {
  const env = yield* CurrentEnvironment
  const interactionOrigin = env.urls.interactionOrigin
  const query = yield* authorizationParameters
  const target = parseReturnTarget(query)
  if ("failure" in target) return malformedAuthorizationPage(target.failure)
  const client = yield* loginClient(env.record.id, target.clientId)
  if (!client) return redirect(hostedLoginErrorUrl(interactionOrigin, "unknown_client"))
  if (!client.redirect_uris.includes(target.redirectUri))
    return redirect(hostedLoginErrorUrl(interactionOrigin, "redirect_uri_mismatch"))
  const state = stateToReturn(query)
  const returnTarget = { clientId: client.id, redirectUri: target.redirectUri, state }
  if (client.status !== "active")
    return redirect(hostedLoginErrorUrl(interactionOrigin, "client_disabled", returnTarget))
  const toClient = (error: string, description: string) =>
    redirect(authorizationErrorUrl(target.redirectUri, { error, description, state, issuer: env.urls.issuer }))
  const unsupported = requestObjectFailure(query)
  if (unsupported !== undefined) return toClient(unsupported.error, unsupported.description)
  const parsed = parseAuthorizeQuery(query)
  if ("failure" in parsed) return toClient("invalid_request", parsed.failure)
  const r = parsed.request
  const failure = checkAgainstClient(client, {
    redirectUri: r.redirectUri,
    scopes: r.scopes,
    resources: r.resources,
    nonce: r.nonce,
  })
  if (failure !== undefined) return redirect(hostedLoginErrorUrl(interactionOrigin, failure, returnTarget))
  yield* limitTransactionCreation(client.id)
  const { handoffToken } = yield* createTransaction({
    client,
    redirectUri: r.redirectUri,
    codeChallenge: r.codeChallenge,
    state: r.state,
    nonce: r.nonce,
    scopes: r.scopes,
    resources: r.resources,
    responseMode: "redirect",
    source: "authorize",
  })
  return redirect(hostedLoginHandoffUrl(interactionOrigin, handoffToken!))
}).pipe(withCallSpan("oidc.authorize"))

export const authorizeRoutes = [
  route("GET", "/oauth2/authorize", authorize),
  route("POST", "/oauth2/authorize", authorize),
]
