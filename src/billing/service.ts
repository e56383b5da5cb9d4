import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Forbidden, InvalidRequest } from "../http/errors.js"
import { Audit } from "../platform/audit.js"
import { CurrentCaller } from "../management/auth/caller.js"
import { BillingNotConfigured } from "./errors.js"
import { Billing, type ProviderEvent } from "./provider.js"
import * as repo from "./repo.js"
import type { BillingState } from "./schema.js"
import { withCallSpan } from "../platform/observability/span.js"

/** Decisions, "Billing grace period": 7 days from the first failed payment not yet made good. */
export const BILLING_GRACE_MS = 7 * 24 * 3600_000

/** Spec: the billing URLs are HTTPS. An absolute https URL without credentials, else 400 invalid_request. */
const requireHttps = (name: string, value: string) => {
  const url = URL.canParse(value) ? new URL(value) : undefined
  if (url?.protocol !== "https:" || url.username !== "" || url.password !== "" || url.hostname === "") {
    return Effect.fail(new InvalidRequest({ detail: `${name} must be an absolute https URL without credentials` }))
  }
  return Effect.void
}

/** Billing belongs to the Workspace: an Environment-pinned key cannot manage it (as Workspace changes). */
const workspaceCaller = Effect.gen(function* () {
  const caller = yield* CurrentCaller
  if (caller.environmentId !== null)
    return yield* new Forbidden({ detail: "An Environment-pinned API key cannot manage the Workspace's billing" })
  return caller
})

/** Spec order: scope, then body, then 501 when no provider is configured. */
const configuredBilling = Effect.gen(function* () {
  const billing = yield* Billing
  if (!billing.configured) return yield* new BillingNotConfigured()
  return billing
})

/**
 * The Workspace's Stripe customer: created on first use and kept (decisions, "One Stripe
 * customer per Workspace"). Its own transaction, committed before any session is opened: a
 * session that fails afterwards cannot roll the customer id back, so a retry, even after
 * Stripe's 24-hour idempotency window, reuses it. The billing row is locked meanwhile, so
 * concurrent first uses create one customer. Call it outside the request's transaction.
 */
const ensureCustomer = Effect.fnUntraced(function* (workspaceId: string) {
  const sql = yield* SqlClient.SqlClient
  const billing = yield* Billing
  return yield* sql.withTransaction(
    Effect.gen(function* () {
      const row = yield* repo.lockBilling(workspaceId, new Date(yield* Clock.currentTimeMillis))
      if (row === undefined) return yield* Effect.die(new Error(`the caller's Workspace ${workspaceId} does not exist`))
      if (row.stripe_customer_id !== null) return row.stripe_customer_id
      const customerId = yield* billing.createCustomer({ id: workspaceId, name: row.workspace_name })
      yield* repo.setCustomer(workspaceId, customerId, new Date(yield* Clock.currentTimeMillis))
      return customerId
    }),
  )
})

const auditBilling = Effect.fnUntraced(function* (
  workspaceId: string,
  action: string,
  details: Record<string, unknown>,
) {
  const caller = yield* CurrentCaller
  yield* (yield* Audit).append({
    workspaceId,
    actor: caller.actor,
    action,
    subjectType: "workspace",
    subjectId: workspaceId,
    details,
  })
})

type CheckoutBody = { readonly success_url: string; readonly cancel_url: string }
type PortalBody = { readonly return_url: string }

/**
 * First step of POST /billing/checkout-session, outside the request's transaction: the checks
 * in the spec's order (pinned key, HTTPS URLs, then 501 without a provider), then the
 * Workspace's customer, committed. Returns the customer id for openCheckoutSession.
 */
export const checkoutCustomer = Effect.fnUntraced(function* (body: CheckoutBody) {
  const caller = yield* workspaceCaller
  yield* requireHttps("success_url", body.success_url)
  yield* requireHttps("cancel_url", body.cancel_url)
  yield* configuredBilling
  return yield* ensureCustomer(caller.workspaceId)
}, withCallSpan("billing.checkoutCustomer"))

/**
 * Second step, in the request's (idempotent) transaction: the session for that customer,
 * recorded with the Workspace and customer (decisions, "Stripe webhook": only a completion of
 * a session we opened counts). The row commits exactly when the URL reaches the caller.
 */
export const openCheckoutSession = Effect.fnUntraced(function* (customerId: string, body: CheckoutBody) {
  const caller = yield* workspaceCaller
  const billing = yield* configuredBilling
  const session = yield* billing.createCheckoutSession({
    workspaceId: caller.workspaceId,
    customerId,
    successUrl: body.success_url,
    cancelUrl: body.cancel_url,
  })
  yield* repo
    .insertCheckoutSession({
      id: session.id,
      workspaceId: caller.workspaceId,
      customerId,
      now: new Date(yield* Clock.currentTimeMillis),
      expiresAt: session.expiresAt,
    })
    .pipe(Effect.orDie)
  yield* auditBilling(caller.workspaceId, "billing.checkout_session_created", {
    expires_at: session.expiresAt.toISOString(),
  })
  return { checkout_url: session.url, expires_at: session.expiresAt.toISOString() }
}, withCallSpan("billing.openCheckoutSession"))

/** First step of POST /billing/portal-session, as checkoutCustomer. */
export const portalCustomer = Effect.fnUntraced(function* (body: PortalBody) {
  const caller = yield* workspaceCaller
  yield* requireHttps("return_url", body.return_url)
  yield* configuredBilling
  return yield* ensureCustomer(caller.workspaceId)
}, withCallSpan("billing.portalCustomer"))

export const openPortalSession = Effect.fnUntraced(function* (customerId: string, body: PortalBody) {
  const caller = yield* workspaceCaller
  const billing = yield* configuredBilling
  const session = yield* billing.createPortalSession({ customerId, returnUrl: body.return_url })
  yield* auditBilling(caller.workspaceId, "billing.portal_session_created", {})
  return { portal_url: session.url }
}, withCallSpan("billing.openPortalSession"))

const idOf = (value: unknown): string | undefined =>
  typeof value === "string"
    ? value
    : typeof value === "object" && value !== null && typeof (value as { id?: unknown }).id === "string"
      ? (value as { id: string }).id
      : undefined

const PAST_DUE = new Set(["past_due", "unpaid"])

const recordOf = (value: unknown): Record<string, unknown> | undefined =>
  typeof value === "object" && value !== null ? (value as Record<string, unknown>) : undefined

/**
 * The Workspace ids an event's object names through what we put on our Stripe objects
 * (`metadata.workspace_id` of the customer, the checkout session and its subscription,
 * `client_reference_id` of a session, an invoice's subscription metadata under
 * `parent.subscription_details`, older API versions `subscription_details`). Used only to say
 * whom an ignored event was about (audit), never to choose where an event applies: a payer
 * chooses `client_reference_id` on a Payment Link or pricing table of the same Stripe account.
 */
const workspacesNamedBy = (o: Record<string, unknown>): Array<string> => {
  const candidates = [
    recordOf(o["metadata"])?.["workspace_id"],
    o["client_reference_id"],
    recordOf(recordOf(recordOf(o["parent"])?.["subscription_details"])?.["metadata"])?.["workspace_id"],
    recordOf(recordOf(o["subscription_details"])?.["metadata"])?.["workspace_id"],
  ]
  return [...new Set(candidates.filter((c): c is string => typeof c === "string" && c !== "" && c.length <= 255))]
}

/** An invoice's subscription: `parent.subscription_details.subscription` (API 2025-03-31 on), else the older top-level field. */
const invoiceSubscription = (o: Record<string, unknown>) =>
  idOf(recordOf(recordOf(o["parent"])?.["subscription_details"])?.["subscription"]) ?? idOf(o["subscription"])

type BillingRowLocked = NonNullable<Effect.Success<ReturnType<typeof repo.lockBillingByCustomer>>>

/** Why an event changed nothing (audited as `billing.stripe_event_ignored`). */
type IgnoredReason = "customer_not_recorded" | "checkout_session_not_ours" | "checkout_session_other_customer"

type EventTarget =
  | { readonly row: BillingRowLocked }
  | { readonly ignored: IgnoredReason; readonly about: ReadonlyArray<string> }

const applyTo = (row: BillingRowLocked): EventTarget => ({ row })
const ignore = (ignored: IgnoredReason, about: ReadonlyArray<string>): EventTarget => ({ ignored, about })

/**
 * The Workspace an event applies to, locked: the one whose recorded customer it names (we
 * record a customer before any session is opened for it, so every subscription of ours names a
 * recorded customer). A checkout completion must moreover be of a session we opened, for that
 * Workspace and that customer (sql/0178): Stripe signs every event of the account, including
 * completions of Payment Links and pricing tables, whose `client_reference_id` the payer
 * chooses. Nothing is ever adopted from what an event says (decisions, "Stripe webhook").
 */
const eventTarget = Effect.fnUntraced(function* (event: ProviderEvent) {
  const o = event.object
  const customerId = idOf(o["customer"])
  const row = customerId === undefined ? undefined : yield* repo.lockBillingByCustomer(customerId)
  const named = workspacesNamedBy(o)
  if (event.type === "checkout.session.completed") {
    const sessionId = idOf(o["id"])
    const opened = sessionId === undefined ? undefined : yield* repo.checkoutSessionOf(sessionId)
    const about = [...(row ? [row.workspace_id] : []), ...(opened ? [opened.workspace_id] : []), ...named]
    if (opened === undefined) return ignore("checkout_session_not_ours", about)
    if (row === undefined || row.workspace_id !== opened.workspace_id || opened.stripe_customer_id !== customerId) {
      return ignore("checkout_session_other_customer", about)
    }
    return applyTo(row)
  }
  return row === undefined ? ignore("customer_not_recorded", named) : applyTo(row)
})

/**
 * An event we ignore although it names one of our Workspaces: a warning, and an audit record
 * (result `failure`, actor `system`) in each Workspace it names, so an Owner sees an attempt to
 * attach a foreign customer or checkout to their billing. An event naming none of our
 * Workspaces (another product on the same Stripe account) is only acknowledged.
 */
const recordIgnored = Effect.fnUntraced(function* (
  event: ProviderEvent,
  reason: IgnoredReason,
  about: ReadonlyArray<string>,
) {
  const workspaces = yield* repo.existingWorkspaces([...new Set(about)])
  if (workspaces.length === 0) return
  const details = {
    stripe_event_id: event.id,
    stripe_event_type: event.type,
    reason,
    stripe_customer_id: idOf(event.object["customer"]) ?? null,
    ...(event.type === "checkout.session.completed" ? { checkout_session_id: idOf(event.object["id"]) ?? null } : {}),
  }
  yield* Effect.logWarning("billing: ignored a Stripe event naming one of our Workspaces", {
    ...details,
    workspace_ids: workspaces,
  })
  const audit = yield* Audit
  for (const workspaceId of workspaces) {
    yield* audit.append({
      workspaceId,
      actor: { type: "system" },
      action: "billing.stripe_event_ignored",
      result: "failure",
      subjectType: "workspace",
      subjectId: workspaceId,
      details,
    })
  }
})

/** The new subscription state an event implies, or undefined when it changes nothing. */
const nextState = (row: BillingRowLocked, event: ProviderEvent): repo.SubscriptionUpdate | undefined => {
  const eventAt = new Date(event.created * 1000)
  // Stripe does not promise order: an event older than the newest applied one changes nothing.
  const stale = row.last_event_at !== null && eventAt.getTime() < row.last_event_at.getTime()
  const o = event.object
  switch (event.type) {
    case "checkout.session.completed": {
      const subscriptionId = idOf(o["subscription"])
      if (o["mode"] !== "subscription" || subscriptionId === undefined) return undefined
      return {
        subscriptionId,
        subscriptionStatus:
          stale && row.subscription_status !== null ? row.subscription_status : (row.subscription_status ?? "active"),
        pastDueSince: row.past_due_since,
        eventAt,
      }
    }
    case "customer.subscription.created":
    case "customer.subscription.updated":
    case "customer.subscription.paused":
    case "customer.subscription.resumed":
    case "customer.subscription.deleted": {
      if (stale) return undefined
      const status =
        event.type === "customer.subscription.deleted"
          ? "canceled"
          : typeof o["status"] === "string"
            ? o["status"]
            : "active"
      return {
        subscriptionId: idOf(o["id"]) ?? row.subscription_id,
        subscriptionStatus: status,
        pastDueSince: PAST_DUE.has(status) ? (row.past_due_since ?? eventAt) : null,
        eventAt,
      }
    }
    case "invoice.payment_failed":
      if (stale) return undefined
      return {
        subscriptionId: invoiceSubscription(o) ?? row.subscription_id,
        subscriptionStatus: row.subscription_status === "canceled" ? "canceled" : "past_due",
        pastDueSince: row.past_due_since ?? eventAt,
        eventAt,
      }
    case "invoice.paid":
    case "invoice.payment_succeeded":
      if (stale || row.past_due_since === null) return undefined
      return { subscriptionId: row.subscription_id, subscriptionStatus: "active", pastDueSince: null, eventAt }
    default:
      return undefined
  }
}

/**
 * Stripe's webhook (decisions, "Billing"): verified with the `stripe` package's signature check
 * (400 on failure, nothing recorded), recorded once by event id (a redelivery changes nothing),
 * then applied to the Workspace of its recorded customer (a checkout completion: of a session
 * we opened for it) in the same transaction; anything else is acknowledged and ignored.
 */
export const receiveProviderEvent = Effect.fnUntraced(function* (rawBody: string, signature: string | undefined) {
  const sql = yield* SqlClient.SqlClient
  const billing = yield* Billing
  const nowMs = yield* Clock.currentTimeMillis
  const event = yield* billing.verifyWebhook(rawBody, signature, nowMs)
  return yield* sql.withTransaction(
    Effect.gen(function* () {
      const fresh = yield* repo.recordEvent({ id: event.id, type: event.type, now: new Date(nowMs) })
      const target = fresh ? yield* eventTarget(event) : undefined
      if (target !== undefined && "ignored" in target) yield* recordIgnored(event, target.ignored, target.about)
      const row = target !== undefined && "row" in target ? target.row : undefined
      if (row !== undefined) yield* repo.setEventWorkspace(event.id, row.workspace_id)
      const update = row === undefined ? undefined : nextState(row, event)
      if (update !== undefined) {
        yield* repo.updateSubscription(row!.workspace_id, update, new Date(nowMs))
        yield* (yield* Audit).append({
          workspaceId: row!.workspace_id,
          actor: { type: "system" },
          action: "billing.subscription_changed",
          subjectType: "workspace",
          subjectId: row!.workspace_id,
          details: {
            stripe_event_id: event.id,
            stripe_event_type: event.type,
            subscription_status: update.subscriptionStatus,
          },
        })
      }
      return { received: true as const, duplicate: !fresh, applied: update !== undefined }
    }),
  )
}, withCallSpan("billing.receiveProviderEvent"))

const STATUS: Readonly<Record<string, BillingState["status"]>> = {
  active: "active",
  trialing: "active",
  past_due: "past_due",
  unpaid: "past_due",
  incomplete: "incomplete",
  incomplete_expired: "incomplete",
  paused: "paused",
  canceled: "canceled",
}

/** The billing state shown by GET /usage/mau. */
export const billingState = Effect.fnUntraced(function* (workspaceId: string) {
  const billing = yield* Billing
  const none: BillingState = {
    status: "no_subscription",
    subscription_id: null,
    past_due_since: null,
    grace_period_ends_at: null,
    grace_period_ended: false,
  }
  if (!billing.configured) return { ...none, status: "not_configured" } satisfies BillingState
  const row = yield* repo.billingOf(workspaceId)
  if (!row || row.subscription_id === null || row.subscription_status === null) return none
  const nowMs = yield* Clock.currentTimeMillis
  const status =
    row.past_due_since !== null && row.subscription_status !== "canceled"
      ? "past_due"
      : (STATUS[row.subscription_status] ?? "incomplete")
  const graceEnds =
    status === "past_due" && row.past_due_since !== null ? row.past_due_since.getTime() + BILLING_GRACE_MS : undefined
  return {
    status,
    subscription_id: row.subscription_id,
    past_due_since: status === "past_due" ? (row.past_due_since?.toISOString() ?? null) : null,
    grace_period_ends_at: graceEnds === undefined ? null : new Date(graceEnds).toISOString(),
    grace_period_ended: graceEnds !== undefined && nowMs >= graceEnds,
  } satisfies BillingState
})
