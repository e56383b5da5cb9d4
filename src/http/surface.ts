import { Effect } from "effect"
import { FindMyWay, type HttpServerResponse } from "effect/http"
import { MethodNotAllowed, NotFound } from "./errors.js"
import type { Refusal } from "./problems.js"
import { type Route, RouteMatch, routeTemplate } from "./route.js"

/** Filled in by `handle` with the template of the route that matched, `{param}` style (for logs, metrics, spans). */
export interface MatchedRoute {
  route: string | undefined
}

export interface Surface {
  /** Runs the route matching method + path, or fails with 404 / 405 (with the allowed methods). */
  readonly handle: (
    method: string,
    path: string,
    matched?: MatchedRoute,
    // biome-ignore lint/suspicious/noExplicitAny: the surface serves routes that need different services; the app layer provides them all
  ) => Effect.Effect<HttpServerResponse.HttpServerResponse, Refusal, any>
  readonly routes: ReadonlyArray<Route>
}

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const

/** Compiles a list of routes into one matcher (find-my-way); `/v1` prefixes etc. are part of each path. */
export const makeSurface = (routes: ReadonlyArray<Route>): Surface => {
  const router = FindMyWay.make<Route>({ ignoreTrailingSlash: false, caseSensitive: true })
  for (const r of routes) router.on(r.method, r.path, r)
  const templates = new Map(routes.map((r) => [r.path, routeTemplate(r.path)]))
  return {
    routes,
    handle: (method, url, matched) => {
      const found = router.find(method === "HEAD" ? "GET" : method, url)
      if (found) {
        if (matched) matched.route = templates.get(found.handler.path)
        return Effect.provideService(found.handler.handler, RouteMatch, {
          params: found.params,
          query: found.searchParams,
        })
      }
      const allow = METHODS.filter((m) => router.find(m, url) !== undefined)
      return allow.length > 0 ? Effect.fail(new MethodNotAllowed({ allow })) : Effect.fail(new NotFound({}))
    },
  }
}
