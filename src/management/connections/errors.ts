import { Schema } from "effect"

/** Unknown connection, or one the caller may not reach (spec: 404 `connection_not_found`). */
export class ConnectionNotFound extends Schema.TaggedError<ConnectionNotFound>()("ConnectionNotFound", {
  detail: Schema.optionalKey(Schema.String),
}) {}

/** The Environment already has a live connection for this provider or provider_key. */
export class ConnectionAlreadyExists extends Schema.TaggedError<ConnectionAlreadyExists>()("ConnectionAlreadyExists", {
  detail: Schema.String,
}) {}
