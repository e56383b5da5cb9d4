import { Schema } from "effect"

// Failures of the self-service `/me` routes; src/http/problems.ts maps each `_tag`.

const detail = { detail: Schema.optionalKey(Schema.String) }

/**
 * 401 `unauthorized`: no Bearer access token was sent (spec, Authentication: `/me` failure
 * gives 401 `unauthorized` or `invalid_token`). Cookies are never read, so a request that
 * carries only a Hosted Login cookie lands here too. Carries the RFC 6750 3 challenge.
 */
export class BearerTokenMissing extends Schema.TaggedError<BearerTokenMissing>()("BearerTokenMissing", {
  detail: Schema.String,
  wwwAuthenticate: Schema.String,
}) {}

/** 400 `passkey_not_found` (spec, Errors: "target credential or identity of /me not found"). */
export class PasskeyNotFound extends Schema.TaggedError<PasskeyNotFound>()("PasskeyNotFound", detail) {}

/** 400 `last_factor_deletion_requires_confirmation` (spec, /me rule 4). */
export class LastFactorDeletionRequiresConfirmation extends Schema.TaggedError<LastFactorDeletionRequiresConfirmation>()(
  "LastFactorDeletionRequiresConfirmation",
  detail,
) {}

/**
 * 400 `identity_not_found` (spec, Errors: "target credential or identity of /me not found"):
 * an unknown identity id, or one of another user.
 */
export class IdentityNotFound extends Schema.TaggedError<IdentityNotFound>()("IdentityNotFound", detail) {}
