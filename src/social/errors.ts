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
