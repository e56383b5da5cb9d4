import { Schema } from "effect"

const detail = { detail: Schema.optionalKey(Schema.String) }

/** 400 `invalid_code`: wrong, expired, superseded or exhausted code, or an unknown challenge. */
export class InvalidCode extends Schema.TaggedError<InvalidCode>()("InvalidCode", detail) {}
/** 429 `resend_too_soon` with `Retry-After`: less than 30 s since the previous send (spec: Email OTP rule 2). */
export class ResendTooSoon extends Schema.TaggedError<ResendTooSoon>()("ResendTooSoon", {
  retryAfterSeconds: Schema.Number,
}) {}
/** 403 `new_user_creation_blocked`: the Environment gate on new users. */
export class NewUserCreationBlocked extends Schema.TaggedError<NewUserCreationBlocked>()(
  "NewUserCreationBlocked",
  detail,
) {}
