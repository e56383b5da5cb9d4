import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { CurrentEnvironment } from "../../http/current-environment.js"
import { route } from "../../http/route.js"
import { Keys } from "../../platform/keys/service.js"

export const jwksRoutes = [
  route("GET", "/oauth2/jwks", Effect.gen(function* () {
    const env = yield* CurrentEnvironment
    const keys = yield* Keys
    const body = yield* keys.jwks(env.record.id)
    return HttpServerResponse.text(body, {
      contentType: "application/json",
      headers: { "cache-control": "public, max-age=60" },
    })
  })),
]
