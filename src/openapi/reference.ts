import { existsSync } from "node:fs"
import { readFile } from "node:fs/promises"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { NotFound, ServiceUnavailable } from "../http/errors.js"
import { RouteMatch, route } from "../http/route.js"

// GET /v1/reference on the Management host: the OpenAPI document rendered by Swagger UI
// (swagger-ui-dist, Apache-2.0), no CDN. From source (development) its two files are read from
// node_modules; `npm run build` copies them into the build (scripts/copy-assets.mjs), so a
// production install does not carry the package's 12 MB. docs/decisions/management-api.md,
// "API reference".

export const REFERENCE_PATH = "/v1/reference"

/** The build's copy beside this module, else swagger-ui-dist's folder wherever npm put it (its package.json is exported). */
const BUILT = fileURLToPath(new URL("./swagger-ui", import.meta.url))
const DIST = existsSync(BUILT) ? BUILT : dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"))

/**
 * Only what the page loads: Swagger UI's bundle and its CSS. The rest of swagger-ui-dist
 * (source maps, its own index.html and initializer that point at the Petstore) is not served.
 */
const FILES: Readonly<Record<string, string>> = {
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "swagger-ui.css": "text/css; charset=utf-8",
}

/**
 * Our start script, a file of its own (no inline script): the document of this host, read-only
 * (`supportedSubmitMethods: []`: "Try it out" would send requests to the issuer host too, which
 * this page's CSP does not reach; curl and the console are the tools for calls), and no
 * `validatorUrl` (the default sends the document to validator.swagger.io).
 */
const START = `"use strict";
window.addEventListener("DOMContentLoaded", function () {
  window.ui = SwaggerUIBundle({
    url: "/v1/openapi.json",
    dom_id: "#reference",
    deepLinking: true,
    validatorUrl: null,
    supportedSubmitMethods: [],
    defaultModelsExpandDepth: 0,
  });
});
`

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>authservice API reference</title>
<link rel="stylesheet" href="${REFERENCE_PATH}/swagger-ui.css">
<script src="${REFERENCE_PATH}/swagger-ui-bundle.js" defer></script>
<script src="${REFERENCE_PATH}/start.js" defer></script>
</head>
<body>
<main id="reference"><noscript>The reference needs JavaScript; the document itself is at <a href="/v1/openapi.json">/v1/openapi.json</a>.</noscript></main>
</body>
</html>
`

/**
 * Swagger UI runs without 'unsafe-eval' and without inline script; it sets styles through the
 * DOM (allowed) and draws its icons as data: SVG images. `connect-src 'self'` lets it fetch
 * /v1/openapi.json and nothing else.
 */
export const REFERENCE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "form-action 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
].join("; ")

const SECURITY_HEADERS = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
}

const page = Effect.succeed(
  HttpServerResponse.text(PAGE, {
    contentType: "text/html; charset=utf-8",
    headers: {
      ...SECURITY_HEADERS,
      "content-security-policy": REFERENCE_CSP,
      "x-frame-options": "DENY",
      "cache-control": "public, max-age=300",
    },
  }),
)

const start = Effect.succeed(
  HttpServerResponse.text(START, {
    contentType: "text/javascript; charset=utf-8",
    headers: { ...SECURITY_HEADERS, "cache-control": "public, max-age=300" },
  }),
)

/** Swagger UI's files, cached for a day (the name carries no version; an upgrade shows within a day). */
const file = Effect.gen(function* () {
  const { params } = yield* RouteMatch
  const name = params["file"] ?? ""
  const type = Object.hasOwn(FILES, name) ? FILES[name] : undefined
  if (type === undefined) return yield* new NotFound({})
  const body = yield* Effect.tryPromise({
    try: () => readFile(join(DIST, name)),
    catch: () => new ServiceUnavailable({ detail: "swagger-ui-dist is not installed: run npm install" }),
  })
  return HttpServerResponse.uint8Array(body, {
    contentType: type,
    headers: { ...SECURITY_HEADERS, "cache-control": "public, max-age=86400" },
  })
})

export const referenceRoutes = [
  route("GET", REFERENCE_PATH, page),
  route("GET", `${REFERENCE_PATH}/start.js`, start),
  route("GET", `${REFERENCE_PATH}/:file`, file),
]
