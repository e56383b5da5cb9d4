import * as oidc from "openid-client"

/**
 * Whether a failed token request is the issuer's final word about the grant or the client,
 * rather than an outage. RFC 6749 5.2: the token endpoint refuses with an OAuth error body
 * (`error`) and a 4xx status; which `error` it is (invalid_grant, access_denied for a blocked
 * user, invalid_client after a secret rotation, unauthorized_client, invalid_scope,
 * invalid_request) makes no difference: repeating the same request gets the same answer, so
 * the session cannot go on. Everything else is temporary: no answer, a 5xx, 408, 429, a body
 * that is not an OAuth error, or the two codes that say "later" (`server_error`,
 * `temporarily_unavailable`, RFC 6749 4.1.2.1, which some servers send with a 400).
 *
 * Returns the OAuth `error` of a definitive refusal, undefined otherwise.
 */
const TEMPORARY_CODES = new Set(["server_error", "temporarily_unavailable"])

const definitive = (status: number, error: unknown): string | undefined =>
  status >= 400 &&
  status < 500 &&
  status !== 408 &&
  status !== 429 &&
  typeof error === "string" &&
  error !== "" &&
  !TEMPORARY_CODES.has(error)
    ? error
    : undefined

export const tokenEndpointRefusal = async (e: unknown): Promise<string | undefined> => {
  if (e instanceof oidc.ResponseBodyError) return definitive(e.status, e.error)
  // A 401 with WWW-Authenticate (invalid_client when the client tried HTTP Basic, RFC 6749
  // 5.2) is thrown before openid-client reads the body: read the error from it here.
  if (e instanceof oidc.WWWAuthenticateChallengeError) {
    try {
      const body = (await e.response.json()) as { error?: unknown }
      return definitive(e.status, body?.error)
    } catch {
      return undefined
    }
  }
  return undefined
}
