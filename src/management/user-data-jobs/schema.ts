import { Schema } from "effect"
import { PageQuery } from "../conventions/pagination.js"

// Wire of the Import / export job routes (spec: Management API, "Import / export jobs";
// Resources: "Job fields beyond `status` and (for export) an expiring `download_url`: not
// shown" -- ours are recorded in docs/decisions/management-api.md). The same schemas decode and document.

export const JobParams = Schema.Struct({ jobId: Schema.String })

export const JobStatus = Schema.Literals(["pending", "processing", "completed", "failed"])
export const ImportFormat = Schema.Literals(["json", "csv"])

const Id = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100))

export const CreateImportJobBody = Schema.Struct({
  environment_id: Id,
  workspace_id: Schema.optionalKey(Schema.String),
  format: ImportFormat,
  /** HTTPS; fetched during the request under the webhook SSRF rules. */
  source_url: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(2048)),
})

const JobError = Schema.NullOr(Schema.Struct({ code: Schema.String, message: Schema.String }))

export const ImportJob = Schema.Struct({
  id: Schema.String,
  environment_id: Schema.String,
  format: ImportFormat,
  /** The source without its query string (which may carry a credential). */
  source_url: Schema.String,
  status: JobStatus,
  total_rows: Schema.Int,
  imported_count: Schema.Int,
  /** Rows whose email already exists (in the Environment or earlier in the file). */
  skipped_count: Schema.Int,
  /** Rows refused as invalid. */
  failed_count: Schema.Int,
  /** Entries of GET .../errors: skipped_count + failed_count. */
  error_count: Schema.Int,
  /** Why the whole job failed (fetch or file problem); null otherwise. */
  error: JobError,
  created_at: Schema.String,
  started_at: Schema.NullOr(Schema.String),
  completed_at: Schema.NullOr(Schema.String),
})

export const ImportErrorsQuery = Schema.Struct({ ...PageQuery })

export const ImportRowError = Schema.Struct({
  /** Data row number, from 1 (a CSV header is not a row). */
  row: Schema.Int,
  /** CSV: the source line of the row, as csv-parse counts lines (the header is line 1; a quoted line break makes a record end on a later line). JSON: null. */
  line: Schema.NullOr(Schema.Int),
  code: Schema.Literals([
    "invalid_row",
    "unknown_field",
    "missing_email",
    "invalid_field",
    "duplicate_in_file",
    "email_already_registered",
  ]),
  field: Schema.NullOr(Schema.String),
  message: Schema.String,
})

export const ImportRowErrorList = Schema.Struct({
  data: Schema.Array(ImportRowError),
  next_cursor: Schema.NullOr(Schema.String),
})

export const CreateExportJobBody = Schema.Struct({
  environment_id: Id,
  workspace_id: Schema.optionalKey(Schema.String),
  target_user_id: Id,
})

export const ExportJob = Schema.Struct({
  id: Schema.String,
  environment_id: Schema.String,
  target_user_id: Schema.String,
  status: JobStatus,
  /** GET .../download on the Management host (API key required), usable until download_expires_at. */
  download_url: Schema.NullOr(Schema.String),
  download_expires_at: Schema.NullOr(Schema.String),
  /** Size of the artifact in bytes (JSON, UTF-8). */
  size_bytes: Schema.NullOr(Schema.Int),
  error: JobError,
  created_at: Schema.String,
  completed_at: Schema.NullOr(Schema.String),
})

/** The downloaded artifact: the user's data, never a secret. */
export const ExportArtifact = Schema.Struct({
  format: Schema.Literal("authservice.user-export"),
  version: Schema.Literal(1),
  job_id: Schema.String,
  exported_at: Schema.String,
  environment_id: Schema.String,
  user: Schema.Record(Schema.String, Schema.Json),
  identities: Schema.Array(Schema.Record(Schema.String, Schema.Json)),
  passkeys: Schema.Array(Schema.Record(Schema.String, Schema.Json)),
  sessions: Schema.Array(Schema.Record(Schema.String, Schema.Json)),
})
