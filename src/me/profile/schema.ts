import { Schema } from "effect"
import { AvatarUrl, Locale, Name, TimeZone, UserProfileFields, UserStatus } from "../../management/users/schema.js"

// Wire shapes of GET / PATCH / DELETE /me (spec: Self-service /me; "User profile (GET /me)").
// The field rules are the Management API's (one definition of a valid name, URL, locale, zone).

/**
 * The profile: the spec's list (email, email verification state, name, avatar_url, locale,
 * timezone, status, creation time, last login time) plus `user_id` (the token's `sub`).
 * Names the spec leaves open (docs/decisions/me.md): `email_verified`, `created_at`, `last_login_at`.
 */
export const Profile = Schema.Struct({
  user_id: Schema.String,
  ...UserProfileFields,
  status: UserStatus,
  created_at: Schema.String,
  last_login_at: Schema.NullOr(Schema.String),
})
export type Profile = typeof Profile.Type

/** PATCH /me: some or all of the four profile fields; `null` clears one. `email` has its own routes. */
export const UpdateProfileBody = Schema.Struct({
  name: Schema.optionalKey(Schema.NullOr(Name)),
  avatar_url: Schema.optionalKey(Schema.NullOr(AvatarUrl)),
  locale: Schema.optionalKey(Schema.NullOr(Locale)),
  timezone: Schema.optionalKey(Schema.NullOr(TimeZone)),
})
export type UpdateProfileBody = typeof UpdateProfileBody.Type

/** DELETE /me (spec: `user_id`, `status`). */
export const DeletionRequested = Schema.Struct({ user_id: Schema.String, status: Schema.Literal("pending_deletion") })
