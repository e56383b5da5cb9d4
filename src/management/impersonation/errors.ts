import { Schema } from "effect"

// Failures of the impersonation routes; src/http/problems.ts maps each `_tag`.

/** 403 `impersonation_disabled`: the Environment setting `impersonation_enabled` is off. */
export class ImpersonationDisabled extends Schema.TaggedError<ImpersonationDisabled>()("ImpersonationDisabled", {
  detail: Schema.optionalKey(Schema.String),
}) {}
/** 409 `user_blocked`: a blocked user cannot be impersonated (it cannot sign in either). */
export class ImpersonationTargetBlocked extends Schema.TaggedError<ImpersonationTargetBlocked>()(
  "ImpersonationTargetBlocked",
  {
    detail: Schema.optionalKey(Schema.String),
  },
) {}
