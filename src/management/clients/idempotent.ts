import { Effect } from "effect"
import { HttpServerRequest, type HttpServerResponse } from "effect/http"
import { withIdempotency } from "../http/idempotency.js"

/**
 * `withIdempotency` (one SQL transaction, Idempotency-Key replay) keyed by the concrete
 * request path: the spec compares "method, route, key and body", so one key sent to two
 * different resources with the same body is a conflict, never a replay of the other's answer.
 * Used by the Clients, Connections and Domains write routes.
 */
export const idempotentWrite = <E, R>(handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    return yield* withIdempotency(request.url.split("?")[0]!, handler)
  })
