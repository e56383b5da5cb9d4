import { Effect } from "effect"
import type { StripeConfig } from "../platform/config-providers.js"
import { BillingProviderFailed, BillingWebhookInvalid } from "./errors.js"
import type { Billing, ProviderEvent } from "./provider.js"
import { stripePost } from "./stripe-api.js"
import { stripeSignatureProblem } from "./stripe-signature.js"

/** Stripe's own tolerance for a webhook timestamp (seconds), as its SDK defaults to. */
const WEBHOOK_TOLERANCE_SECONDS = 300

const failed = (operation: string) => (cause: unknown) =>
  Effect.logError(`stripe ${operation} failed`, { cause: cause instanceof Error ? cause.message : String(cause) }).pipe(
    Effect.andThen(
      Effect.fail(new BillingProviderFailed({ detail: `The payment provider could not ${operation}; retry later` })),
    ),
  )

/**
 * The Stripe implementation of Billing, on Stripe's REST API (./stripe-api.ts). STRIPE_API_BASE
 * (refused in production) points it at another origin: the tests' local Stripe.
 */
export const makeStripeBilling = (config: StripeConfig): typeof Billing.Service => ({
  configured: true,
  // The idempotency key makes a retried creation (e.g. after our commit failed) return the same customer.
  createCustomer: (workspace) =>
    stripePost<{ readonly id: string }>(
      config,
      "customers",
      { name: workspace.name, metadata: { workspace_id: workspace.id } },
      `authservice-customer-${workspace.id}`,
    ).pipe(
      Effect.map((c) => c.id),
      Effect.catch(failed("create the customer")),
    ),
  // Subscription mode with the metered MAU price (a metered price takes no quantity).
  createCheckoutSession: (input) =>
    stripePost<{ readonly id: string; readonly url: string | null; readonly expires_at: number }>(
      config,
      "checkout/sessions",
      {
        mode: "subscription",
        customer: input.customerId,
        line_items: [{ price: config.priceId }],
        success_url: input.successUrl,
        cancel_url: input.cancelUrl,
        client_reference_id: input.workspaceId,
        metadata: { workspace_id: input.workspaceId },
        subscription_data: { metadata: { workspace_id: input.workspaceId } },
      },
    ).pipe(
      Effect.flatMap((s) =>
        s.url === null
          ? Effect.fail(new Error("checkout session without url"))
          : Effect.succeed({ id: s.id, url: s.url, expiresAt: new Date(s.expires_at * 1000) }),
      ),
      Effect.catch(failed("open a checkout session")),
    ),
  createPortalSession: (input) =>
    stripePost<{ readonly url: string }>(config, "billing_portal/sessions", {
      customer: input.customerId,
      return_url: input.returnUrl,
    }).pipe(
      Effect.map((s) => ({ url: s.url })),
      Effect.catch(failed("open a billing portal session")),
    ),
  verifyWebhook: (rawBody, signature, nowMs) =>
    Effect.try({
      try: () => {
        const problem = stripeSignatureProblem(
          rawBody,
          signature,
          config.webhookSecret,
          WEBHOOK_TOLERANCE_SECONDS,
          nowMs,
        )
        if (problem !== undefined) throw new Error(problem)
        const event = JSON.parse(rawBody) as {
          readonly id: string
          readonly type: string
          readonly created: number
          readonly data?: { readonly object?: Record<string, unknown> }
        }
        if (typeof event.data?.object !== "object" || event.data.object === null)
          throw new Error("Event without data.object")
        // The event's object (parsed JSON) copied into a plain record: the reconciler reads its fields by name.
        return {
          id: event.id,
          type: event.type,
          created: event.created,
          object: { ...event.data.object },
        } satisfies ProviderEvent
      },
      catch: (e) =>
        new BillingWebhookInvalid({ detail: e instanceof Error ? e.message.split("\n")[0]! : "invalid signature" }),
    }),
})
