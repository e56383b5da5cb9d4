import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { json } from "../../http/route.js"
import { Config } from "../../platform/config.js"
import { environmentForCaller } from "../auth/access.js"
import { endpoint } from "../conventions/endpoint.js"
import { Impersonation, StartBody, StartQuery, Stopped } from "./schema.js"
import { impersonationCookieName, startImpersonation, stopImpersonation } from "./service.js"

// Management API, "Other Management routes": impersonation. No Idempotency-Key on these
// routes (spec common rule 2): a sent key is ignored; each start is a new impersonation.

const tags = ["Impersonation"]

const cookieOptions = (scheme: "http" | "https") =>
  ({ httpOnly: true, sameSite: "strict", secure: scheme === "https", path: "/" }) as const

export const impersonationRoutes = [
  endpoint(
    {
      method: "POST",
      path: "/v1/impersonation",
      summary:
        "Start impersonating a user (Owner/Admin Dashboard session only; Environment setting impersonation_enabled): sets the impersonation cookie, returns a short-lived access token with an act claim",
      tags,
      scope: "impersonation:create",
      caller: { dashboardOnly: true },
      query: StartQuery,
      body: StartBody,
      response: Impersonation,
      status: 201,
    },
    ({ query, body }) =>
      Effect.gen(function* () {
        const env = yield* environmentForCaller(query.environment_id)
        const started = yield* startImpersonation(env, body)
        const config = yield* Config
        const response = json(started.body, 201, { "cache-control": "no-store" })
        return HttpServerResponse.setCookieUnsafe(
          response,
          impersonationCookieName(config.publicScheme),
          started.cookieSecret,
          {
            ...cookieOptions(config.publicScheme),
            maxAge: `${started.cookieMaxAgeSeconds} seconds`,
          },
        )
      }),
  ),

  endpoint(
    {
      method: "POST",
      path: "/v1/impersonation/stop",
      summary: "Stop the active impersonation and clear its cookie (any authenticated caller)",
      tags,
      caller: { noWorkspace: true },
      response: Stopped,
    },
    () =>
      Effect.gen(function* () {
        const stopped = yield* stopImpersonation
        const config = yield* Config
        return HttpServerResponse.setCookieUnsafe(
          json(stopped, 200, { "cache-control": "no-store" }),
          impersonationCookieName(config.publicScheme),
          "",
          {
            ...cookieOptions(config.publicScheme),
            maxAge: "0 seconds",
          },
        )
      }),
  ),
]
