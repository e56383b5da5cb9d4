import { Schema } from "effect"

// The wire of social login and linking (spec: Social login; /me identity link).

export const SocialStartParams = Schema.Struct({ transactionId: Schema.String, provider: Schema.String })
export const ProviderParams = Schema.Struct({ provider: Schema.String })

export const AuthorizationUrl = Schema.Struct({ authorization_url: Schema.String })

export const LinkBody = Schema.Struct({ redirect_uri: Schema.String })

/** The one-time code the link's callback handed to the browser at the redirect URI. */
export const LinkConfirmBody = Schema.Struct({ link_code: Schema.String })
export const LinkConfirmed = Schema.Struct({
  identity_id: Schema.String,
  provider: Schema.String,
  linked: Schema.Literal(true),
})

/** The callback's parameters (documentation; the route reads query, form or JSON). */
export const CallbackParameters = Schema.Struct({
  state: Schema.String,
  code: Schema.optionalKey(Schema.String),
  error: Schema.optionalKey(Schema.String),
  error_description: Schema.optionalKey(Schema.String),
  iss: Schema.optionalKey(Schema.String),
  user: Schema.optionalKey(Schema.String),
})
