import { Effect } from "effect"
import { InvalidRequest } from "../http/errors.js"
import { json } from "../http/route.js"
import { environmentForCaller } from "../management/auth/access.js"
import { CurrentCaller } from "../management/auth/caller.js"
import { requireWorkspaceMatch } from "../management/auth/service.js"
import { endpoint } from "../management/conventions/endpoint.js"
import { matchVersion, withEtag } from "../management/conventions/etag.js"
import { pageOf, parsePage } from "../management/conventions/pagination.js"
import { EVENT_TYPES } from "../platform/events/schema.js"
import { WebhookDeliveryNotFound, WebhookNotFound } from "./errors.js"
import { attemptRequest, attemptResponse, attemptTransportError } from "./delivery/attempt-view.js"
import * as repo from "./repo.js"
import {
  CreatedWebhook,
  CreateWebhookBody,
  DeletedWebhook,
  DeliveryDetail,
  DeliveryList,
  DeliveryParams,
  ListDeliveriesQuery,
  ListWebhooksQuery,
  RotatedSecret,
  TestResult,
  TestWebhookBody,
  UpdateWebhookBody,
  Webhook,
  WebhookList,
  WebhookParams,
} from "./schema.js"
import { TEST_EVENT_TYPE, Webhooks } from "./service.js"
import { consumeWebhookTestBudget } from "../management/conventions/budget.js"

// Management API, Webhooks (spec table). Decode, call the service, encode: no SQL, no rules.

const present = (row: repo.WebhookRow) => ({
  id: row.id,
  environment_id: row.environment_id,
  url: row.url,
  event_types: [...row.event_types],
  status: row.status,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString(),
})

const presentDelivery = (row: repo.DeliveryRow) => ({
  id: row.id,
  webhook_id: row.webhook_id,
  event_id: row.event_id,
  event_type: row.event_type,
  attempt: row.attempt,
  status: row.status,
  response_status_code: row.response_status_code,
  duration_ms: row.duration_ms,
  occurred_at: row.occurred_at.toISOString(),
})

const scope = CurrentCaller.useSync((caller) => ({ workspaceId: caller.workspaceId, actor: caller.actor }))

/**
 * The webhook of the path, if the caller may reach it: same Workspace, and for an
 * Environment-pinned key the same Environment. Anything else is 404 as if it did not exist.
 */
const reachableWebhook = (webhookId: string, options: { lock?: boolean } = {}) =>
  Effect.gen(function* () {
    const webhooks = yield* Webhooks
    const row = yield* webhooks.get(yield* scope, webhookId, options)
    yield* environmentForCaller(row.environment_id).pipe(
      Effect.catchTag("NotFound", () => Effect.fail(new WebhookNotFound({ detail: "Webhook not found" }))),
    )
    return row
  })

/** RFC 3339 date-time with an offset, as the `occurred_*` filters take. */
const instant = (name: string, value: string | undefined) => {
  if (value === undefined) return Effect.succeed(undefined)
  const ok = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/i.test(value)
  const date = new Date(value)
  return ok && !Number.isNaN(date.getTime())
    ? Effect.succeed(date)
    : Effect.fail(
        new InvalidRequest({
          detail: `${name} must be an ISO 8601 date-time with a time zone, e.g. 2025-01-31T12:00:00Z`,
        }),
      )
}

const deliveryCursor = (after: string | undefined) => {
  if (after === undefined) return Effect.succeed(undefined)
  const m = /^(\d{1,15})\|(dlv_[a-z2-7]{32})$/.exec(after)
  return m
    ? Effect.succeed({ occurredAt: new Date(Number(m[1])), id: m[2]! })
    : Effect.fail(new InvalidRequest({ detail: "cursor is not valid" }))
}

const tags = ["Webhooks"]
const ifMatch = { resource: (params: typeof WebhookParams.Type) => params.webhookId }

export const webhookRoutes = [
  endpoint(
    {
      method: "GET",
      path: "/v1/webhooks",
      summary: "List webhooks of an Environment",
      tags,
      scope: "webhooks:read",
      query: ListWebhooksQuery,
      response: WebhookList,
    },
    ({ query }) =>
      Effect.gen(function* () {
        yield* requireWorkspaceMatch(query.workspace_id)
        const page = yield* parsePage(query)
        const env = yield* environmentForCaller(query.environment_id)
        const rows = yield* repo.listWebhooks(env.id, page).pipe(Effect.orDie)
        return json(pageOf(rows, page, (r) => r.id, present))
      }),
  ),

  endpoint(
    {
      method: "POST",
      path: "/v1/webhooks",
      summary: "Create a webhook (the signing secret is returned once)",
      tags,
      scope: "webhooks:write",
      body: CreateWebhookBody,
      response: CreatedWebhook,
      status: 201,
      idempotent: true,
    },
    ({ body }) =>
      Effect.gen(function* () {
        yield* requireWorkspaceMatch(body.workspace_id)
        const env = yield* environmentForCaller(body.environment_id)
        const webhooks = yield* Webhooks
        const { webhook, secret } = yield* webhooks.create({
          ...(yield* scope),
          environmentId: env.id,
          url: body.url,
          eventTypes: body.event_types,
        })
        return withEtag(
          json({ ...present(webhook), secret }, 201, { location: `/v1/webhooks/${webhook.id}` }),
          webhook.id,
          webhook.version,
        )
      }),
  ),

  endpoint(
    {
      method: "GET",
      path: "/v1/webhooks/:webhookId",
      summary: "Get a webhook",
      tags,
      scope: "webhooks:read",
      params: WebhookParams,
      response: Webhook,
    },
    ({ params }) =>
      Effect.map(reachableWebhook(params.webhookId), (row) => withEtag(json(present(row)), row.id, row.version)),
  ),

  endpoint(
    {
      method: "PATCH",
      path: "/v1/webhooks/:webhookId",
      summary: "Update a webhook's url, event_types or status (disabled pauses delivery)",
      tags,
      scope: "webhooks:write",
      params: WebhookParams,
      body: UpdateWebhookBody,
      response: Webhook,
      idempotent: true,
      ifMatch,
    },
    ({ params, body, expectedVersion }) =>
      Effect.gen(function* () {
        const current = yield* reachableWebhook(params.webhookId, { lock: true })
        yield* matchVersion(expectedVersion, current.version)
        const webhooks = yield* Webhooks
        const row = yield* webhooks.update(yield* scope, current, {
          url: body.url,
          eventTypes: body.event_types,
          status: body.status,
        })
        return withEtag(json(present(row)), row.id, row.version)
      }),
  ),

  endpoint(
    {
      method: "DELETE",
      path: "/v1/webhooks/:webhookId",
      summary: "Delete a webhook (no further deliveries)",
      tags,
      scope: "webhooks:write",
      params: WebhookParams,
      response: DeletedWebhook,
      idempotent: true,
      ifMatch,
    },
    ({ params, expectedVersion }) =>
      Effect.gen(function* () {
        const current = yield* reachableWebhook(params.webhookId, { lock: true })
        yield* matchVersion(expectedVersion, current.version)
        const webhooks = yield* Webhooks
        yield* webhooks.remove(yield* scope, current)
        return json({ id: current.id, deleted: true })
      }),
  ),

  endpoint(
    {
      method: "POST",
      path: "/v1/webhooks/:webhookId/rotate-secret",
      summary: "Rotate a webhook's signing secret (returned once)",
      tags,
      scope: "webhooks:rotate_secret",
      params: WebhookParams,
      response: RotatedSecret,
      idempotent: true,
      ifMatch,
    },
    ({ params, expectedVersion }) =>
      Effect.gen(function* () {
        const current = yield* reachableWebhook(params.webhookId, { lock: true })
        yield* matchVersion(expectedVersion, current.version)
        const webhooks = yield* Webhooks
        const { webhook, secret } = yield* webhooks.rotateSecret(yield* scope, current)
        return withEtag(
          json({ id: webhook.id, secret, rotated_at: webhook.secret_rotated_at!.toISOString() }),
          webhook.id,
          webhook.version,
        )
      }),
  ),

  // Synchronous and not recorded: no Idempotency-Key (a replay would not test anything) and
  // no transaction held open while the receiver answers.
  endpoint(
    {
      method: "POST",
      path: "/v1/webhooks/:webhookId/test",
      summary: "Send a signed webhook.test event now and report the receiver's answer",
      tags,
      scope: "webhooks:test",
      params: WebhookParams,
      body: TestWebhookBody,
      emptyBody: {},
      response: TestResult,
    },
    ({ params, body }) =>
      Effect.gen(function* () {
        if (
          body.event_type !== undefined &&
          body.event_type !== TEST_EVENT_TYPE &&
          !(EVENT_TYPES as ReadonlyArray<string>).includes(body.event_type)
        ) {
          return yield* new InvalidRequest({ detail: `unknown event type: ${body.event_type}` })
        }
        const webhook = yield* reachableWebhook(params.webhookId)
        // Before anything is sent: a refused test makes no outbound request.
        yield* consumeWebhookTestBudget(webhook.environment_id, webhook.id)
        const webhooks = yield* Webhooks
        return json(yield* webhooks.test(yield* scope, webhook, body.event_type))
      }),
  ),

  endpoint(
    {
      method: "GET",
      path: "/v1/webhooks/:webhookId/deliveries",
      summary: "List a webhook's delivery attempts, newest first (kept 90 days)",
      tags,
      scope: "webhooks:read",
      params: WebhookParams,
      query: ListDeliveriesQuery,
      response: DeliveryList,
    },
    ({ params, query }) =>
      Effect.gen(function* () {
        const page = yield* parsePage(query)
        const after = yield* deliveryCursor(page.after)
        const occurredAfter = yield* instant("occurred_after", query.occurred_after)
        const occurredBefore = yield* instant("occurred_before", query.occurred_before)
        const webhook = yield* reachableWebhook(params.webhookId)
        const rows = yield* repo
          .listDeliveries(
            webhook.environment_id,
            webhook.id,
            {
              status: query.status,
              occurredAfter,
              occurredBefore,
            },
            { limit: page.limit, after },
          )
          .pipe(Effect.orDie)
        return json(pageOf(rows, page, (r) => `${r.occurred_at.getTime()}|${r.id}`, presentDelivery))
      }),
  ),

  // An extension (decisions, "Attempt request and response"): one attempt with the request it
  // sent and the response it got. Bodies may carry personal data and the receiver's answers, so
  // it needs webhooks:write, the scope that can point the webhook anywhere and so read every
  // request anyway: Members (read scopes only) and read-only keys see the list, not the bodies.
  endpoint(
    {
      method: "GET",
      path: "/v1/webhooks/:webhookId/deliveries/:deliveryId",
      summary: "Get one delivery attempt with the request sent and the response received (bodies kept 30 days)",
      tags,
      scope: "webhooks:write",
      params: DeliveryParams,
      response: DeliveryDetail,
    },
    ({ params }) =>
      Effect.gen(function* () {
        const webhook = yield* reachableWebhook(params.webhookId)
        const row = yield* repo.deliveryById(webhook.environment_id, webhook.id, params.deliveryId).pipe(Effect.orDie)
        if (!row) return yield* new WebhookDeliveryNotFound({ detail: "Delivery not found" })
        return json({
          ...presentDelivery(row),
          request: attemptRequest(row),
          response: attemptResponse(row),
          transport_error: attemptTransportError(row),
        })
      }),
  ),
]
