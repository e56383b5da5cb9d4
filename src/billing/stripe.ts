import { Effect } from "effect"
import Stripe from "stripe"
import type { StripeConfig } from "../platform/config-providers.js"
import { BillingProviderFailed, BillingWebhookInvalid } from "./errors.js"
import type { Billing, ProviderEvent } from "./provider.js"

/** Stripe's own tolerance for a webhook timestamp (seconds), as its SDK defaults to. */
const WEBHOOK_TOLERANCE_SECONDS = 300

const failed = (operation: string) => (cause: unknown) =>
  Effect.logError(`stripe ${operation} failed`, { cause: cause instanceof Error ? cause.message : String(cause) }).pipe(
    Effect.andThen(Effect.fail(new BillingProviderFailed({ detail: `The payment provider could not ${operation}; retry later` }))))

/**
 * The Stripe implementation of Billing, on the official `stripe` package. STRIPE_API_BASE
 * (refused in production) points the package at another host through its documented
 * `host`/`port`/`protocol` options: the tests' local Stripe.
 */
export const makeStripeBilling = (config: StripeConfig): typeof Billing.Service => {
  const base = config.apiBase
  const stripe = new Stripe(config.secretKey, {
    maxNetworkRetries: 1, timeout: 10_000, telemetry: false,
    ...(base === undefined ? {} : {
      host: base.hostname, protocol: base.protocol === "http:" ? "http" as const : "https" as const,
      port: base.port === "" ? (base.protocol === "http:" ? 80 : 443) : Number(base.port),
    }),
  })
  return {
    configured: true,
    // The idempotency key makes a retried creation (e.g. after our commit failed) return the same customer.
    createCustomer: (workspace) => Effect.tryPromise({
      try: () => stripe.customers.create(
        { name: workspace.name, metadata: { workspace_id: workspace.id } },
        { idempotencyKey: `authservice-customer-${workspace.id}` }),
      catch: (e) => e,
    }).pipe(Effect.map((c) => c.id), Effect.catch(failed("create the customer"))),
    // Subscription mode with the metered MAU price (a metered price takes no quantity).
    createCheckoutSession: (input) => Effect.tryPromise({
      try: () => stripe.checkout.sessions.create({
        mode: "subscription", customer: input.customerId, line_items: [{ price: config.priceId }],
        success_url: input.successUrl, cancel_url: input.cancelUrl, client_reference_id: input.workspaceId,
        metadata: { workspace_id: input.workspaceId }, subscription_data: { metadata: { workspace_id: input.workspaceId } },
      }),
      catch: (e) => e,
    }).pipe(
      Effect.flatMap((s) => s.url === null
        ? Effect.fail(new Error("checkout session without url"))
        : Effect.succeed({ id: s.id, url: s.url, expiresAt: new Date(s.expires_at * 1000) })),
      Effect.catch(failed("open a checkout session"))),
    createPortalSession: (input) => Effect.tryPromise({
      try: () => stripe.billingPortal.sessions.create({ customer: input.customerId, return_url: input.returnUrl }),
      catch: (e) => e,
    }).pipe(Effect.map((s) => ({ url: s.url })), Effect.catch(failed("open a billing portal session"))),
    verifyWebhook: (rawBody, signature, nowMs) => Effect.try({
      try: () => {
        if (signature === undefined) throw new Error("Stripe-Signature header missing")
        const event = stripe.webhooks.constructEvent(rawBody, signature, config.webhookSecret, WEBHOOK_TOLERANCE_SECONDS, undefined, nowMs)
        return { id: event.id, type: event.type, created: event.created, object: event.data.object as unknown as Record<string, unknown> } satisfies ProviderEvent
      },
      catch: (e) => new BillingWebhookInvalid({ detail: e instanceof Error ? e.message.split("\n")[0]! : "invalid signature" }),
    }),
  }
}
