import { Schema } from "effect"
import { Email } from "../../management/users/schema.js"

// Wire shapes of the email change routes (spec: Self-service /me, email change rows).

export const StartEmailChangeBody = Schema.Struct({ new_email: Email })
export const VerifyEmailChangeBody = Schema.Struct({ challenge_id: Schema.String, code: Schema.String })

/** 202 from start and verify-old: the challenge whose code was just mailed (Email OTP challenge fields). */
export const EmailChangeChallenge = Schema.Struct({ challenge_id: Schema.String, expires_at: Schema.String })
/** 200 from verify-new: the switched address. */
export const EmailChanged = Schema.Struct({ email: Schema.String, email_verified: Schema.Literal(true) })
