import { Schema } from "effect"

// Failures of social login and linking; src/http/problems.ts maps each `_tag`.

const detail = { detail: Schema.optionalKey(Schema.String) }

/**
 * 400 `state_mismatch` (spec Errors table: "social state check failed"): the callback's
 * `state` is missing, malformed, tampered with, expired, of another Environment or
 * provider, or already used (replay). Nothing changes.
 */
export class StateMismatch extends Schema.TaggedError<StateMismatch>()("StateMismatch", detail) {}

/**
 * 503 `provider_unavailable`: the provider could not be reached (or its metadata was
 * unusable) while building the authorization URL. The transaction keeps its status, so the
 * user may try again. The spec names no code for this.
 */
export class ProviderUnavailable extends Schema.TaggedError<ProviderUnavailable>()("ProviderUnavailable", detail) {}

/**
 * 400 `invalid_link_code`: `POST /me/identities/{provider}/link/confirm` with a link code that
 * is unknown, already used, expired (the link state's 10 minutes), of another provider, or that
 * another user, client or session started (docs/decisions/social-login.md, Social login: "/me link: the
 * callback no longer links"). Nothing changes.
 */
export class InvalidLinkCode extends Schema.TaggedError<InvalidLinkCode>()("InvalidLinkCode", detail) {}

/** 409 `identity_already_linked`: the provider account is another user's identity (it is never moved). */
export class IdentityAlreadyLinked extends Schema.TaggedError<IdentityAlreadyLinked>()(
  "IdentityAlreadyLinked",
  detail,
) {}

/** 409 `provider_already_linked`: the user already has an identity of this provider (one per provider per user). */
export class ProviderAlreadyLinked extends Schema.TaggedError<ProviderAlreadyLinked>()(
  "ProviderAlreadyLinked",
  detail,
) {}
