// Breaks platform-knows-no-feature (and climbs): the ground floor reads a feature.
import { subscriptions } from "../webhooks/subscriptions.js"

export const clock = subscriptions + 1
