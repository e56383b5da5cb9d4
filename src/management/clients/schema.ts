import { Schema } from "effect"
import { PageQuery } from "../conventions/pagination.js"
import { MAX_ALLOWED_RESOURCES } from "./resource.js"

// The wire of the Clients routes (spec: Resources "Client", Management API "Clients").
// The same schemas decode requests and generate the OpenAPI document.

export const ClientTypes = ["web_bff", "web_spa", "react_native"] as const
export const ClientType = Schema.Literals(ClientTypes)
export const AuthMethods = ["none", "client_secret_basic", "client_secret_post"] as const
export const TokenEndpointAuthMethod = Schema.Literals(AuthMethods)
/** Login scopes a Client may be allowed (spec: Authentication rule 7). */
export const LoginScope = Schema.Literals(["openid", "profile", "email", "offline_access"])
export const ClientStatus = Schema.Literals(["active", "disabled"])

const MAX_URIS = 50
const UriList = Schema.Array(Schema.String).check(Schema.isMaxLength(MAX_URIS))
const Name = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200))

// Formats of the native app registration (Apple App Site Association, Android Digital Asset Links).
const ReverseDns = Schema.String.check(
  Schema.isPattern(/^[a-z][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*)+$/),
  Schema.isMaxLength(255),
)
const IosBundleId = Schema.String.check(Schema.isPattern(/^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$/), Schema.isMaxLength(155))
const IosTeamId = Schema.String.check(Schema.isPattern(/^[A-Z0-9]{10}$/))
const AndroidPackageName = Schema.String.check(
  Schema.isPattern(/^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$/),
  Schema.isMaxLength(255),
)
/** SHA-256 signing-certificate fingerprint: 32 colon-separated hex pairs. */
const Sha256Fingerprint = Schema.String.check(Schema.isPattern(/^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){31}$/))
const Hostname = Schema.String.check(
  Schema.isPattern(/^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+$/),
)

/** `mobile_app` as sent: each field optional; the object replaces the stored one. */
export const MobileAppInput = Schema.Struct({
  app_scheme: Schema.optionalKey(Schema.NullOr(ReverseDns)),
  ios_bundle_id: Schema.optionalKey(Schema.NullOr(IosBundleId)),
  ios_team_id: Schema.optionalKey(Schema.NullOr(IosTeamId)),
  android_package_name: Schema.optionalKey(Schema.NullOr(AndroidPackageName)),
  android_sha256_fingerprints: Schema.optionalKey(Schema.Array(Sha256Fingerprint).check(Schema.isMaxLength(20))),
  universal_link_host: Schema.optionalKey(Schema.NullOr(Hostname)),
})
export type MobileAppInput = typeof MobileAppInput.Type

/** `mobile_app` as stored and returned: every field present. */
export const MobileApp = Schema.Struct({
  app_scheme: Schema.NullOr(Schema.String),
  ios_bundle_id: Schema.NullOr(Schema.String),
  ios_team_id: Schema.NullOr(Schema.String),
  android_package_name: Schema.NullOr(Schema.String),
  android_sha256_fingerprints: Schema.Array(Schema.String),
  universal_link_host: Schema.NullOr(Schema.String),
})
export type MobileApp = typeof MobileApp.Type

const settableFields = {
  redirect_uris: Schema.optionalKey(UriList),
  post_logout_redirect_uris: Schema.optionalKey(UriList),
  allowed_origins: Schema.optionalKey(UriList),
  allowed_scopes: Schema.optionalKey(Schema.Array(LoginScope)),
  allowed_resources: Schema.optionalKey(Schema.Array(Schema.String).check(Schema.isMaxLength(MAX_ALLOWED_RESOURCES))),
  require_pkce: Schema.optionalKey(Schema.Boolean),
  status: Schema.optionalKey(ClientStatus),
  mobile_app: Schema.optionalKey(Schema.NullOr(MobileAppInput)),
}

export const CreateClientBody = Schema.Struct({
  environment_id: Schema.String,
  workspace_id: Schema.optionalKey(Schema.String),
  client_type: ClientType,
  name: Name,
  token_endpoint_auth_method: TokenEndpointAuthMethod,
  ...settableFields,
})
export type CreateClientBody = typeof CreateClientBody.Type

export const UpdateClientBody = Schema.Struct({
  name: Schema.optionalKey(Name),
  token_endpoint_auth_method: Schema.optionalKey(TokenEndpointAuthMethod),
  ...settableFields,
})
export type UpdateClientBody = typeof UpdateClientBody.Type

export const ClientParams = Schema.Struct({ clientId: Schema.String })

export const ListClientsQuery = Schema.Struct({
  environment_id: Schema.String,
  workspace_id: Schema.optionalKey(Schema.String),
  client_type: Schema.optionalKey(ClientType),
  ...PageQuery,
})

export const Client = Schema.Struct({
  id: Schema.String,
  /** The OAuth `client_id`: the same value as `id`. */
  client_id: Schema.String,
  environment_id: Schema.String,
  client_type: ClientType,
  name: Schema.String,
  token_endpoint_auth_method: TokenEndpointAuthMethod,
  redirect_uris: Schema.Array(Schema.String),
  post_logout_redirect_uris: Schema.Array(Schema.String),
  allowed_origins: Schema.Array(Schema.String),
  allowed_scopes: Schema.Array(Schema.String),
  allowed_resources: Schema.Array(Schema.String),
  require_pkce: Schema.Boolean,
  status: ClientStatus,
  mobile_app: Schema.NullOr(MobileApp),
  created_at: Schema.String,
  updated_at: Schema.String,
})

/** Creation and rotation answers: the Client plus its secret, shown this once. */
export const ClientWithSecret = Schema.Struct({ ...Client.fields, client_secret: Schema.optionalKey(Schema.String) })

export const ClientList = Schema.Struct({ data: Schema.Array(Client), next_cursor: Schema.NullOr(Schema.String) })

export const Deleted = Schema.Struct({ id: Schema.String, deleted: Schema.Boolean })
