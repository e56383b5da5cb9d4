import { Schema } from "effect"

// Failures of the passkey ceremonies; src/http/problems.ts maps each `_tag` to its status and code.

const detail = { detail: Schema.optionalKey(Schema.String) }

/**
 * 400 `webauthn_verification_failed` (spec Errors table: "OTP, WebAuthn or social state check
 * failed"). The ceremony's challenge is consumed before this is returned.
 */
export class WebAuthnVerificationFailed extends Schema.TaggedError<WebAuthnVerificationFailed>()(
  "WebAuthnVerificationFailed",
  detail,
) {}

/**
 * 403 `reauthentication_required`: passkey registration needs a fresh authentication (spec,
 * Passkey rule 1 and /me rule 1: a just-completed OTP or social re-authentication on the
 * transaction, or a session whose `auth_time` is within 5 minutes). The spec names no code.
 */
export class ReauthenticationRequired extends Schema.TaggedError<ReauthenticationRequired>()(
  "ReauthenticationRequired",
  detail,
) {}
