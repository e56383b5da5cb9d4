import { Effect } from "effect"
import { json } from "../../http/route.js"
import { environmentForCaller } from "../auth/access.js"
import { CurrentCaller } from "../auth/caller.js"
import { requireWorkspaceMatch } from "../auth/service.js"
import { endpoint } from "../conventions/endpoint.js"
import { MauQuery, MauUsage } from "./schema.js"
import { mauReport } from "./service.js"

// Management API, "Other Management routes": GET /usage/mau.

export const usageRoutes = [
  endpoint(
    {
      method: "GET",
      path: "/v1/usage/mau",
      summary:
        "Monthly active users of the Workspace (or one Environment), the 30,000 MAU free tier, thresholds and grace period",
      tags: ["Usage"],
      scope: "usage:read",
      query: MauQuery,
      response: MauUsage,
    },
    ({ query }) =>
      Effect.gen(function* () {
        yield* requireWorkspaceMatch(query.workspace_id)
        const caller = yield* CurrentCaller
        // An Environment-pinned key reaches only its Environment: its report is narrowed to it.
        const environmentId = query.environment_id ?? caller.environmentId ?? undefined
        const env = environmentId === undefined ? undefined : yield* environmentForCaller(environmentId)
        return json(yield* mauReport(caller.workspaceId, env, query.billing_month))
      }),
  ),
]
