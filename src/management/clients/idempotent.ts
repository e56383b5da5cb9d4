import type { Effect } from "effect"
import type { HttpServerResponse } from "effect/http"
import { withIdempotency } from "../http/idempotency.js"

/**
 * Idempotent Management write of the Clients, Connections and Domains routes: one SQL
 * transaction, Idempotency-Key replay keyed by the concrete path and query (so one key sent to
 * two resources with the same body is a conflict, never a replay of the other's answer).
 */
export const idempotentWrite = <E, R>(handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) => withIdempotency(handler)
