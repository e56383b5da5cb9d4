import { Effect } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { CurrentEnvironment } from "../../tenancy/current-environment.js"
import { OAuthError } from "../../http/errors.js"
import { route } from "../../http/route.js"
import { loginClient } from "../../login/clients.js"
import { checkAgainstClient, type ClientRuleFailure } from "../../login/rules.js"
import { createTransaction, limitTransactionCreation } from "../../login/transactions/service.js"
import { RETURNABLE_ERRORS } from "../../hosted-login/error-return.js"
import { hostedLoginErrorUrl, hostedLoginHandoffUrl } from "../../hosted-login/urls.js"
import { parseAuthorizeQuery } from "./params.js"
import { withCallSpan } from "../../platform/observability/span.js"

const NO_STORE = { "cache-control": "no-store", "referrer-policy": "no-referrer" }

const redirect = (location: string) => HttpServerResponse.redirect(location, { status: 302, headers: NO_STORE })

/**
 * GET /oauth2/authorize (spec: OIDC Authorize). The order is the protocol:
 * 1. syntax: malformed or missing parameters, response_type other than code, PKCE other
 *    than S256, unknown scope tokens -> 400 `invalid_request` (OAuth error JSON);
 * 2. client rules (status, redirect URI, allowed scopes, resources, nonce for openid) ->
 *    302 to the Hosted Login error page, no code; where RFC 6749 4.1.2.1 allows it (an
 *    active client, a registered redirect URI) the page links back to the client with the
 *    OAuth error, `state` and `iss` (docs/decisions/rp-libraries.md);
 * 3. a login transaction bound to this browser through a one-time hand-off to the
 *    Interaction Domain (docs/decisions/login-and-tokens.md), then the Hosted Login page.
 */
export const authorize = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const env = yield* CurrentEnvironment
  const query = new URLSearchParams(request.url.includes("?") ? request.url.slice(request.url.indexOf("?") + 1) : "")
  const parsed = parseAuthorizeQuery(query)
  if ("failure" in parsed) return yield* new OAuthError({ error: "invalid_request", description: parsed.failure })
  const r = parsed.request
  const client = yield* loginClient(env.record.id, r.clientId)
  const failure: ClientRuleFailure | undefined = checkAgainstClient(client, {
    redirectUri: r.redirectUri, scopes: r.scopes, resources: r.resources, nonce: r.nonce,
  })
  if (failure !== undefined || !client) {
    // The error page may offer the way back to the client (RFC 6749 4.1.2.1) only where the
    // client and the redirect URI are trusted: src/hosted-login/error-return.ts decides.
    const returnable = failure !== undefined && Object.hasOwn(RETURNABLE_ERRORS, failure)
    return redirect(hostedLoginErrorUrl(env.urls.interactionOrigin, failure ?? "unknown_client",
      returnable ? { clientId: r.clientId, redirectUri: r.redirectUri, state: r.state } : undefined))
  }
  yield* limitTransactionCreation(client.id)
  const { handoffToken } = yield* createTransaction({
    client, redirectUri: r.redirectUri, codeChallenge: r.codeChallenge, state: r.state, nonce: r.nonce, scopes: r.scopes,
    resources: r.resources, responseMode: "redirect", source: "authorize",
  })
  return redirect(hostedLoginHandoffUrl(env.urls.interactionOrigin, handoffToken!))
}).pipe(withCallSpan("oidc.authorize"))

export const authorizeRoutes = [
  route("GET", "/oauth2/authorize", authorize),
]
