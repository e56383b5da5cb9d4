import type { Effect } from "effect"
import type { HttpServerResponse } from "effect/http"
import { withIdempotency } from "../http/idempotency.js"

/** Idempotent Management write (the shared helper keys on the concrete path and query). */
export const idempotentWrite = <E, R>(handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) => withIdempotency(handler)
