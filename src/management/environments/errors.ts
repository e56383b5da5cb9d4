import { Schema } from "effect"

/** disable-legacy when the Environment has no legacy RP ID still accepted (spec: 409). */
export class NoLegacyRpId extends Schema.TaggedError<NoLegacyRpId>()("NoLegacyRpId", {
  detail: Schema.optionalKey(Schema.String),
}) {}
