import { Schema } from "effect"

/**
 * The caller asked for a key with scopes it does not hold itself: a key can never mint a
 * key wider than itself (docs/decisions/management-api.md, "API keys"). Rendered as 403 insufficient_scope.
 */
export class ScopesExceedCaller extends Schema.TaggedError<ScopesExceedCaller>()("ScopesExceedCaller", {
  detail: Schema.optionalKey(Schema.String),
}) {}
