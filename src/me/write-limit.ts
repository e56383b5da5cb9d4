import { Effect } from "effect"
import type { Route } from "../http/route.js"
import { limitWrite } from "../rate-limit/write-limits.js"
import { unavailableOnSqlError } from "./unavailable.js"

/**
 * Every /me write (each route but the GETs: PATCH and DELETE /me, email change, identity
 * link and unlink, passkey options and verify, session deletes) is counted per client address
 * first, before the access token is even verified (docs/decisions/rate-limits-and-caches.md, "Write limits: every
 * cheap-to-send write is counted per address"); a refused write changes nothing. A database
 * failure counting it is the /me 503 `user_unavailable`, like every other /me read or write.
 */
export const withMeWriteLimit = (routes: ReadonlyArray<Route>): Array<Route> =>
  routes.map((r) =>
    r.method === "GET"
      ? r
      : { ...r, handler: Effect.andThen(unavailableOnSqlError(limitWrite("meWrites")), r.handler) },
  )
