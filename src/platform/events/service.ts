import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Ids } from "../ids.js"
import { countWith } from "../observability/metrics.js"
import { currentTraceparent } from "../observability/trace-context.js"
import { type Actor, CurrentRequest } from "../request-context.js"
import { appendToOutbox, enqueueFanoutsIfSubscribed, type OutboxRow } from "./repo.js"
import { type EventPayload, type EventType, Envelope, strict } from "./schema.js"
import { withCallSpan } from "../observability/span.js"

export interface EmitInput<T extends EventType> {
  readonly type: T
  readonly workspaceId: string
  readonly environmentId?: string | undefined
  readonly actor?: Actor | undefined
  readonly payload: EventPayload<T>
}

/**
 * Appends a domain event to the outbox on the caller's connection: inside the caller's
 * SQL transaction the event exists if and only if the change it reports commits.
 * The envelope is validated against the spec's schemas before it is stored. When an active
 * webhook subscribes to the type, the webhook fan-out job is enqueued in the same
 * transaction: a rolled-back change emits nothing and delivers nothing.
 */
export class Events extends Context.Service<
  Events,
  {
    readonly emit: <T extends EventType>(input: EmitInput<T>) => Effect.Effect<Envelope, never, SqlClient.SqlClient>
    /** `emit` for many events: one outbox INSERT and one fan-out enqueue statement (user import batches). */
    readonly emitMany: <T extends EventType>(
      inputs: ReadonlyArray<EmitInput<T>>,
    ) => Effect.Effect<ReadonlyArray<Envelope>, never, SqlClient.SqlClient>
    /**
     * The validated outbox row of an event, not written: for a statement that writes it together
     * with the change it reports (`outboxCtes`), when that one statement is the whole transaction.
     */
    readonly prepare: <T extends EventType>(input: EmitInput<T>) => Effect.Effect<OutboxRow>
    /** Call once a statement wrote a prepared row (what emit does after writing: the login metrics). */
    readonly written: (row: OutboxRow) => Effect.Effect<void>
  }
>()("platform/Events") {}

const decodeEnvelope = Schema.decodeUnknownSync(Envelope)

const loginOutcome = (e: Envelope): { method: string; outcome: string } | undefined => {
  if (e.type !== "login.succeeded" && e.type !== "login.failed") return undefined
  const payload = e.payload as EventPayload<"login.succeeded"> | EventPayload<"login.failed">
  // A refresh-token rotation is reported as `login.succeeded` (spec, Events) but is a user
  // staying signed in, not signing in: counted as a token grant (tokens_issued_total), never as
  // a login, so the login rate of a dashboard is people signing in.
  if (payload.method === "refresh_token") return undefined
  return { method: payload.method, outcome: "reason" in payload ? payload.reason : "succeeded" }
}

export const EventsLive = Layer.effect(
  Events,
  Effect.gen(function* () {
    const ids = yield* Ids
    /** The validated envelope of an event (a payload that breaks the spec is a programming error: it dies). */
    const envelopeOf = Effect.fnUntraced(function* <T extends EventType>(input: EmitInput<T>) {
      const request = yield* CurrentRequest
      const eventId = yield* ids.make("evt")
      const now = yield* Clock.currentTimeMillis
      const actor =
        input.actor &&
        (input.actor.id === undefined ? { type: input.actor.type } : { type: input.actor.type, id: input.actor.id })
      const trace = {
        ...(request?.requestId ? { requestId: request.requestId } : {}),
        ...(request?.correlationId ? { correlationId: request.correlationId } : {}),
      }
      const envelope = decodeEnvelope(
        {
          eventId,
          type: input.type,
          version: 1,
          occurredAt: new Date(now).toISOString(),
          workspaceId: input.workspaceId,
          ...(input.environmentId ? { environmentId: input.environmentId } : {}),
          ...(actor ? { actor } : {}),
          payload: input.payload,
          trace,
        },
        strict,
      )
      return { eventId, now, envelope }
    })

    // Logins by method and outcome are counted where their events are made: one place, every method.
    const loginOf = new WeakMap<OutboxRow, { method: string; outcome: string }>()
    const prepare = <T extends EventType>(input: EmitInput<T>) =>
      Effect.map(Effect.zip(envelopeOf(input), currentTraceparent), ([{ eventId, now, envelope }, traceparent]) => {
        const row: OutboxRow = {
          traceparent,
          eventId,
          workspaceId: input.workspaceId,
          environmentId: input.environmentId,
          type: input.type,
          envelope: JSON.stringify(envelope),
          occurredAt: new Date(now),
        }
        const login = loginOutcome(envelope)
        if (login) loginOf.set(row, login)
        return { envelope, row }
      })
    /** After the row is written (by emit, or by the caller's own statement): the login count. */
    const written = (row: OutboxRow) =>
      Effect.suspend(() => {
        const login = loginOf.get(row)
        return login ? countWith((m) => m.logins.inc(login)) : Effect.void
      })

    return Events.of({
      prepare: (input) => Effect.map(prepare(input), ({ row }) => row).pipe(Effect.orDie),
      written,
      emit: (input) =>
        Effect.gen(function* () {
          const { envelope, row } = yield* prepare(input)
          yield* appendToOutbox(row)
          yield* written(row)
          return envelope
        }).pipe(Effect.orDie, withCallSpan("Events.emit", { attributes: { type: input.type } })),
      emitMany: (inputs) =>
        Effect.gen(function* () {
          if (inputs.length === 0) return []
          const sql = yield* SqlClient.SqlClient
          const rows: Array<{
            id: string
            workspace_id: string
            environment_id: string | null
            type: string
            envelope: Envelope
            at: Date
          }> = []
          for (const input of inputs) {
            const { eventId, now, envelope } = yield* envelopeOf(input)
            rows.push({
              id: eventId,
              workspace_id: input.workspaceId,
              environment_id: input.environmentId || null,
              type: input.type,
              envelope,
              at: new Date(now),
            })
          }
          yield* sql`insert into event_outbox (id, workspace_id, environment_id, type, envelope, occurred_at)
        select v.id, v.workspace_id, v.environment_id, v.type, v.envelope, v.at
        from jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
          as v(id text, workspace_id text, environment_id text, type text, envelope jsonb, at timestamptz)
        order by v.at, v.id`
          yield* enqueueFanoutsIfSubscribed(
            rows.map((r) => ({
              eventId: r.id,
              workspaceId: r.workspace_id,
              environmentId: r.environment_id,
              type: r.type,
              runAt: r.at,
            })),
          )
          return rows.map((r) => r.envelope)
        }).pipe(Effect.orDie, withCallSpan("Events.emitMany", { attributes: { count: inputs.length } })),
    })
  }),
)
