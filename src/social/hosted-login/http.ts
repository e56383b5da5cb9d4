import { readFileSync } from "node:fs"
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { route } from "../../http/route.js"

/** Served on the Interaction Domain next to the Hosted Login page's own script (same origin, CSP `script-src 'self'`). */
export const SOCIAL_SCRIPT_PATH = "/login/assets/social.js"

const SOCIAL_JS = readFileSync(new URL("./social.js", import.meta.url), "utf8")

export const hostedLoginSocialRoutes = [
  route(
    "GET",
    SOCIAL_SCRIPT_PATH,
    Effect.succeed(
      HttpServerResponse.text(SOCIAL_JS, {
        contentType: "text/javascript; charset=utf-8",
        headers: { "cache-control": "no-cache", "x-content-type-options": "nosniff" },
      }),
    ),
  ),
]
