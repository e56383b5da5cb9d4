import { Cause, Effect } from "effect"
import { OAuthError, OriginNotAllowed, RateLimited } from "../../http/errors.js"

// One constructor per OAuth error code of the spec's table ("OAuth error responses");
// the status comes from OAUTH_STATUS in src/http/problems.ts. The description is for the
// client developer; causes go to the logs, never into it.
export const invalidRequest = (description: string) => new OAuthError({ error: "invalid_request", description })
/**
 * RFC 6749 5.2: a client that tried HTTP Basic gets the Basic challenge back; one that
 * did not (a public client, a body secret, no credentials) gets none, so a browser or a
 * library never sees a Basic prompt it cannot answer.
 */
export const BASIC_CHALLENGE = 'Basic realm="token"'
export const invalidClient = (description: string, options: { readonly basicChallenge?: boolean } = {}) =>
  new OAuthError({
    error: "invalid_client",
    description,
    ...(options.basicChallenge ? { challenge: BASIC_CHALLENGE } : {}),
  })
export const invalidGrant = (description: string) => new OAuthError({ error: "invalid_grant", description })
export const invalidScope = (description: string) => new OAuthError({ error: "invalid_scope", description })
export const accessDenied = (description: string) => new OAuthError({ error: "access_denied", description })
export const serverError = () =>
  new OAuthError({ error: "server_error", description: "The server could not complete the request; retry later" })

/**
 * Spec, Errors: "server_error 503: repository, key or storage failure". Anything that is not
 * an OAuth error (a database failure, a sealed value that cannot be opened, a missing
 * signing key) is logged with its cause and answered as 503 server_error, so an OAuth client
 * always gets an OAuth error body it can act on.
 */
export const failuresAsServerError = <A, E, R>(
  self: Effect.Effect<A, E, R>,
): Effect.Effect<A, OAuthError | OriginNotAllowed | RateLimited, R> =>
  self.pipe(
    Effect.catchCause((cause) => {
      const error = Cause.squash(cause)
      // The request's own refusals pass through: OAuth errors, CORS (src/http/cors/client-origins.ts) Problem
      // Details, and rate limits (answered as OAuth bodies by src/http/app.ts).
      if (error instanceof OAuthError || error instanceof OriginNotAllowed || error instanceof RateLimited)
        return Effect.fail(error)
      return Effect.logError("oauth2 endpoint failure", cause).pipe(Effect.andThen(Effect.fail(serverError())))
    }),
  )
