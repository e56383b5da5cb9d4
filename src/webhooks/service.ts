import { Clock, Context, Effect, Layer } from "effect"
import type { SqlClient } from "effect/sql"
import { Audit } from "../platform/audit.js"
import { canonicalJson } from "../platform/canonical-json.js"
import { Config } from "../platform/config.js"
import { Crypto } from "../platform/crypto.js"
import { EVENT_TYPES } from "../platform/events/schema.js"
import { Ids } from "../platform/ids.js"
import { type Actor, CurrentRequest } from "../platform/request-context.js"
import { deliveryHeaders, signatureOf } from "./delivery/signing.js"
import { WebhookSender } from "./delivery/send.js"
import { InvalidEventTypes, InvalidWebhookUrl, WebhookNotFound } from "./errors.js"
import * as repo from "./repo.js"
import { checkWebhookUrl, redactUrl } from "../platform/outbound/url-policy.js"
import { withCallSpan } from "../platform/observability/span.js"

/** The synthetic type sent only by the test route; never subscribable (spec: Events, Payloads). */
export const TEST_EVENT_TYPE = "webhook.test"

/** Where a webhook's secret is sealed: decrypting it for another row fails. */
export const secretSealContext = (webhookId: string) => ({
  purpose: "webhook-secret",
  table: "webhooks",
  rowId: webhookId,
})

/** Spec, Subscription rule 1: non-empty, the 14 known types only, no duplicates. */
export const checkEventTypes = (
  eventTypes: ReadonlyArray<string>,
): Effect.Effect<ReadonlyArray<string>, InvalidEventTypes> => {
  if (eventTypes.length === 0)
    return Effect.fail(new InvalidEventTypes({ detail: "event_types must contain at least one event type" }))
  const seen = new Set<string>()
  for (const type of eventTypes) {
    if (type === TEST_EVENT_TYPE)
      return Effect.fail(
        new InvalidEventTypes({
          detail: `${TEST_EVENT_TYPE} cannot be subscribed to; use POST /v1/webhooks/{webhookId}/test`,
        }),
      )
    if (!(EVENT_TYPES as ReadonlyArray<string>).includes(type))
      return Effect.fail(new InvalidEventTypes({ detail: `unknown event type: ${type}` }))
    if (seen.has(type)) return Effect.fail(new InvalidEventTypes({ detail: `duplicate event type: ${type}` }))
    seen.add(type)
  }
  return Effect.succeed(eventTypes)
}

export interface TestResult {
  readonly delivered: boolean
  readonly response_status: number | null
  readonly response_time_ms: number | null
  readonly requested_at: string
}

export interface Scope {
  readonly workspaceId: string
  readonly actor: Actor
}

/**
 * Webhook subscriptions (spec: Management API, Webhooks; Events, Subscription). Writes run
 * in the caller's transaction (the Management route wraps them in one) and append audit
 * records; the secret is sealed at rest and returned only by create and rotate.
 */
export class Webhooks extends Context.Service<
  Webhooks,
  {
    readonly create: (
      input: Scope & { environmentId: string; url: string; eventTypes: ReadonlyArray<string> },
    ) => Effect.Effect<
      { webhook: repo.WebhookRow; secret: string },
      InvalidWebhookUrl | InvalidEventTypes,
      SqlClient.SqlClient
    >
    readonly get: (
      scope: Scope,
      id: string,
      options?: { lock?: boolean },
    ) => Effect.Effect<repo.WebhookRow, WebhookNotFound, SqlClient.SqlClient>
    readonly update: (
      scope: Scope,
      current: repo.WebhookRow,
      patch: {
        url?: string | undefined
        eventTypes?: ReadonlyArray<string> | undefined
        status?: repo.WebhookStatus | undefined
      },
    ) => Effect.Effect<repo.WebhookRow, InvalidWebhookUrl | InvalidEventTypes | WebhookNotFound, SqlClient.SqlClient>
    readonly remove: (
      scope: Scope,
      current: repo.WebhookRow,
    ) => Effect.Effect<void, WebhookNotFound, SqlClient.SqlClient>
    readonly rotateSecret: (
      scope: Scope,
      current: repo.WebhookRow,
    ) => Effect.Effect<{ webhook: repo.WebhookRow; secret: string }, WebhookNotFound, SqlClient.SqlClient>
    /** Synchronous, not retried, not recorded in delivery history (spec: Webhooks, test route). */
    readonly test: (
      scope: Scope,
      webhook: repo.WebhookRow,
      eventType: string | undefined,
    ) => Effect.Effect<TestResult, never, SqlClient.SqlClient>
  }
>()("webhooks/Webhooks") {}

export const WebhooksLive = Layer.effect(
  Webhooks,
  Effect.gen(function* () {
    const config = yield* Config
    const crypto = yield* Crypto
    const ids = yield* Ids
    const audit = yield* Audit
    const sender = yield* WebhookSender

    const checkUrl = (url: string) => {
      const verdict = checkWebhookUrl(url, { allowPrivateTargets: config.webhookAllowPrivateTargets })
      return verdict.ok ? Effect.succeed(url) : Effect.fail(new InvalidWebhookUrl({ detail: verdict.detail }))
    }
    const newSecret = Effect.fnUntraced(function* (webhookId: string) {
      // Spec, Subscription rule 3: 32 random bytes, unpadded base64url, no prefix.
      const secret = yield* crypto.randomToken(32)
      return { secret, sealed: yield* crypto.seal(secretSealContext(webhookId), secret) }
    })
    const record = (
      scope: Scope,
      environmentId: string,
      action: string,
      subjectId: string,
      details: Record<string, unknown> = {},
    ) =>
      audit.append({
        workspaceId: scope.workspaceId,
        environmentId,
        actor: scope.actor,
        action,
        subjectType: "webhook",
        subjectId,
        details,
      })

    return Webhooks.of({
      create: (input) =>
        Effect.gen(function* () {
          const url = yield* checkUrl(input.url)
          const eventTypes = yield* checkEventTypes(input.eventTypes)
          const id = yield* ids.make("whk")
          const { secret, sealed } = yield* newSecret(id)
          const now = new Date(yield* Clock.currentTimeMillis)
          const webhook = yield* repo
            .insertWebhook({
              id,
              workspaceId: input.workspaceId,
              environmentId: input.environmentId,
              url,
              eventTypes,
              secretSealed: sealed,
              now,
            })
            .pipe(Effect.orDie)
          yield* record(input, input.environmentId, "webhook.created", id, {
            url: redactUrl(url),
            event_types: eventTypes,
          })
          return { webhook, secret }
        }).pipe(withCallSpan("Webhooks.create")),

      get: (scope, id, options = {}) =>
        repo.webhookById(scope.workspaceId, id, options).pipe(
          Effect.orDie,
          Effect.flatMap((row) =>
            row ? Effect.succeed(row) : Effect.fail(new WebhookNotFound({ detail: "Webhook not found" })),
          ),
        ),

      update: (scope, current, patch) =>
        Effect.gen(function* () {
          const url = patch.url === undefined ? current.url : yield* checkUrl(patch.url)
          const eventTypes =
            patch.eventTypes === undefined ? current.event_types : yield* checkEventTypes(patch.eventTypes)
          const status = patch.status ?? current.status
          const changed = [
            ...(url !== current.url ? ["url"] : []),
            ...(canonicalJson(eventTypes) !== canonicalJson(current.event_types) ? ["event_types"] : []),
            ...(status !== current.status ? ["status"] : []),
          ]
          // Nothing to change: the resource and its version stay as they are.
          if (changed.length === 0) return current
          const now = new Date(yield* Clock.currentTimeMillis)
          const row = yield* repo
            .updateWebhook({ workspaceId: scope.workspaceId, id: current.id, url, eventTypes, status, now })
            .pipe(Effect.orDie)
          if (!row) return yield* new WebhookNotFound({ detail: "Webhook not found" })
          yield* record(scope, row.environment_id, "webhook.updated", row.id, {
            changed_fields: changed,
            ...(changed.includes("url") ? { url: redactUrl(url) } : {}),
            ...(changed.includes("event_types") ? { event_types: eventTypes } : {}),
            ...(changed.includes("status") ? { status } : {}),
          })
          return row
        }).pipe(withCallSpan("Webhooks.update")),

      remove: (scope, current) =>
        Effect.gen(function* () {
          const now = new Date(yield* Clock.currentTimeMillis)
          const deleted = yield* repo.deleteWebhook(scope.workspaceId, current.id, now).pipe(Effect.orDie)
          if (!deleted) return yield* new WebhookNotFound({ detail: "Webhook not found" })
          yield* record(scope, current.environment_id, "webhook.deleted", current.id)
        }).pipe(withCallSpan("Webhooks.remove")),

      rotateSecret: (scope, current) =>
        Effect.gen(function* () {
          const { secret, sealed } = yield* newSecret(current.id)
          const now = new Date(yield* Clock.currentTimeMillis)
          const webhook = yield* repo.replaceSecret(scope.workspaceId, current.id, sealed, now).pipe(Effect.orDie)
          if (!webhook) return yield* new WebhookNotFound({ detail: "Webhook not found" })
          yield* record(scope, current.environment_id, "webhook.secret_rotated", current.id)
          return { webhook, secret }
        }).pipe(withCallSpan("Webhooks.rotateSecret")),

      test: (scope, webhook, eventType) =>
        Effect.gen(function* () {
          const request = yield* CurrentRequest
          const now = yield* Clock.currentTimeMillis
          const eventId = yield* ids.make("evt")
          const secret = (yield* crypto
            .open(secretSealContext(webhook.id), webhook.secret_sealed ?? "")
            .pipe(Effect.orDie)).toString("utf8")
          // The synthetic `webhook.test` envelope: the spec's envelope fields, a payload naming
          // the webhook and (when asked) the event type the caller wants to simulate.
          const envelope = {
            eventId,
            type: TEST_EVENT_TYPE,
            version: 1,
            occurredAt: new Date(now).toISOString(),
            workspaceId: webhook.workspace_id,
            environmentId: webhook.environment_id,
            actor:
              scope.actor.id === undefined
                ? { type: scope.actor.type }
                : { type: scope.actor.type, id: scope.actor.id },
            payload: { webhookId: webhook.id, ...(eventType !== undefined ? { eventType } : {}) },
            trace: request?.requestId ? { requestId: request.requestId } : {},
          }
          const body = canonicalJson(envelope)
          const timestampSeconds = Math.floor(now / 1000)
          const outcome = yield* sender.send({
            url: webhook.url,
            body,
            headers: deliveryHeaders({
              eventId,
              timestampSeconds,
              signature: signatureOf(secret, timestampSeconds, body),
            }),
          })
          const result: TestResult =
            outcome.kind === "response"
              ? {
                  delivered: outcome.status >= 200 && outcome.status < 300,
                  response_status: outcome.status,
                  response_time_ms: outcome.durationMs,
                  requested_at: new Date(now).toISOString(),
                }
              : {
                  delivered: false,
                  response_status: null,
                  response_time_ms: null,
                  requested_at: new Date(now).toISOString(),
                }
          yield* record(scope, webhook.environment_id, "webhook.tested", webhook.id, {
            delivered: result.delivered,
            response_status: result.response_status,
            ...(outcome.kind === "failure" ? { failure: outcome.reason } : {}),
          })
          return result
        }).pipe(withCallSpan("Webhooks.test")),
    })
  }),
)
