import { Schema } from "effect"

const detail = { detail: Schema.optionalKey(Schema.String) }

/** 404 `auth_transaction_not_found`: unknown id, another Environment's, or not this browser's (Hosted Login binding). */
export class AuthTransactionNotFound extends Schema.TaggedError<AuthTransactionNotFound>()(
  "AuthTransactionNotFound",
  detail,
) {}
/** 410 `auth_transaction_expired`: more than 10 minutes since creation (spec: Limits). */
export class AuthTransactionExpired extends Schema.TaggedError<AuthTransactionExpired>()(
  "AuthTransactionExpired",
  detail,
) {}
/** 409 `transaction_not_authenticated`: complete before authentication (spec: Login transaction). */
export class TransactionNotAuthenticated extends Schema.TaggedError<TransactionNotAuthenticated>()(
  "TransactionNotAuthenticated",
  detail,
) {}
/** 409 `invalid_transaction_state`: the operation does not apply to the transaction's current status (e.g. after cancel). */
export class InvalidTransactionState extends Schema.TaggedError<InvalidTransactionState>()(
  "InvalidTransactionState",
  detail,
) {}
/** 403 `access_denied`: the user is blocked or pending deletion (the spec's code for a blocked user). */
export class AccessDenied extends Schema.TaggedError<AccessDenied>()("AccessDenied", detail) {}
/**
 * 400 `invalid_social_proof`: `complete` (or passkey registration) of a custom-UI transaction
 * that a social login authenticated, without the one-time `social_proof` the callback handed to
 * the browser that came back from the provider, or with a wrong one (docs/decisions/social-login.md, Social
 * login: "Custom UI: the completion proof"). Nothing changes.
 */
export class InvalidSocialProof extends Schema.TaggedError<InvalidSocialProof>()("InvalidSocialProof", detail) {}
