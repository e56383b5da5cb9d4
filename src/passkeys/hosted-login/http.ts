import { readFileSync } from "node:fs"
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { route } from "../../http/route.js"

/** Served on the Interaction Domain next to the Hosted Login page's own script (same origin, CSP `script-src 'self'`). */
export const PASSKEY_SCRIPT_PATH = "/login/assets/passkey.js"

const PASSKEY_JS = readFileSync(new URL("./passkey.js", import.meta.url), "utf8")

export const hostedLoginPasskeyRoutes = [
  route(
    "GET",
    PASSKEY_SCRIPT_PATH,
    Effect.succeed(
      HttpServerResponse.text(PASSKEY_JS, {
        contentType: "text/javascript; charset=utf-8",
        headers: { "cache-control": "no-cache", "x-content-type-options": "nosniff" },
      }),
    ),
  ),
]
