import { presentProfileFields } from "../../management/users/present.js"
import type { UserRow } from "../../users/repo.js"
import type { Profile } from "./schema.js"

/** Row -> wire: only the profile fields leave (never metadata, security version or user handle). */
export const presentProfile = (row: UserRow): Profile => ({
  user_id: row.id,
  ...presentProfileFields(row),
  status: row.status,
  created_at: row.created_at.toISOString(),
  last_login_at: row.last_login_at === null ? null : row.last_login_at.toISOString(),
})
