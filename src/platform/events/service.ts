import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Ids } from "../ids.js"
import { countWith } from "../observability/metrics.js"
import { type Actor, CurrentRequest } from "../request-context.js"
import { appendToOutbox, type OutboxRow } from "./repo.js"
import { type EventPayload, type EventType, Envelope, strict } from "./schema.js"

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
export class Events extends Context.Service<Events, {
  readonly emit: <T extends EventType>(input: EmitInput<T>) => Effect.Effect<Envelope, never, SqlClient.SqlClient>
  /**
   * The validated outbox row of an event, not written: for a statement that writes it together
   * with the change it reports (`outboxCtes`), when that one statement is the whole transaction.
   */
  readonly prepare: <T extends EventType>(input: EmitInput<T>) => Effect.Effect<OutboxRow>
  /** Call once a statement wrote a prepared row (what emit does after writing: the login metrics). */
  readonly written: (row: OutboxRow) => Effect.Effect<void>
}>()("platform/Events") {}

const decodeEnvelope = Schema.decodeUnknownSync(Envelope)

const loginOutcome = (e: Envelope): { method: string; outcome: string } | undefined => {
  if (e.type === "login.succeeded") return { method: (e.payload as EventPayload<"login.succeeded">).method, outcome: "succeeded" }
  if (e.type !== "login.failed") return undefined
  const failed = e.payload as EventPayload<"login.failed">
  return { method: failed.method, outcome: failed.reason }
}

export const EventsLive = Layer.effect(Events, Effect.gen(function* () {
  const ids = yield* Ids
  const loginOf = new WeakMap<OutboxRow, { method: string; outcome: string }>()
  const prepare = <T extends EventType>(input: EmitInput<T>) => Effect.gen(function* () {
    const request = yield* CurrentRequest
    const eventId = yield* ids.make("evt")
    const now = yield* Clock.currentTimeMillis
    const actor = input.actor && (input.actor.id === undefined ? { type: input.actor.type } : { type: input.actor.type, id: input.actor.id })
    const trace = {
      ...(request?.requestId ? { requestId: request.requestId } : {}),
      ...(request?.correlationId ? { correlationId: request.correlationId } : {}),
    }
    // A payload that breaks the spec is a programming error, not a user error: it dies.
    const envelope = decodeEnvelope({
      eventId, type: input.type, version: 1, occurredAt: new Date(now).toISOString(),
      workspaceId: input.workspaceId,
      ...(input.environmentId ? { environmentId: input.environmentId } : {}),
      ...(actor ? { actor } : {}),
      payload: input.payload, trace,
    }, strict)
    const row: OutboxRow = {
      eventId, workspaceId: input.workspaceId, environmentId: input.environmentId, type: input.type,
      envelope: JSON.stringify(envelope), occurredAt: new Date(now),
    }
    // Logins by method and outcome are counted where their events are made: one place, every method.
    const login = loginOutcome(envelope)
    if (login) loginOf.set(row, login)
    return { envelope, row }
  })
  /** After the row is written (by emit, or by the caller's own statement): the login count. */
  const written = (row: OutboxRow) => Effect.suspend(() => {
    const login = loginOf.get(row)
    return login ? countWith((m) => m.logins.inc(login)) : Effect.void
  })
  return Events.of({
    prepare: (input) => Effect.map(prepare(input), ({ row }) => row).pipe(Effect.orDie),
    written,
    emit: (input) => Effect.gen(function* () {
      const { envelope, row } = yield* prepare(input)
      yield* appendToOutbox(row)
      yield* written(row)
      return envelope
    }).pipe(Effect.orDie, Effect.withSpan("Events.emit", { attributes: { type: input.type } })),
  })
}))
