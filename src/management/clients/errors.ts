import { Schema } from "effect"

/**
 * A `redirect_uris` / `post_logout_redirect_uris` entry breaks the registration rules
 * (spec: Authentication rule 10). Same code as the spec's `invalid_redirect_uri`.
 */
export class InvalidRedirectUri extends Schema.TaggedError<InvalidRedirectUri>()("InvalidRedirectUri", {
  detail: Schema.String,
}) {}
