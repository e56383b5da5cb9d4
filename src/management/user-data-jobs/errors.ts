import { Schema } from "effect"

// Failures of the Import / export job routes; src/http/problems.ts maps each `_tag`.

const detail = { detail: Schema.optionalKey(Schema.String) }

/** 404 `job_not_found`: no such job in the caller's Workspace (or its pinned Environment). */
export class UserDataJobNotFound extends Schema.TaggedError<UserDataJobNotFound>()("UserDataJobNotFound", detail) {}
/** 400 `invalid_request`: `source_url` breaks the URL rules (HTTPS, no userinfo/fragment, no localhost or blocked IP). */
export class InvalidSourceUrl extends Schema.TaggedError<InvalidSourceUrl>()("InvalidSourceUrl", {
  detail: Schema.String,
}) {}
/** 410 `export_expired`: the download window of the export has passed (spec: "an expired one gives 410"). */
export class ExportExpired extends Schema.TaggedError<ExportExpired>()("ExportExpired", detail) {}
/** 409 `export_not_ready`: the export did not complete, there is nothing to download. */
export class ExportNotReady extends Schema.TaggedError<ExportNotReady>()("ExportNotReady", detail) {}
