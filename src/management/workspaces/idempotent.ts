import { Effect } from "effect"
import { HttpServerRequest, type HttpServerResponse } from "effect/http"
import { withIdempotency } from "../http/idempotency.js"

/**
 * `withIdempotency` keyed by the concrete request path, not the route pattern: the spec
 * compares "method, route, key and body", and the same key sent to revoke key A and then
 * key B (same empty body) must be a conflict, never a replay of A's answer for B.
 */
export const idempotentWrite = <E, R>(handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    return yield* withIdempotency(request.url.split("?")[0]!, handler)
  })
