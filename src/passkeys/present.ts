import type { PasskeyRow } from "./repo.js"
import type { PasskeySummary } from "./schema.js"

/** Spec, Passkey summary: never the credential ID, public key or sign count (nor the user handle). */
export const presentPasskey = (row: PasskeyRow): PasskeySummary => ({
  passkey_id: row.id,
  user_id: row.user_id,
  name: row.name,
  aaguid: row.aaguid,
  device_type: row.device_type,
  backed_up: row.backed_up,
  rp_id: row.rp_id,
  created_at: row.created_at.toISOString(),
  last_used_at: row.last_used_at === null ? null : row.last_used_at.toISOString(),
})
