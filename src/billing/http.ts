import { Effect, Schema } from "effect"
import { HttpServerRequest } from "effect/http"
import { bodyText, decodeJsonBody, json, route } from "../http/route.js"
import { requireWorkspaceMatch, withCaller } from "../management/auth/service.js"
import { withIdempotency } from "../management/http/idempotency.js"
import { CheckoutSession, CheckoutSessionBody, PortalSession, PortalSessionBody } from "./schema.js"
import * as service from "./service.js"

// Management API, "Other Management routes": the billing sessions, and Stripe's webhook.

const tags = ["Billing"]

const ProviderEventReceipt = Schema.Struct({ received: Schema.Literal(true), duplicate: Schema.Boolean, applied: Schema.Boolean })

export const billingRoutes = [
  // The customer is created and committed BEFORE the request's transaction opens (decisions,
  // "One Stripe customer per Workspace"); the session is the idempotent part.
  route("POST", "/v1/billing/checkout-session", withCaller("billing:write", Effect.gen(function* () {
    const body = yield* decodeJsonBody(CheckoutSessionBody)
    yield* requireWorkspaceMatch(body.workspace_id)
    const customerId = yield* service.checkoutCustomer(body)
    return yield* withIdempotency(Effect.map(service.openCheckoutSession(customerId, body), json))
  })), {
    summary: "Open a Stripe Checkout session (subscription to the metered MAU price) for the Workspace; 501 billing_not_configured without a payment provider",
    tags, scope: "billing:write", body: CheckoutSessionBody, response: CheckoutSession, idempotent: true,
  }),

  route("POST", "/v1/billing/portal-session", withCaller("billing:write", Effect.gen(function* () {
    const body = yield* decodeJsonBody(PortalSessionBody)
    yield* requireWorkspaceMatch(body.workspace_id)
    const customerId = yield* service.portalCustomer(body)
    return yield* withIdempotency(Effect.map(service.openPortalSession(customerId, body), json))
  })), {
    summary: "Open a Stripe Billing Portal session for the Workspace; 501 billing_not_configured without a payment provider",
    tags, scope: "billing:write", body: PortalSessionBody, response: PortalSession, idempotent: true,
  }),

  // Authenticated by Stripe's signature over the raw body (Stripe-Signature), not by a key.
  route("POST", "/v1/billing/stripe/webhook", Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const raw = yield* bodyText
    return json(yield* service.receiveProviderEvent(raw, request.headers["stripe-signature"]))
  }), {
    summary: "Stripe webhook (checkout.session.completed, customer.subscription.*, invoice.payment_failed, invoice.paid); verified by the Stripe-Signature header",
    tags, response: ProviderEventReceipt,
  }),
]
