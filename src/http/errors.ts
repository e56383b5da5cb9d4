import { Schema } from "effect"

// Failures shared by every surface. Feature errors live in each feature's errors.ts;
// all of them are turned into responses by the one table in ./problems.ts.

const detail = { detail: Schema.optionalKey(Schema.String) }

export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", detail) {}
export class InvalidRequestBody extends Schema.TaggedError<InvalidRequestBody>()("InvalidRequestBody", detail) {}
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", detail) {}
export class MethodNotAllowed extends Schema.TaggedError<MethodNotAllowed>()("MethodNotAllowed", {
  allow: Schema.Array(Schema.String),
}) {}
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", {}) {}
export class UnsupportedMediaType extends Schema.TaggedError<UnsupportedMediaType>()("UnsupportedMediaType", detail) {}
export class EnvironmentSuspended extends Schema.TaggedError<EnvironmentSuspended>()("EnvironmentSuspended", {}) {}
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", detail) {}
export class InvalidToken extends Schema.TaggedError<InvalidToken>()("InvalidToken", detail) {}
export class InsufficientScope extends Schema.TaggedError<InsufficientScope>()("InsufficientScope", {
  required: Schema.String,
}) {}
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", detail) {}
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", detail) {}
export class PreconditionFailed extends Schema.TaggedError<PreconditionFailed>()("PreconditionFailed", {}) {}
export class IdempotencyKeyConflict extends Schema.TaggedError<IdempotencyKeyConflict>()("IdempotencyKeyConflict", {}) {}
/**
 * 429 `rate_limited`. `limit` names the limit that refused (its counter's bucket, e.g.
 * `otp_verify:ip`): the Problem Details (or OAuth body) and the request's log line carry it,
 * so every 429 says which limit answered (docs/decisions/rate-limits-and-caches.md, "Every 429 names its limit").
 */
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  retryAfterSeconds: Schema.Number,
  limit: Schema.String,
}) {}
export class OriginNotAllowed extends Schema.TaggedError<OriginNotAllowed>()("OriginNotAllowed", {}) {}
export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", detail) {}

/** OAuth 2.0 error responses (`{error, error_description}`) of /oauth2/* endpoints. */
export class OAuthError extends Schema.TaggedError<OAuthError>()("OAuthError", {
  error: Schema.Literals([
    "invalid_request", "invalid_client", "invalid_grant", "invalid_scope", "access_denied",
    "server_error", "unsupported_grant_type", "temporarily_unavailable", "unauthorized_client",
  ]),
  description: Schema.String,
  /** RFC 6749 5.2: the `WWW-Authenticate` challenge of an invalid_client answer, when one is due. */
  challenge: Schema.optionalKey(Schema.String),
}) {}
