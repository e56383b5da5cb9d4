import { Schema } from "effect"
import { FieldError } from "./field-errors.js"

// Failures shared by every surface. Feature errors live in each feature's errors.ts;
// all of them are turned into responses by the one table in ./problems.ts.

const detail = { detail: Schema.optionalKey(Schema.String) }

/** `errors`: every invalid field of the body (src/http/field-errors.ts), the `errors` extension member. */
const fieldErrors = { ...detail, errors: Schema.optionalKey(Schema.Array(FieldError)) }

export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", fieldErrors) {}
export class InvalidRequestBody extends Schema.TaggedError<InvalidRequestBody>()("InvalidRequestBody", fieldErrors) {}
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", detail) {}
export class MethodNotAllowed extends Schema.TaggedError<MethodNotAllowed>()("MethodNotAllowed", {
  allow: Schema.Array(Schema.String),
}) {}
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", {}) {}
export class UnsupportedMediaType extends Schema.TaggedError<UnsupportedMediaType>()("UnsupportedMediaType", detail) {}
export class EnvironmentSuspended extends Schema.TaggedError<EnvironmentSuspended>()("EnvironmentSuspended", {}) {}
/** `wwwAuthenticate`: the challenge the 401 carries (RFC 9110 11.6.1), e.g. `Bearer realm="management"`. */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {
  ...detail,
  wwwAuthenticate: Schema.optionalKey(Schema.String),
}) {}
export class InvalidToken extends Schema.TaggedError<InvalidToken>()("InvalidToken", detail) {}
export class InsufficientScope extends Schema.TaggedError<InsufficientScope>()("InsufficientScope", {
  required: Schema.String,
  /** RFC 6750 3.1 `error="insufficient_scope"` challenge, where the credential is a Bearer token. */
  wwwAuthenticate: Schema.optionalKey(Schema.String),
}) {}
export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", detail) {}
export class Conflict extends Schema.TaggedError<Conflict>()("Conflict", detail) {}
export class PreconditionFailed extends Schema.TaggedError<PreconditionFailed>()("PreconditionFailed", {}) {}
/** A write that requires `If-Match` sent without it (the theme PUT): 428, RFC 6585 section 3. */
export class PreconditionRequired extends Schema.TaggedError<PreconditionRequired>()("PreconditionRequired", detail) {}
export class IdempotencyKeyConflict extends Schema.TaggedError<IdempotencyKeyConflict>()(
  "IdempotencyKeyConflict",
  {},
) {}
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
    "invalid_request",
    "invalid_client",
    "invalid_grant",
    "invalid_scope",
    "access_denied",
    "server_error",
    "unsupported_grant_type",
    "temporarily_unavailable",
    "unauthorized_client",
  ]),
  description: Schema.String,
  /** RFC 6749 5.2: the `WWW-Authenticate` challenge of an invalid_client answer, when one is due. */
  challenge: Schema.optionalKey(Schema.String),
}) {}
