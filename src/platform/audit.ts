import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient, type Statement } from "effect/sql"
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
export class Audit extends Context.Service<
  Audit,
  {
    readonly append: (input: AuditInput) => Effect.Effect<string, never, SqlClient.SqlClient>
    /**
     * The same record as a CTE named `name` (`<name> as (insert ...)`) to put in the `with` of
     * the statement that makes the change it records: one round trip for both, and, as one
     * statement, atomic without a SQL transaction (a data-modifying CTE always runs). With
     * `guard` (an earlier CTE's name) the record is written only when that CTE has a row.
     */
    readonly cte: (
      input: AuditInput,
      options?: { readonly name?: string; readonly guard?: string },
    ) => Effect.Effect<Statement.Fragment, never, SqlClient.SqlClient>
  }
>()("platform/Audit") {}

export const AuditLive = Layer.effect(
  Audit,
  Effect.gen(function* () {
    const ids = yield* Ids
    const record = Effect.fnUntraced(function* (input: AuditInput, guard: string | undefined) {
      const sql = yield* SqlClient.SqlClient
      const request = yield* CurrentRequest
      const id = yield* ids.make("aud")
      const now = yield* Clock.currentTimeMillis
      const insert = sql`insert into audit_events (id, workspace_id, environment_id, actor_type, actor_id, action,
          subject_type, subject_id, result, request_id, details, created_at)
        select ${id}, ${input.workspaceId}, ${input.environmentId ?? null}, ${input.actor.type}, ${input.actor.id ?? null},
          ${input.action}, ${input.subjectType ?? null}, ${input.subjectId ?? null}, ${input.result ?? "success"},
          ${request?.requestId ?? null}, ${JSON.stringify(input.details ?? {})}::jsonb, ${new Date(now)}
          ${guard === undefined ? sql`` : sql`from ${sql.literal(guard)} limit 1`}`
      return { id, insert, sql }
    })
    return Audit.of({
      append: (input) =>
        record(input, undefined).pipe(
          Effect.flatMap(({ id, insert }) => Effect.as(insert, id)),
          Effect.orDie,
        ),
      cte: (input, options = {}) =>
        Effect.map(
          record(input, options.guard),
          ({ insert, sql }) => sql`${sql.literal(options.name ?? "audit")} as (${insert})`,
        ),
    })
  }),
)
