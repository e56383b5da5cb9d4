import { Schema } from "effect"

/** Theme PUT without `If-Match` (spec: "Theme PUT uses If-Match"): 428, RFC 6585 section 3. */
export class PreconditionRequired extends Schema.TaggedError<PreconditionRequired>()("PreconditionRequired", {
  detail: Schema.optionalKey(Schema.String),
}) {}

/** disable-legacy when the Environment has no legacy RP ID still accepted (spec: 409). */
export class NoLegacyRpId extends Schema.TaggedError<NoLegacyRpId>()("NoLegacyRpId", {
  detail: Schema.optionalKey(Schema.String),
}) {}
