import { Schema } from "effect"

/** Spec: Login transactions, "Create body". Shape only; the rules live in ../rules.ts. */
export const CreateTransactionBody = Schema.Struct({
  client_id: Schema.String,
  redirect_uri: Schema.String,
  code_challenge: Schema.String,
  code_challenge_method: Schema.String,
  state: Schema.String,
  scope: Schema.String,
  nonce: Schema.optionalKey(Schema.String),
  resource: Schema.optionalKey(Schema.Array(Schema.String)),
  response_mode: Schema.optionalKey(Schema.String),
})

export const TransactionParams = Schema.Struct({ transactionId: Schema.String })

export const CreatedTransaction = Schema.Struct({
  transaction_id: Schema.String,
  expires_at: Schema.String,
  available_methods: Schema.Array(Schema.String),
})

export const TransactionView = Schema.Struct({
  transaction_id: Schema.String,
  status: Schema.String,
  expires_at: Schema.String,
  available_methods: Schema.Array(Schema.String),
  method: Schema.optionalKey(Schema.String),
  pending_link: Schema.optionalKey(Schema.Unknown),
})

/**
 * The body of `complete` (spec: "no body"). A transaction authenticated by a custom-UI social
 * login must present the one-time `social_proof` its browser got at the redirect URI
 * (docs/decisions/social-login.md, Social login: "Custom UI: the completion proof"); others send nothing.
 */
export const CompleteBody = Schema.Struct({
  social_proof: Schema.optionalKey(Schema.String),
})

/**
 * The answer of `complete` (spec: "one-time `authorization_code` and `state`; other fields: not
 * shown"). `iss` is the Environment's issuer: discovery announces RFC 9207
 * (`authorization_response_iss_parameter_supported`), so RP libraries refuse a callback
 * without it, and a custom UI appends it with `code` and `state` to `redirect_uri`.
 */
export const CompletedTransaction = Schema.Struct({
  transaction_id: Schema.String,
  authorization_code: Schema.String,
  state: Schema.String,
  redirect_uri: Schema.String,
  iss: Schema.String,
})
