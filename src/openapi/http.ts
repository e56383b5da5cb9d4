import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { route } from "../http/route.js"
import { Config } from "../platform/config.js"
import { openApiDocument } from "./document.js"
import { referenceRoutes } from "./reference.js"

/** GET /v1/openapi.json on the Management host (built once, on first request) and its rendering at /v1/reference. */
export const openApiRoutes = (surfaces: () => Parameters<typeof openApiDocument>[0]) => {
  let body: string | undefined
  return [
    route(
      "GET",
      "/v1/openapi.json",
      Effect.gen(function* () {
        yield* Config
        body ??= JSON.stringify(openApiDocument(surfaces()))
        return HttpServerResponse.text(body, {
          contentType: "application/json",
          headers: { "cache-control": "public, max-age=300" },
        })
      }),
    ),
    ...referenceRoutes,
  ]
}
