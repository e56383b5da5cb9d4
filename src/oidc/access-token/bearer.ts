import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { AccessTokenRejected } from "./errors.js"

/**
 * The token of `Authorization: Bearer <token>` (RFC 6750 2.1). Without one the challenge
 * carries no error code (RFC 6750 3.1); the body is still 401 invalid_token.
 */
export const bearerToken = Effect.fnUntraced(function* (realm: string) {
  const request = yield* HttpServerRequest.HttpServerRequest
  const header = request.headers["authorization"]
  const m = header === undefined ? null : /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i.exec(header)
  if (!m) {
    return yield* new AccessTokenRejected({
      detail:
        header === undefined
          ? "Send Authorization: Bearer <access token>"
          : "The Authorization header is not a Bearer token",
      wwwAuthenticate:
        header === undefined ? `Bearer realm="${realm}"` : `Bearer realm="${realm}", error="invalid_request"`,
    })
  }
  return m[1]!
})
