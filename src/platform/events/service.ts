import { Clock, Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { enqueueFanoutIfSubscribed } from "../../webhooks/repo.js"
import { Ids } from "../ids.js"
import { countWith } from "../observability/metrics.js"
import { type Actor, CurrentRequest } from "../request-context.js"
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
  return Events.of({
    emit: (input) => Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
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
      yield* sql`insert into event_outbox (id, workspace_id, environment_id, type, envelope, occurred_at)
        values (${eventId}, ${input.workspaceId}, ${input.environmentId ?? null}, ${input.type}, ${JSON.stringify(envelope)}::jsonb, ${new Date(now)})`
      // Logins by method and outcome are counted where their events are made: one place, every method.
      const login = loginOutcome(envelope)
      if (login) yield* countWith((m) => m.logins.inc(login))
      yield* enqueueFanoutIfSubscribed({
        eventId, workspaceId: input.workspaceId, environmentId: input.environmentId || undefined, type: input.type, runAt: new Date(now),
      })
      return envelope
    }).pipe(Effect.orDie, Effect.withSpan("Events.emit", { attributes: { type: input.type } })),
  })
}))
