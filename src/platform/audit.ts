import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { Ids } from "./ids.js"
import { type Actor, CurrentRequest } from "./request-context.js"

export interface AuditInput {
  readonly workspaceId: string
  readonly environmentId?: string | undefined
  readonly actor: Actor
  /** Dotted verb, e.g. `client.created`, `user.blocked`, `login.failed`. */
  readonly action: string
  readonly subjectType?: string | undefined
  readonly subjectId?: string | undefined
  readonly result?: "success" | "failure"
  /** Never secrets, codes, tokens or full email addresses. */
  readonly details?: Record<string, unknown>
}

/** Appends an audit record on the caller's connection (inside its transaction). The table is append-only. */
export class Audit extends Context.Service<Audit, {
  readonly append: (input: AuditInput) => Effect.Effect<string, never, SqlClient.SqlClient>
}>()("platform/Audit") {}

export const AuditLive = Layer.effect(Audit, Effect.gen(function* () {
  const ids = yield* Ids
  return Audit.of({
    append: (input) => Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const request = yield* CurrentRequest
      const id = yield* ids.make("aud")
      const now = yield* Clock.currentTimeMillis
      yield* sql`insert into audit_events (id, workspace_id, environment_id, actor_type, actor_id, action,
          subject_type, subject_id, result, request_id, details, created_at)
        values (${id}, ${input.workspaceId}, ${input.environmentId ?? null}, ${input.actor.type}, ${input.actor.id ?? null},
          ${input.action}, ${input.subjectType ?? null}, ${input.subjectId ?? null}, ${input.result ?? "success"},
          ${request?.requestId ?? null}, ${JSON.stringify(input.details ?? {})}::jsonb, ${new Date(now)})`
      return id
    }).pipe(Effect.orDie),
  })
}))
