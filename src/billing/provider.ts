import { Context, Effect } from "effect"
import { BillingNotConfigured, type BillingProviderFailed, type BillingWebhookInvalid } from "./errors.js"

/** A provider webhook event, reduced to what billing state needs. */
export interface ProviderEvent {
  readonly id: string
  readonly type: string
  /** Unix seconds (the provider's clock). */
  readonly created: number
  readonly object: Record<string, unknown>
}

/**
 * The payment provider (spec: billing sessions). Stripe when STRIPE_* is configured,
 * otherwise "not configured": every operation fails with BillingNotConfigured (501).
 */
export class Billing extends Context.Service<
  Billing,
  {
    readonly configured: boolean
    readonly createCustomer: (workspace: {
      readonly id: string
      readonly name: string
    }) => Effect.Effect<string, BillingNotConfigured | BillingProviderFailed>
    readonly createCheckoutSession: (input: {
      readonly workspaceId: string
      readonly customerId: string
      readonly successUrl: string
      readonly cancelUrl: string
    }) => Effect.Effect<
      { readonly id: string; readonly url: string; readonly expiresAt: Date },
      BillingNotConfigured | BillingProviderFailed
    >
    readonly createPortalSession: (input: {
      readonly customerId: string
      readonly returnUrl: string
    }) => Effect.Effect<{ readonly url: string }, BillingNotConfigured | BillingProviderFailed>
    /** Verifies a webhook's signature against the raw body (timestamps judged by `nowMs`). */
    readonly verifyWebhook: (
      rawBody: string,
      signature: string | undefined,
      nowMs: number,
    ) => Effect.Effect<ProviderEvent, BillingNotConfigured | BillingWebhookInvalid>
  }
>()("billing/Billing") {}

const notConfigured = Effect.fail(new BillingNotConfigured())

export const BillingNotConfiguredLive = Billing.of({
  configured: false,
  createCustomer: () => notConfigured,
  createCheckoutSession: () => notConfigured,
  createPortalSession: () => notConfigured,
  verifyWebhook: () => notConfigured,
})
