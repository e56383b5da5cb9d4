import { readFile } from "node:fs/promises"
import { extname } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { NotFound, ServiceUnavailable } from "../http/errors.js"
import { RouteMatch, route } from "../http/route.js"
import { CONSOLE_PATH } from "./urls.js"

/** `npm run build` (and the install step) writes the console here: web/console/dist beside src/ and dist/. */
const BUILD = fileURLToPath(new URL("../../web/console/dist/", import.meta.url))

/**
 * The console's CSP (docs/decisions/admin-console.md, "Serving"): only its own bundled files,
 * calls to its own origin (the Management API and the console backend), no inline script or
 * style, no framing. `img-src` allows the theme preview's data: logos.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join("; ")

const PAGE_HEADERS = {
  "content-security-policy": CONSOLE_CSP,
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
}

const TYPES: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".woff2": "font/woff2",
  ".json": "application/json",
}

const read = (path: string) => Effect.tryPromise({ try: () => readFile(path), catch: () => new NotFound({}) })

/** The single page: every console path that is not a file or a backend route answers it (client-side routing). */
const index = read(`${BUILD}index.html`).pipe(
  Effect.catchTag("NotFound", () =>
    Effect.fail(new ServiceUnavailable({ detail: "The console is not built: run npm run build" })),
  ),
  Effect.map((html) =>
    HttpServerResponse.uint8Array(html, {
      contentType: "text/html; charset=utf-8",
      headers: { ...PAGE_HEADERS, "cache-control": "no-store" },
    }),
  ),
)

/** Built files carry a content hash in their names, so they may be cached for good. */
const asset = Effect.gen(function* () {
  const { params } = yield* RouteMatch
  const name = params["*"] ?? ""
  if (!/^[A-Za-z0-9_.-]+$/.test(name) || name.startsWith(".")) return yield* new NotFound({})
  const body = yield* read(`${BUILD}assets/${name}`)
  return HttpServerResponse.uint8Array(body, {
    contentType: TYPES[extname(name)] ?? "application/octet-stream",
    headers: { "cache-control": "public, max-age=31536000, immutable", "x-content-type-options": "nosniff" },
  })
})

const toConsole = Effect.succeed(HttpServerResponse.empty({ status: 308, headers: { location: CONSOLE_PATH } }))

export const assetRoutes = [
  route("GET", "/console", toConsole),
  route("GET", CONSOLE_PATH, index),
  route("GET", `${CONSOLE_PATH}assets/*`, asset),
  // The SPA's own screens (deep links and reloads).
  route("GET", `${CONSOLE_PATH}w/*`, index),
]
