import type { SessionRow } from "../../sessions/repo.js"
import type { UserRow } from "../../users/repo.js"
import type { IdentityRow } from "./repo.js"
import type { Identity, Session, User } from "./schema.js"

// Row -> wire. Only the fields listed here ever leave the service: never security_version,
// user_handle, credential ids, public keys, sign counts or provider subjects.

const iso = (d: Date) => d.toISOString()
const isoOrNull = (d: Date | null) => (d === null ? null : d.toISOString())

/** The address and profile fields (`UserProfileFields`), shared with /me's profile. */
export const presentProfileFields = (row: UserRow) => ({
  email: row.email,
  email_verified: row.email_verified,
  name: row.name,
  avatar_url: row.avatar_url,
  locale: row.locale,
  timezone: row.timezone,
})

export const presentUser = (row: UserRow): typeof User.Type => ({
  id: row.id,
  environment_id: row.environment_id,
  ...presentProfileFields(row),
  metadata: row.metadata as (typeof User.Type)["metadata"],
  status: row.status,
  blocked_reason: row.blocked_reason,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at),
  last_login_at: isoOrNull(row.last_login_at),
  deleted_at: isoOrNull(row.deleted_at),
})

export const presentIdentity = (row: IdentityRow): typeof Identity.Type => ({
  identity_id: row.id,
  user_id: row.user_id,
  provider: row.provider,
  connection_id: row.connection_id,
  email: row.email,
  linked_at: iso(row.linked_at),
  last_used_at: isoOrNull(row.last_used_at),
})

export { presentPasskey } from "../../users/passkey-summary.js"

export const presentSession = (row: SessionRow): typeof Session.Type => ({
  session_id: row.id,
  user_id: row.user_id,
  client_id: row.client_id,
  device_name: row.device_name,
  method: row.method,
  acr: row.acr,
  auth_time: iso(row.auth_time),
  created_at: iso(row.created_at),
  last_active_at: iso(row.last_active_at),
  idle_expires_at: iso(row.idle_expires_at),
  absolute_expires_at: iso(row.absolute_expires_at),
})
