import { Schema } from "effect"
import { PasskeySummary } from "../../users/passkey-summary.js"
import { PageQuery } from "../conventions/pagination.js"

// Wire schemas of the Management Users routes (spec: "Management API", Users table; "Resources
// and their fields": User create fields, Linked identity, Passkey summary, Session summary).
// The same schemas decode the requests and describe the routes in the OpenAPI document.

// ---- field rules -------------------------------------------------------------------------

/** RFC 5321 dot-atom local part (at most 64 characters) @ an ASCII (or punycode) DNS name with a dot. */
const EMAIL_PATTERN =
  /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/

export const Email = Schema.String.check(
  Schema.isMaxLength(254),
  Schema.isPattern(EMAIL_PATTERN, { message: "email must be a valid email address" }),
  Schema.makeFilter((s: string) => s.indexOf("@") <= 64 || "the local part of email is at most 64 characters"),
)

export const Name = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(256))

/** An absolute http(s) URL without credentials. */
export const AvatarUrl = Schema.String.check(
  Schema.isMaxLength(2048),
  Schema.makeFilter((s: string) => {
    try {
      const url = new URL(s)
      return (
        ((url.protocol === "https:" || url.protocol === "http:") &&
          url.hostname !== "" &&
          url.username === "" &&
          url.password === "") ||
        "avatar_url must be an absolute http or https URL without credentials"
      )
    } catch {
      return "avatar_url must be an absolute http or https URL without credentials"
    }
  }),
)

/** A BCP 47 language tag (`en`, `en-US`, `zh-Hant-TW`); stored in its canonical form. */
export const canonicalLocale = (tag: string): string | undefined => {
  if (!/^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8})*$/.test(tag) || tag.length > 35) return undefined
  try {
    return Intl.getCanonicalLocales(tag)[0]
  } catch {
    return undefined
  }
}
export const Locale = Schema.String.check(
  Schema.makeFilter(
    (s: string) => canonicalLocale(s) !== undefined || "locale must be a BCP 47 language tag such as en or en-US",
  ),
)

/** An IANA time zone name known to Intl (`Europe/Paris`, `UTC`); UTC offsets are not names. */
export const canonicalTimeZone = (name: string): string | undefined => {
  if (!/^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+)*$/.test(name) || name.length > 64) return undefined
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: name }).resolvedOptions().timeZone
  } catch {
    return undefined
  }
}
export const TimeZone = Schema.String.check(
  Schema.makeFilter(
    (s: string) => canonicalTimeZone(s) !== undefined || "timezone must be an IANA time zone name such as Europe/Paris",
  ),
)

export const METADATA_MAX_BYTES = 16 * 1024

/** Free-form JSON object for the customer's own data; at most 16 KiB serialized. */
export const Metadata = Schema.Record(Schema.String, Schema.Json).check(
  Schema.makeFilter(
    (o: object) =>
      Buffer.byteLength(JSON.stringify(o)) <= METADATA_MAX_BYTES ||
      `metadata must be at most ${METADATA_MAX_BYTES} bytes as JSON`,
  ),
)

export const UserStatus = Schema.Literals(["active", "blocked", "pending_deletion"])

// ---- requests ----------------------------------------------------------------------------

/** Every Users route addresses one Environment by query `environment_id`. */
export const EnvironmentQuery = Schema.Struct({ environment_id: Schema.String })

export const ListUsersQuery = Schema.Struct({
  environment_id: Schema.String,
  status: Schema.optionalKey(UserStatus),
  /** Case-insensitive: an email prefix or a substring of the name. */
  search: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(254))),
  ...PageQuery,
})

export const SubResourceListQuery = Schema.Struct({ environment_id: Schema.String, ...PageQuery })

export const UserParams = Schema.Struct({ userId: Schema.String })
export const IdentityParams = Schema.Struct({ userId: Schema.String, identityId: Schema.String })
export const PasskeyParams = Schema.Struct({ userId: Schema.String, passkeyId: Schema.String })
export const SessionParams = Schema.Struct({ userId: Schema.String, sessionId: Schema.String })

/** The fields a create may set and an update may change: `null` clears a profile field. */
const ProfileFields = {
  email_verified: Schema.optionalKey(Schema.Boolean),
  name: Schema.optionalKey(Schema.NullOr(Name)),
  avatar_url: Schema.optionalKey(Schema.NullOr(AvatarUrl)),
  locale: Schema.optionalKey(Schema.NullOr(Locale)),
  timezone: Schema.optionalKey(Schema.NullOr(TimeZone)),
  metadata: Schema.optionalKey(Metadata),
}

/** Spec "User create fields"; `environment_id` may come in the body, the query, or both (equal). */
export const CreateUserBody = Schema.Struct({
  environment_id: Schema.optionalKey(Schema.String),
  email: Email,
  ...ProfileFields,
})
export type CreateUserBody = typeof CreateUserBody.Type

/** Profile and metadata fields of a create; `metadata` replaces the whole object. */
export const UpdateUserBody = Schema.Struct(ProfileFields)
export type UpdateUserBody = typeof UpdateUserBody.Type

/**
 * Optional free-text note kept with the block. The event's `reason` is `admin_action`, or
 * `abuse_detection` when the note is exactly that word (the spec's other value).
 */
export const BlockUserBody = Schema.Struct({
  reason: Schema.optionalKey(Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(500))),
})

// ---- responses ---------------------------------------------------------------------------

const Time = Schema.String
const NullableTime = Schema.NullOr(Schema.String)

/** The address and profile as answered, in the user record and in /me's profile alike. */
export const UserProfileFields = {
  email: Schema.String,
  email_verified: Schema.Boolean,
  name: Schema.NullOr(Schema.String),
  avatar_url: Schema.NullOr(Schema.String),
  locale: Schema.NullOr(Schema.String),
  timezone: Schema.NullOr(Schema.String),
}

/** The full user record of the Management API. */
export const User = Schema.Struct({
  id: Schema.String,
  environment_id: Schema.String,
  ...UserProfileFields,
  metadata: Schema.Record(Schema.String, Schema.Json),
  status: UserStatus,
  blocked_reason: Schema.NullOr(Schema.String),
  created_at: Time,
  updated_at: Time,
  last_login_at: NullableTime,
  deleted_at: NullableTime,
})

const listOf = <S extends Schema.Top>(item: S) =>
  Schema.Struct({ data: Schema.Array(item), next_cursor: Schema.NullOr(Schema.String) })

export const UserList = listOf(User)

/** Linked identity (spec "Linked identity"): never a provider token. */
export const Identity = Schema.Struct({
  identity_id: Schema.String,
  user_id: Schema.String,
  provider: Schema.String,
  connection_id: Schema.NullOr(Schema.String),
  email: Schema.NullOr(Schema.String),
  linked_at: Time,
  last_used_at: NullableTime,
})
export const IdentityList = listOf(Identity)

/** Passkey summary (src/users/passkey-summary.ts): never the credential ID, public key or sign count. */
export const Passkey = PasskeySummary
export const PasskeyList = listOf(Passkey)

/** Session summary (live sessions only). */
export const Session = Schema.Struct({
  session_id: Schema.String,
  user_id: Schema.String,
  client_id: Schema.NullOr(Schema.String),
  device_name: Schema.NullOr(Schema.String),
  method: Schema.Literals(["email_otp", "passkey", "social"]),
  acr: Schema.String,
  auth_time: Time,
  created_at: Time,
  last_active_at: Time,
  idle_expires_at: Time,
  absolute_expires_at: Time,
})
export const SessionList = listOf(Session)

export const IdentityUnlinked = Schema.Struct({
  identity_id: Schema.String,
  user_id: Schema.String,
  unlinked: Schema.Literal(true),
})
export const PasskeyDeleted = Schema.Struct({
  passkey_id: Schema.String,
  user_id: Schema.String,
  deleted: Schema.Literal(true),
})
export const SessionRevoked = Schema.Struct({
  session_id: Schema.String,
  user_id: Schema.String,
  revoked: Schema.Literal(true),
})
export const SessionsRevoked = Schema.Struct({
  user_id: Schema.String,
  revoked: Schema.Literal(true),
  revoked_count: Schema.Int,
})
