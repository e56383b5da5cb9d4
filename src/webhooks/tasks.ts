import { Clock, Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { canonicalJson } from "../platform/canonical-json.js"
import { Crypto } from "../platform/crypto.js"
import { Ids } from "../platform/ids.js"
import { WebhookSender } from "./delivery/send.js"
import { deliveryHeaders, signatureOf } from "./delivery/signing.js"
import * as repo from "./repo.js"
import { decide, type Verdict } from "./schedule.js"
import { secretSealContext } from "./service.js"
import { countWith } from "../platform/observability/metrics.js"

// The graphile-worker tasks of webhook delivery (spec: Events, Delivery). Delivery is at
// least once: a job that dies mid-send is run again and sends again; the attempt records
// (unique per webhook, event and attempt number) and the conditional settle make sure each
// attempt is recorded once and schedules at most one next attempt.

export const FANOUT_TASK = "webhooks.fanout"
export const DELIVER_TASK = "webhooks.deliver"

/** graphile-worker's own retries cover crashes and database failures, not HTTP failures. */
const JOB_MAX_ATTEMPTS = 25

/** Job key of an attempt's job (see repo.enqueueAttempts): `webhooks.deliver:<dlv id>`. */
export const deliverJobKey = (deliveryId: string) => `${DELIVER_TASK}:${deliveryId}`

/**
 * Fan-out of one event: one `pending` attempt-1 record and one delivery job per active
 * subscription of its type in its Environment, in one transaction. A re-run creates
 * nothing twice.
 */
export const fanOut = (eventId: string) => Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const ids = yield* Ids
  const now = new Date(yield* Clock.currentTimeMillis)
  return yield* sql.withTransaction(Effect.gen(function* () {
    const event = yield* repo.outboxEvent(eventId)
    if (!event) return [] as ReadonlyArray<string>
    const subscriptions = yield* repo.subscriptionsOf(event)
    const rows: Array<repo.NewDelivery> = []
    for (const s of subscriptions) {
      rows.push({
        id: yield* ids.make("dlv"), workspace_id: event.workspace_id, environment_id: s.environment_id, webhook_id: s.id,
        event_id: event.id, event_type: event.type, attempt: 1, status: "pending", occurred_at: now, scheduled_at: now,
      })
    }
    const inserted = yield* repo.insertDeliveries(rows)
    yield* repo.enqueueAttempts(inserted, now, JOB_MAX_ATTEMPTS)
    return inserted
  }))
}).pipe(Effect.orDie, Effect.withSpan("webhooks.fanOut", { attributes: { eventId } }))

export interface AttemptReport {
  readonly deliveryId: string
  readonly attempt: number
  readonly verdict: Verdict | { readonly status: "skipped" } | { readonly status: "exhausted"; readonly why: "webhook_disabled" | "webhook_deleted" }
  /** The record of the next attempt, when one was scheduled. */
  readonly nextDeliveryId?: string | undefined
}

/**
 * One send of one delivery. A settled record (duplicate job) is left alone; a disabled or
 * deleted webhook gets no further sends (the record ends `exhausted`). The send happens
 * outside any transaction; its outcome is settled by a conditional UPDATE, in one
 * transaction with the next attempt's record and job when a retry is due.
 */
export const deliverAttempt = (deliveryId: string) => Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const crypto = yield* Crypto
  const ids = yield* Ids
  const sender = yield* WebhookSender
  const row = yield* repo.attemptById(deliveryId)
  if (!row || row.status !== "pending") {
    return { deliveryId, attempt: row?.attempt ?? 0, verdict: { status: "skipped" } } satisfies AttemptReport as AttemptReport
  }
  if (row.webhook_deleted || row.webhook_status !== "active" || row.secret_sealed === null) {
    const why = row.webhook_deleted ? "webhook_deleted" as const : "webhook_disabled" as const
    yield* repo.settleDelivery({ id: row.id, status: "exhausted", responseStatusCode: null, durationMs: null, failureReason: why, sentAt: null })
    yield* Effect.logInfo("webhook attempt not sent", { delivery_id: row.id, attempt: row.attempt, reason: why })
    yield* countWith((m) => m.webhookDeliveries.inc({ outcome: "not_sent" }))
    return { deliveryId, attempt: row.attempt, verdict: { status: "exhausted", why } } satisfies AttemptReport as AttemptReport
  }
  const secret = (yield* crypto.open(secretSealContext(row.webhook_id), row.secret_sealed)).toString("utf8")
  // Spec, Delivery rule 2: the body is the envelope with keys sorted recursively.
  const body = canonicalJson(row.envelope)
  const now = yield* Clock.currentTimeMillis
  const timestampSeconds = Math.floor(now / 1000)
  const outcome = yield* sender.send({
    url: row.url, body,
    headers: deliveryHeaders({ eventId: row.event_id, timestampSeconds, signature: signatureOf(secret, timestampSeconds, body) }),
  })
  const verdict = yield* decide(row.attempt, outcome.kind === "response" ? { kind: "response", status: outcome.status } : { kind: "no_response" })
  const settle = repo.settleDelivery({
    id: row.id, status: verdict.status, sentAt: new Date(now),
    responseStatusCode: outcome.kind === "response" ? outcome.status : null,
    durationMs: outcome.durationMs,
    failureReason: outcome.kind === "failure" ? outcome.reason : verdict.status === "exhausted" ? verdict.why : null,
  })
  // A final outcome is one conditional UPDATE; a retry also creates the next attempt and its
  // job, all in one transaction.
  const nextDeliveryId = verdict.status !== "failed" ? yield* Effect.as(settle, undefined) : yield* sql.withTransaction(Effect.gen(function* () {
    if (!(yield* settle)) return undefined
    const next = yield* ids.make("dlv")
    const inserted = yield* repo.insertDeliveries([{
      id: next, workspace_id: row.workspace_id, environment_id: row.environment_id, webhook_id: row.webhook_id,
      event_id: row.event_id, event_type: row.event_type, attempt: verdict.nextAttempt, status: "pending",
      occurred_at: verdict.runAt, scheduled_at: verdict.runAt,
    }])
    yield* repo.enqueueAttempts(inserted, verdict.runAt, JOB_MAX_ATTEMPTS)
    return inserted[0]
  }))
  yield* countWith((m) => m.webhookDeliveries.inc({ outcome: verdict.status }))
  yield* Effect.logInfo("webhook attempt", {
    delivery_id: row.id, webhook_id: row.webhook_id, event_id: row.event_id, attempt: row.attempt, status: verdict.status,
    response_status: outcome.kind === "response" ? outcome.status : null,
    failure: outcome.kind === "failure" ? outcome.reason : null, duration_ms: outcome.durationMs,
  })
  return { deliveryId, attempt: row.attempt, verdict, nextDeliveryId } satisfies AttemptReport as AttemptReport
}).pipe(Effect.orDie, Effect.withSpan("webhooks.deliverAttempt", { attributes: { deliveryId } }))

/** Delivery history is kept for 90 days (spec: Delivery rule 8, Limits). */
export const DELIVERY_RETENTION_MS = 90 * 24 * 3600_000

export const pruneDeliveries = Effect.gen(function* () {
  const now = yield* Clock.currentTimeMillis
  return yield* repo.deleteDeliveriesBefore(new Date(now - DELIVERY_RETENTION_MS))
}).pipe(Effect.orDie, Effect.withSpan("webhooks.pruneDeliveries"))

const FanoutPayload = Schema.Struct({ eventId: Schema.String })
const DeliverPayload = Schema.Struct({ deliveryId: Schema.String })

/** A payload that is not ours is logged and dropped (retrying it cannot help). */
const withPayload = <S extends Schema.Top & { readonly DecodingServices: never }, R>(
  task: string, schema: S, run: (payload: S["Type"]) => Effect.Effect<unknown, never, R>,
) => (payload: unknown) => Schema.decodeUnknownEffect(schema)(payload).pipe(
  Effect.matchEffect({
    onFailure: () => Effect.logError("dropping a job with a malformed payload", { task }),
    onSuccess: (p) => Effect.asVoid(run(p)),
  }))

export const webhookTasks = {
  [FANOUT_TASK]: withPayload(FANOUT_TASK, FanoutPayload, (p) => fanOut(p.eventId)),
  [DELIVER_TASK]: withPayload(DELIVER_TASK, DeliverPayload, (p) => deliverAttempt(p.deliveryId)),
}
