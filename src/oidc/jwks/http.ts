import { Effect } from "effect"
import { CurrentEnvironment } from "../../tenancy/current-environment.js"
import { route } from "../../http/route.js"
import { answerStatic } from "../../http/static-answers.js"
import { Keys } from "../../platform/keys/service.js"

/**
 * The headers of the JWKS answer, on both paths (src/http/static-answers.ts). The any-origin
 * header is the one src/http/cors/any-origin.ts adds on the Effect path, written here too so
 * the listener's answer from memory carries it.
 */
const HEADERS = {
  "content-type": "application/json",
  "cache-control": "public, max-age=60",
  "access-control-allow-origin": "*",
}

export const jwksRoutes = [
  route(
    "GET",
    "/oauth2/jwks",
    Effect.gen(function* () {
      const env = yield* CurrentEnvironment
      const keys = yield* Keys
      return yield* answerStatic("/oauth2/jwks", yield* keys.jwks(env.record.id), HEADERS)
    }),
  ),
]
