import { Schema } from "effect"

// Failures of the Management Users routes; src/http/problems.ts maps each `_tag` to its
// status and code. "404 generally means missing resource, 409 state or uniqueness conflict".

const detail = { detail: Schema.optionalKey(Schema.String) }

/** 404 `user_not_found`: no such user in the addressed Environment. */
export class UserNotFound extends Schema.TaggedError<UserNotFound>()("UserNotFound", detail) {}
/** 409 `user_pending_deletion`: the user is logically deleted; only reads and clean-up remain. */
export class UserPendingDeletion extends Schema.TaggedError<UserPendingDeletion>()("UserPendingDeletion", detail) {}
/** 404 `identity_not_found`: no such linked identity of this user. */
export class UserIdentityNotFound extends Schema.TaggedError<UserIdentityNotFound>()("UserIdentityNotFound", detail) {}
/** 404 `passkey_not_found`: no such passkey of this user. */
export class UserPasskeyNotFound extends Schema.TaggedError<UserPasskeyNotFound>()("UserPasskeyNotFound", detail) {}
/** 404 `session_not_found` (spec Errors table): no such session of this user. */
export class UserSessionNotFound extends Schema.TaggedError<UserSessionNotFound>()("UserSessionNotFound", detail) {}
