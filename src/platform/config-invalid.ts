import { Schema } from "effect"

/**
 * A configuration the process refuses to start with (src/platform/config.ts, config-providers.ts);
 * the message says what to change.
 */
export class ConfigInvalid extends Schema.TaggedError<ConfigInvalid>()("ConfigInvalid", {
  message: Schema.String,
}) {}
