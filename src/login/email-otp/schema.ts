import { Schema } from "effect"

/** Spec: Email OTP. Shapes only; the rules live in ./service.ts. */
export const StartBody = Schema.Struct({ email: Schema.String })
export const ResendBody = Schema.Struct({ challenge_id: Schema.String })
export const VerifyBody = Schema.Struct({ challenge_id: Schema.String, code: Schema.String })

export const ChallengeInfo = Schema.Struct({ challenge_id: Schema.String, expires_at: Schema.String })
export const Verified = Schema.Struct({ transaction_id: Schema.String, status: Schema.Literal("authenticated") })
