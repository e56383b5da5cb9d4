import { Schema } from "effect"

/**
 * A Bearer access token that is missing, malformed, badly signed, expired, for another
 * issuer or audience, or no longer live (user blocked or pending deletion, security version
 * raised, session revoked or expired). 401 `invalid_token` Problem Details with a
 * `WWW-Authenticate: Bearer` challenge (RFC 6750 3). `detail` says which check failed.
 */
export class AccessTokenRejected extends Schema.TaggedError<AccessTokenRejected>()("AccessTokenRejected", {
  detail: Schema.String,
  wwwAuthenticate: Schema.String,
}) {}

/**
 * The user, session or security state behind a token could not be read (database failure).
 * 503 `user_unavailable` (spec, Errors): the caller retries without re-authenticating.
 */
export class UserUnavailable extends Schema.TaggedError<UserUnavailable>()("UserUnavailable", {
  retryAfterSeconds: Schema.Number,
}) {}
