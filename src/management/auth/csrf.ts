import { Effect } from "effect"
import type { HttpServerRequest } from "effect/http"
import { Forbidden } from "../../http/errors.js"
import type { AppConfig } from "../../platform/config.js"

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"])

const isJson = (contentType: string | undefined) => {
  const media = contentType?.split(";")[0]?.trim().toLowerCase()
  return media === "application/json" || (media !== undefined && /^application\/[a-z0-9.+-]+\+json$/.test(media))
}

const hasBody = (headers: HttpServerRequest.HttpServerRequest["headers"]) =>
  headers["transfer-encoding"] !== undefined ||
  (headers["content-length"] !== undefined && headers["content-length"] !== "0")

/**
 * CSRF defence for the `dashboard_session` cookie (docs/decisions/security-hardening.md). A browser attaches the cookie to
 * any request, even one a foreign page makes, so an unsafe method authenticated by the cookie
 * must come from a dashboard page: its `Origin` must be one of DASHBOARD_ORIGINS (browsers
 * send Origin on every non-GET request and pages cannot forge it; RFC 6454, Fetch), and a
 * body must be JSON (a cross-site form can only send form or text types without a CORS
 * preflight, which the Management host never grants). Bearer credentials are not sent
 * by browsers on their own and need neither check.
 */
export const checkCookieWrite = Effect.fnUntraced(function* (
  request: HttpServerRequest.HttpServerRequest,
  config: AppConfig,
) {
  if (SAFE_METHODS.has(request.method)) return
  const origin = request.headers["origin"]?.toLowerCase()
  if (origin === undefined || !config.dashboardOrigins.includes(origin)) {
    return yield* new Forbidden({
      detail:
        "A write authenticated by the dashboard_session cookie must come from a dashboard origin (Origin header, DASHBOARD_ORIGINS)",
    })
  }
  if (hasBody(request.headers) && !isJson(request.headers["content-type"])) {
    return yield* new Forbidden({
      detail: "A write authenticated by the dashboard_session cookie must send its body as application/json",
    })
  }
})
