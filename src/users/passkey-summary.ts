import { Schema } from "effect"

// The spec's Passkey summary, once: answered by the passkey ceremonies, /me/passkeys, the
// Management API's user passkey list and the user export. It lives with the user it belongs to,
// below every surface that shows it (docs/architecture.md, Floors).

/**
 * Passkey summary (spec: "Never contains the credential ID, public key or sign count"; nor the
 * user handle).
 */
export const PasskeySummary = Schema.Struct({
  passkey_id: Schema.String,
  user_id: Schema.String,
  name: Schema.NullOr(Schema.String),
  aaguid: Schema.NullOr(Schema.String),
  device_type: Schema.NullOr(Schema.String),
  backed_up: Schema.Boolean,
  rp_id: Schema.String,
  created_at: Schema.String,
  last_used_at: Schema.NullOr(Schema.String),
})
export type PasskeySummary = typeof PasskeySummary.Type

/** Passkey columns safe to show: never credential_id, public_key, sign_count or user_handle. */
export interface PasskeySummaryRow {
  readonly id: string
  readonly user_id: string
  readonly name: string | null
  readonly aaguid: string | null
  readonly device_type: string | null
  readonly backed_up: boolean
  readonly rp_id: string
  readonly created_at: Date
  readonly last_used_at: Date | null
}

export const presentPasskey = (row: PasskeySummaryRow): PasskeySummary => ({
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
