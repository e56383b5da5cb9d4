import { Schema } from "effect"
import { PageQuery } from "../conventions/pagination.js"

// Wire schemas of GET /v1/audit-events (spec: "Other Management routes"). The record's field
// names are not shown by the spec; they follow the filter names.

export const ActorType = Schema.Literals(["end_user", "workspace_member", "api_key", "system"])
export const AuditResult = Schema.Literals(["success", "failure"])

const ISO_8601 = /^\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2}))?$/

/** An ISO 8601 date (`2025-01-31`, midnight UTC) or date-time with `Z` or an offset. */
export const parseInstant = (s: string): Date | undefined => {
  if (!ISO_8601.test(s)) return undefined
  const ms = Date.parse(s)
  return Number.isNaN(ms) ? undefined : new Date(ms)
}

const Instant = Schema.String.check(
  Schema.makeFilter(
    (s: string) => parseInstant(s) !== undefined || "must be an ISO 8601 date or date-time with Z or an offset",
  ),
)

const Text = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(200))

export const ListAuditEventsQuery = Schema.Struct({
  environment_id: Schema.String,
  actor_type: Schema.optionalKey(ActorType),
  action: Schema.optionalKey(Text),
  subject_type: Schema.optionalKey(Text),
  subject_id: Schema.optionalKey(Text),
  result: Schema.optionalKey(AuditResult),
  /** Exclusive lower bound on `created_at`. */
  created_after: Schema.optionalKey(Instant),
  /** Exclusive upper bound on `created_at`. */
  created_before: Schema.optionalKey(Instant),
  ...PageQuery,
})

export const AuditEvent = Schema.Struct({
  id: Schema.String,
  workspace_id: Schema.String,
  environment_id: Schema.NullOr(Schema.String),
  actor_type: ActorType,
  actor_id: Schema.NullOr(Schema.String),
  action: Schema.String,
  subject_type: Schema.NullOr(Schema.String),
  subject_id: Schema.NullOr(Schema.String),
  result: AuditResult,
  request_id: Schema.NullOr(Schema.String),
  details: Schema.Record(Schema.String, Schema.Json),
  created_at: Schema.String,
})

export const AuditEventList = Schema.Struct({
  data: Schema.Array(AuditEvent),
  next_cursor: Schema.NullOr(Schema.String),
})
