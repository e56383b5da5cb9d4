import { Schema } from "effect"

// Wire of POST /v1/impersonation and /v1/impersonation/stop (spec: "Other Management routes";
// Limits: reason 10 to 1000 characters, duration_minutes 1 to 15). "The start response
// contains the service [the actor], target user, reason, expiry and forbidden scopes": the
// field names are ours (docs/decisions/management-api.md).

export const StartQuery = Schema.Struct({ environment_id: Schema.String })

/** Characters are Unicode code points; a reason of blanks only is no reason. */
export const Reason = Schema.String.check(
  Schema.makeFilter((s: string) => {
    const length = [...s].length
    if (length < 10 || length > 1000) return "reason must be 10 to 1000 characters"
    return s.trim() !== "" || "reason must not be blank"
  }),
)

export const StartBody = Schema.Struct({
  user_id: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(100)),
  reason: Reason,
  duration_minutes: Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 15 })),
})
export type StartBody = typeof StartBody.Type

export const Impersonation = Schema.Struct({
  id: Schema.String,
  environment_id: Schema.String,
  /** Who impersonates: the Dashboard user (an event/audit actor). */
  actor: Schema.Struct({ type: Schema.Literal("workspace_member"), id: Schema.String }),
  target_user: Schema.Struct({ id: Schema.String, email: Schema.String, name: Schema.NullOr(Schema.String) }),
  reason: Schema.String,
  duration_minutes: Schema.Int,
  started_at: Schema.String,
  expires_at: Schema.String,
  /** Scopes the impersonation can never carry. */
  forbidden_scopes: Schema.Array(Schema.String),
  /** An access token for the target user with an `act` claim (RFC 8693 4.1), valid until expires_at. */
  access_token: Schema.String,
  token_type: Schema.Literal("Bearer"),
  expires_in: Schema.Int,
  scope: Schema.String,
})

export const Stopped = Schema.Struct({
  stopped: Schema.Boolean,
  impersonation_ids: Schema.Array(Schema.String),
  ended_at: Schema.NullOr(Schema.String),
})
