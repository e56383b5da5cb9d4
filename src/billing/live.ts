import { Effect, Layer } from "effect"
import { Config } from "../platform/config.js"
import { Billing, BillingNotConfiguredLive } from "./provider.js"
import { makeStripeBilling } from "./stripe.js"

/** Chooses the implementation from the configuration (STRIPE_SECRET_KEY, STRIPE_PRICE_ID, STRIPE_WEBHOOK_SECRET). */
export const BillingLive = Layer.effect(
  Billing,
  Effect.gen(function* () {
    const config = yield* Config
    return config.providers.stripe === undefined ? BillingNotConfiguredLive : makeStripeBilling(config.providers.stripe)
  }),
)
