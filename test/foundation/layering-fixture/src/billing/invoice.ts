// Breaks no-upward-import: billing and webhooks share a floor and must not import each other.
import { subscriptions } from "../webhooks/subscriptions.js"

export const invoice = subscriptions
