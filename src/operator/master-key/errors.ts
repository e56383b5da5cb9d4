import { Schema } from "effect"

/** The rotation cannot run or cannot finish; `message` says what the operator must do. */
export class MasterKeyRotationRefused extends Schema.TaggedError<MasterKeyRotationRefused>()(
  "MasterKeyRotationRefused",
  {
    message: Schema.String,
  },
) {}
