import { Clock, Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { canonicalJson } from "../platform/canonical-json.js"
import { Ids } from "../platform/ids.js"
import { type Task, TASKS } from "../platform/jobs.js"
import { WebhookSender } from "./delivery/send.js"
import { deliveryHeaders, signatureOf } from "./delivery/signing.js"
import { webhookSigningKey } from "./delivery/signing-keys.js"
import { targetOf } from "./delivery/target-slots.js"
import * as repo from "./repo.js"
import { decide, type Verdict } from "./schedule.js"
import { OUTBOX_RETENTION_MS } from "../platform/events/retention.js"
import { countWith } from "../platform/observability/metrics.js"
import { withCallSpan } from "../platform/observability/span.js"

// The graphile-worker tasks of webhook delivery (spec: Events, Delivery). Delivery is at
// least once: a job that dies mid-send is run again and sends again; the attempt records
// (unique per webhook, event and attempt number) and the conditional settle make sure each
// attempt is recorded once and schedules at most one next attempt.

/** Concurrent sends of one event's fan-out (an event rarely has more subscriptions). */
const FANOUT_SEND_CONCURRENCY = 16

/**
 * Ids handed to the fan-out statement for the records it creates: events rarely have more
 * subscriptions of one type than this; the rest get theirs in a second statement.
 */
const FANOUT_IDS_IN_ONE_STATEMENT = 4

/**
 * Fan-out of one event: one `pending` attempt-1 record per active subscription of its type
 * in its Environment (one statement reads and inserts; a second one only past
 * FANOUT_IDS_IN_ONE_STATEMENT subscriptions). A re-run creates nothing twice. Returns the
 * records it created, each with what its send needs, and whether they are all the event's
 * pending first attempts (a first run: nothing was recorded before and every insert landed).
 */
const createFirstAttempts = Effect.fnUntraced(function* (eventId: string) {
  const ids = yield* Ids
  const now = new Date(yield* Clock.currentTimeMillis)
  const firstIds: Array<string> = []
  for (let i = 0; i < FANOUT_IDS_IN_ONE_STATEMENT; i++) firstIds.push(yield* ids.make("dlv"))
  const read = yield* repo.createFirstAttemptRecords(eventId, firstIds, now)
  const subscriptions = read?.subscriptions ?? []
  const rows: Array<repo.AttemptRow> = []
  const inserted = new Set<string>()
  const rest: Array<repo.NewDelivery> = []
  for (const [i, s] of subscriptions.entries()) {
    const createdId = read!.created.get(s.webhook_id)
    const id = i < FANOUT_IDS_IN_ONE_STATEMENT ? firstIds[i]! : yield* ids.make("dlv")
    const attempt = {
      id,
      workspace_id: s.workspace_id,
      environment_id: s.environment_id,
      webhook_id: s.webhook_id,
      event_id: s.event_id,
      event_type: s.type,
      attempt: 1,
      status: "pending" as const,
    }
    if (createdId !== undefined) inserted.add(createdId)
    else if (i >= FANOUT_IDS_IN_ONE_STATEMENT) rest.push({ ...attempt, occurred_at: now, scheduled_at: now })
    rows.push({
      ...attempt,
      url: s.url,
      webhook_status: "active",
      webhook_deleted: false,
      secret_sealed: s.secret_sealed,
      // One event: its sends share one envelope (canonical JSON once, deliveryBody).
      envelope: subscriptions[0]!.envelope,
    })
  }
  for (const id of yield* repo.insertDeliveries(rest)) inserted.add(id)
  const complete = inserted.size === rows.length && read?.pendingFirstAttempts !== true
  return { created: rows.filter((r) => inserted.has(r.id)), complete }
})

/** Fan-out of one event (records only; see fanOutAndDeliver). Returns the ids it created. */
export const fanOut = (eventId: string) =>
  createFirstAttempts(eventId).pipe(
    Effect.map(({ created }) => created.map((r) => r.id)),
    Effect.orDie,
    withCallSpan("webhooks.fanOut", { attributes: { eventId } }),
  )

/**
 * The fan-out job: creates the event's first attempts and sends them in the same job, so an
 * event costs one job, not one per subscription (retries and deferred sends get a job of
 * their own), and its final outcomes are settled in one statement: three statements for an
 * event on its first run. A worker that dies mid-way leaves its job to be run again: the
 * re-run creates nothing twice and takes up every first attempt still pending, whatever its
 * subscription's state now (one since disabled or deleted ends `exhausted`, as every due attempt
 * of such a webhook does), so none stays `pending` for ever.
 */
export const fanOutAndDeliver = (eventId: string) =>
  Effect.gen(function* () {
    const { created, complete } = yield* createFirstAttempts(eventId)
    const pending = complete ? created : yield* repo.pendingFirstAttempts(eventId)
    const sent = yield* Effect.forEach(pending, sendRow, { concurrency: FANOUT_SEND_CONCURRENCY })
    return yield* settle(sent)
  }).pipe(Effect.orDie, withCallSpan("webhooks.fanOutAndDeliver", { attributes: { eventId } }))

export interface AttemptReport {
  readonly deliveryId: string
  readonly attempt: number
  readonly verdict:
    | Verdict
    | { readonly status: "skipped" }
    | { readonly status: "deferred"; readonly runAt: Date }
    | { readonly status: "exhausted"; readonly why: "webhook_disabled" | "webhook_deleted" }
  /** The record of the next attempt, when one was scheduled. */
  readonly nextDeliveryId?: string | undefined
}

/**
 * graphile-worker priority of a postponed attempt's job (lower numbers run first; everything
 * else is 0): due fan-outs and retries always run before the postponed attempts of a busy
 * receiver, so however large that receiver's backlog, it never delays the others.
 */
export const POSTPONED_PRIORITY = 1

/** What one attempt came to before its record is settled. */
type Sent =
  | { readonly kind: "done"; readonly report: AttemptReport }
  | { readonly kind: "final"; readonly report: AttemptReport; readonly settlement: repo.Settlement }
  | {
      readonly kind: "retry"
      readonly row: repo.AttemptRow
      readonly settlement: repo.Settlement
      readonly verdict: Extract<Verdict, { status: "failed" }>
    }

/**
 * One send of one delivery. A delivery job runs it for one record (retries, deferred sends).
 * A settled record (duplicate job) is left alone.
 */
export const deliverAttempt = (deliveryId: string) =>
  Effect.gen(function* () {
    const row = yield* repo.attemptById(deliveryId)
    if (!row) return { deliveryId, attempt: 0, verdict: { status: "skipped" } } satisfies AttemptReport as AttemptReport
    return (yield* settle([yield* sendRow(row)]))[0]!
  }).pipe(Effect.orDie, withCallSpan("webhooks.deliverAttempt", { attributes: { deliveryId } }))

/**
 * Sends one pending attempt, outside any transaction. A disabled or deleted webhook gets no
 * further sends (the record ends `exhausted`); a receiver whose slots are full gets the
 * attempt later (bounded concurrency per receiver; not a send, so not counted).
 */
const sendRow = Effect.fnUntraced(function* (row: repo.AttemptRow) {
  const sender = yield* WebhookSender
  const deliveryId = row.id
  if (row.status !== "pending") {
    return {
      kind: "done",
      report: { deliveryId, attempt: row.attempt, verdict: { status: "skipped" } },
    } satisfies Sent as Sent
  }
  if (row.webhook_deleted || row.webhook_status !== "active" || row.secret_sealed === null) {
    const why = row.webhook_deleted ? ("webhook_deleted" as const) : ("webhook_disabled" as const)
    yield* Effect.logInfo("webhook attempt not sent", { delivery_id: row.id, attempt: row.attempt, reason: why })
    yield* countWith((m) => m.webhookDeliveries.inc({ outcome: "not_sent" }))
    return {
      kind: "final",
      report: { deliveryId, attempt: row.attempt, verdict: { status: "exhausted", why } },
      settlement: {
        id: row.id,
        status: "exhausted",
        responseStatusCode: null,
        durationMs: null,
        failureReason: why,
        sentAt: null,
        exchange: undefined,
      },
    } satisfies Sent as Sent
  }
  const target = targetOf(row.url)
  return yield* sender.slots.withSlot(target, sendNow(row, target), postpone(row, target))
})

/**
 * A receiver whose slots are full gets the attempt later, at once (no job waits for a slow
 * receiver): the record moves to the postponed time, with a job of its own at a low priority.
 */
const postpone = Effect.fnUntraced(function* (row: repo.AttemptRow, target: string) {
  const sender = yield* WebhookSender
  const runAt = new Date((yield* Clock.currentTimeMillis) + (yield* sender.backoff.postpone(target)))
  yield* repo.deferAttempt(row.id, runAt, POSTPONED_PRIORITY)
  return {
    kind: "done",
    report: { deliveryId: row.id, attempt: row.attempt, verdict: { status: "deferred", runAt } },
  } satisfies Sent as Sent
})

/**
 * Spec, Delivery rule 2: the body is the envelope with keys sorted recursively. Once per
 * envelope object: the sends of one fan-out share the event's envelope.
 */
const bodies = new WeakMap<object, string>()
const deliveryBody = (envelope: unknown): string => {
  if (envelope === null || typeof envelope !== "object") return canonicalJson(envelope)
  const held = bodies.get(envelope)
  if (held !== undefined) return held
  const body = canonicalJson(envelope)
  bodies.set(envelope, body)
  return body
}

/** The send itself, holding one of the receiver's slots (released by withSlot whatever happens here). */
const sendNow = Effect.fnUntraced(function* (row: repo.AttemptRow, target: string) {
  const sender = yield* WebhookSender
  const secret = yield* webhookSigningKey(row.webhook_id, row.secret_sealed!)
  const body = deliveryBody(row.envelope)
  const now = yield* Clock.currentTimeMillis
  const timestampSeconds = Math.floor(now / 1000)
  const signature = signatureOf(secret, timestampSeconds, body)
  const outcome = yield* sender.send({
    url: row.url,
    body,
    headers: deliveryHeaders({ eventId: row.event_id, timestampSeconds, signature }),
  })
  if (outcome.kind === "response") sender.backoff.answered(target)
  const verdict = yield* decide(
    row.attempt,
    outcome.kind === "response" ? { kind: "response", status: outcome.status } : { kind: "no_response" },
  )
  yield* countWith((m) => m.webhookDeliveries.inc({ outcome: verdict.status }))
  yield* Effect.logInfo("webhook attempt", {
    delivery_id: row.id,
    webhook_id: row.webhook_id,
    event_id: row.event_id,
    attempt: row.attempt,
    status: verdict.status,
    response_status: outcome.kind === "response" ? outcome.status : null,
    failure: outcome.kind === "failure" ? outcome.reason : null,
    duration_ms: outcome.durationMs,
  })
  const settlement: repo.Settlement = {
    id: row.id,
    status: verdict.status,
    sentAt: new Date(now),
    responseStatusCode: outcome.kind === "response" ? outcome.status : null,
    durationMs: outcome.durationMs,
    failureReason: outcome.kind === "failure" ? outcome.reason : verdict.status === "exhausted" ? verdict.why : null,
    // The request is rebuilt from the envelope, this URL and signature, and the send time
    // (occurred_at) when it is read (delivery/attempt-view.ts); the response as kept by the sender.
    exchange: {
      requestUrl: row.url,
      requestSignature: signature,
      response:
        outcome.kind === "response"
          ? { headers: outcome.headers, body: outcome.body, bodyTruncated: outcome.bodyTruncated }
          : undefined,
      transportError: outcome.kind === "failure" ? outcome.error : undefined,
    },
  }
  return verdict.status === "failed"
    ? ({ kind: "retry", row, settlement, verdict } satisfies Sent as Sent)
    : ({
        kind: "final",
        report: { deliveryId: row.id, attempt: row.attempt, verdict },
        settlement,
      } satisfies Sent as Sent)
})

/**
 * Records what the sends came to. Final outcomes (delivered, exhausted) are one conditional
 * UPDATE for all of them; a retry settles its record and creates the next attempt and its job
 * in one transaction. Conditional on `pending`, so of two runs of the same attempt (a worker
 * presumed dead that was not) exactly one records the outcome and schedules the next attempt.
 */
const settle = Effect.fnUntraced(function* (sent: ReadonlyArray<Sent>) {
  const sql = yield* SqlClient.SqlClient
  const ids = yield* Ids
  yield* repo.settleDeliveries(sent.flatMap((s) => (s.kind === "final" ? [s.settlement] : [])))
  return yield* Effect.forEach(sent, (s) => {
    if (s.kind !== "retry") return Effect.succeed(s.report)
    const { row, verdict } = s
    return sql
      .withTransaction(
        Effect.gen(function* () {
          if (!(yield* repo.settleDelivery(s.settlement))) return undefined
          const inserted = yield* repo.insertDeliveries([
            {
              id: yield* ids.make("dlv"),
              workspace_id: row.workspace_id,
              environment_id: row.environment_id,
              webhook_id: row.webhook_id,
              event_id: row.event_id,
              event_type: row.event_type,
              attempt: verdict.nextAttempt,
              status: "pending",
              occurred_at: verdict.runAt,
              scheduled_at: verdict.runAt,
            },
          ])
          yield* repo.enqueueAttempts(inserted, verdict.runAt)
          return inserted[0]
        }),
      )
      .pipe(
        Effect.map(
          (nextDeliveryId): AttemptReport => ({ deliveryId: row.id, attempt: row.attempt, verdict, nextDeliveryId }),
        ),
      )
  })
})

/** Delivery history is kept for 90 days (spec: Delivery rule 8, Limits). */
export const DELIVERY_RETENTION_MS = 90 * 24 * 3600_000

/**
 * Response headers and bodies of attempts are kept 30 days: they may carry personal data, and
 * the request's body (the outbox envelope) is kept as long (decisions, "Attempt request and response").
 */
export const EXCHANGE_RETENTION_MS = OUTBOX_RETENTION_MS

export const pruneDeliveries = Effect.gen(function* () {
  const now = yield* Clock.currentTimeMillis
  return yield* repo.deleteDeliveriesBefore(new Date(now - DELIVERY_RETENTION_MS))
}).pipe(Effect.orDie, withCallSpan("webhooks.pruneDeliveries"))

export const pruneDeliveryExchanges = Effect.gen(function* () {
  const now = yield* Clock.currentTimeMillis
  return yield* repo.clearExchangesBefore(new Date(now - EXCHANGE_RETENTION_MS))
}).pipe(Effect.orDie, withCallSpan("webhooks.pruneDeliveryExchanges"))

/** A payload that is not ours is logged and dropped (retrying it cannot help). */
const withPayload =
  <S extends Schema.Top & { readonly DecodingServices: never }, R>(
    task: Task<string, S>,
    run: (payload: S["Type"]) => Effect.Effect<unknown, never, R>,
  ) =>
  (payload: unknown) =>
    Schema.decodeUnknownEffect(task.payload)(payload).pipe(
      Effect.matchEffect({
        onFailure: () => Effect.logError("dropping a job with a malformed payload", { task: task.name }),
        onSuccess: (p) => Effect.asVoid(run(p)),
      }),
    )

/** The webhook tasks of the worker's registry (src/jobs/tasks.ts). */
export const fanOutTask = withPayload(TASKS.webhookFanout, (p) => fanOutAndDeliver(p.eventId))
export const deliverTask = withPayload(TASKS.webhookDeliver, (p) => deliverAttempt(p.deliveryId))
