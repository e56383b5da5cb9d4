/**
 * The `WWW-Authenticate` challenges of the Management API (RFC 6750 3, realm `management`):
 * every 401 names the Bearer scheme (RFC 9110 11.6.1 requires a challenge), with the RFC 6750
 * error code when credentials were sent; a 403 for a missing scope names the scope.
 * (docs/decisions/management-api.md, "401s carry WWW-Authenticate")
 */
export const MANAGEMENT_REALM = "management"

const quoted = (value: string) => value.replace(/["\\]/g, "")

/** No credentials at all: the scheme and realm only (RFC 6750 3.1: no error code). */
export const noCredentialsChallenge = `Bearer realm="${MANAGEMENT_REALM}"`

/** An Authorization header that is not `Bearer <token>`. */
export const malformedChallenge = (description: string) =>
  `Bearer realm="${MANAGEMENT_REALM}", error="invalid_request", error_description="${quoted(description)}"`

/** A key or Dashboard session that is unknown, revoked or expired. */
export const invalidTokenChallenge = (description: string) =>
  `Bearer realm="${MANAGEMENT_REALM}", error="invalid_token", error_description="${quoted(description)}"`

/** A valid credential without the route's scope (403). */
export const insufficientScopeChallenge = (scope: string) =>
  `Bearer realm="${MANAGEMENT_REALM}", error="insufficient_scope", scope="${quoted(scope)}"`
