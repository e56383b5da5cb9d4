import { Effect, Schema } from "effect"
import { HttpServerRequest } from "effect/http"
import { bodyText, json } from "../http/route.js"
import { requireWorkspaceMatch } from "../management/auth/service.js"
import { endpoint } from "../management/conventions/endpoint.js"
import { CheckoutSession, CheckoutSessionBody, PortalSession, PortalSessionBody } from "./schema.js"
import * as service from "./service.js"

// Management API, "Other Management routes": the billing sessions, and Stripe's webhook.

const tags = ["Billing"]

const ProviderEventReceipt = Schema.Struct({
  received: Schema.Literal(true),
  duplicate: Schema.Boolean,
  applied: Schema.Boolean,
})

export const billingRoutes = [
  // The customer is created and committed BEFORE the request's transaction opens (decisions,
  // "One Stripe customer per Workspace"); the session is the idempotent part.
  endpoint(
    {
      method: "POST",
      path: "/v1/billing/checkout-session",
      summary:
        "Open a Stripe Checkout session (subscription to the metered MAU price) for the Workspace; 501 billing_not_configured without a payment provider",
      tags,
      scope: "billing:write",
      body: CheckoutSessionBody,
      response: CheckoutSession,
      idempotent: "handler-part",
    },
    ({ body, idempotently }) =>
      Effect.gen(function* () {
        yield* requireWorkspaceMatch(body.workspace_id)
        const customerId = yield* service.checkoutCustomer(body)
        return yield* idempotently(Effect.map(service.openCheckoutSession(customerId, body), json))
      }),
  ),

  endpoint(
    {
      method: "POST",
      path: "/v1/billing/portal-session",
      summary:
        "Open a Stripe Billing Portal session for the Workspace; 501 billing_not_configured without a payment provider",
      tags,
      scope: "billing:write",
      body: PortalSessionBody,
      response: PortalSession,
      idempotent: "handler-part",
    },
    ({ body, idempotently }) =>
      Effect.gen(function* () {
        yield* requireWorkspaceMatch(body.workspace_id)
        const customerId = yield* service.portalCustomer(body)
        return yield* idempotently(Effect.map(service.openPortalSession(customerId, body), json))
      }),
  ),

  // Authenticated by Stripe's signature over the raw body (Stripe-Signature), not by a key.
  endpoint(
    {
      method: "POST",
      path: "/v1/billing/stripe/webhook",
      summary:
        "Stripe webhook (checkout.session.completed, customer.subscription.*, invoice.payment_failed, invoice.paid); verified by the Stripe-Signature header",
      tags,
      admit: Effect.void,
      response: ProviderEventReceipt,
    },
    () =>
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const raw = yield* bodyText
        return json(yield* service.receiveProviderEvent(raw, request.headers["stripe-signature"]))
      }),
  ),
]
