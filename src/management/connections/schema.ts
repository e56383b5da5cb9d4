import { Schema } from "effect"
import { PageQuery } from "../conventions/pagination.js"

// The wire of the Connections routes (spec: Resources "Connection", Management API "Connections").

export const Providers = ["google", "apple", "github", "microsoft", "generic_oidc"] as const
export const Provider = Schema.Literals(Providers)
export type Provider = typeof Provider.Type
export const ConnectionMode = Schema.Literals(["managed", "byo"])
export const ConnectionStatus = Schema.Literals(["active", "disabled"])

/** The `provider` string recorded on identities and in events: 1 to 64 characters (spec: Limits). */
const ProviderKey = Schema.String.check(Schema.isPattern(/^[a-z0-9][a-z0-9_.-]{0,63}$/))
const ProviderClientId = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(512))
const ProviderClientSecret = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(8192))
const Issuer = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(2048))
/** RFC 6749 section 3.3 scope-token characters. */
const ScopeToken = Schema.String.check(Schema.isPattern(/^[\x21\x23-\x5B\x5D-\x7E]{1,128}$/))
const Scopes = Schema.Array(ScopeToken).check(Schema.isMaxLength(50))
const ClaimName = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(128))

/** Which provider claim fills which profile field; absent keys use the provider's standard claims. */
export const ProfileMapping = Schema.Struct({
  sub: Schema.optionalKey(ClaimName),
  email: Schema.optionalKey(ClaimName),
  email_verified: Schema.optionalKey(ClaimName),
  name: Schema.optionalKey(ClaimName),
  avatar_url: Schema.optionalKey(ClaimName),
  locale: Schema.optionalKey(ClaimName),
})
export type ProfileMapping = typeof ProfileMapping.Type

export const CreateConnectionBody = Schema.Struct({
  environment_id: Schema.String,
  workspace_id: Schema.optionalKey(Schema.String),
  provider: Provider,
  mode: ConnectionMode,
  provider_key: ProviderKey,
  provider_client_id: ProviderClientId,
  provider_client_secret: ProviderClientSecret,
  issuer: Schema.optionalKey(Schema.NullOr(Issuer)),
  scopes: Schema.optionalKey(Scopes),
  profile_mapping: Schema.optionalKey(ProfileMapping),
  status: Schema.optionalKey(ConnectionStatus),
})
export type CreateConnectionBody = typeof CreateConnectionBody.Type

export const UpdateConnectionBody = Schema.Struct({
  issuer: Schema.optionalKey(Issuer),
  provider_client_id: Schema.optionalKey(ProviderClientId),
  provider_client_secret: Schema.optionalKey(ProviderClientSecret),
  scopes: Schema.optionalKey(Scopes),
  profile_mapping: Schema.optionalKey(ProfileMapping),
  status: Schema.optionalKey(ConnectionStatus),
  owner_confirmed: Schema.optionalKey(Schema.Boolean),
})
export type UpdateConnectionBody = typeof UpdateConnectionBody.Type

export const ConnectionParams = Schema.Struct({ connectionId: Schema.String })

export const ListConnectionsQuery = Schema.Struct({
  environment_id: Schema.String,
  workspace_id: Schema.optionalKey(Schema.String),
  provider: Schema.optionalKey(Provider),
  ...PageQuery,
})

/** `provider_client_secret` is write-only: it is never part of this. */
export const Connection = Schema.Struct({
  id: Schema.String,
  environment_id: Schema.String,
  provider: Provider,
  mode: ConnectionMode,
  provider_key: Schema.String,
  provider_client_id: Schema.NullOr(Schema.String),
  issuer: Schema.NullOr(Schema.String),
  scopes: Schema.Array(Schema.String),
  profile_mapping: ProfileMapping,
  status: ConnectionStatus,
  owner_confirmed: Schema.Boolean,
  /** The redirect URI to register at the provider (derived: managed on the issuer host, byo on the Interaction Domain). */
  callback_url: Schema.String,
  created_at: Schema.String,
  updated_at: Schema.String,
})

export const ConnectionList = Schema.Struct({
  data: Schema.Array(Connection),
  next_cursor: Schema.NullOr(Schema.String),
})

export const Deleted = Schema.Struct({ id: Schema.String, deleted: Schema.Boolean })
