import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { route } from "../../http/route.js"

/**
 * The service's icon, bundled (no network): a 32x32 PNG in an ICO container (a keyhole on a
 * rounded square), drawn by a 20-line script and kept as bytes here so the build copies nothing.
 * Browsers ask every host for /favicon.ico; without it each page view logged a 404.
 */
const FAVICON = Buffer.from(
  "AAABAAEAICAAAAEAIACbAAAAFgAAAIlQTkcNChoKAAAADUlIRFIAAAAgAAAAIAgGAAAAc3p69AAAAGJJREFUeNpjYMABrL1u/KcmZiAGUNtSkhxDL8uxOoLelmM4YmQ7YKAshztiyDoAHdDNAYTA8HYAsWDUAcPXAaO5gJAj6FYSjjpg1AGjDhhwBwybduFos3zwdM0GRed0oLrnADLpteii3SO7AAAAAElFTkSuQmCC",
  "base64",
)

export const faviconRoutes = [
  route(
    "GET",
    "/favicon.ico",
    Effect.succeed(
      HttpServerResponse.uint8Array(FAVICON, {
        contentType: "image/x-icon",
        headers: { "cache-control": "public, max-age=86400", "x-content-type-options": "nosniff" },
      }),
    ),
  ),
]
