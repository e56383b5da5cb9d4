import { randomBytes } from "node:crypto"
import { fileURLToPath } from "node:url"
import { afterAll, beforeAll, describe, it } from "vitest"
import { walkRecipe } from "./recipe-walk.js"
import { type Harness, missingDebianPackages, startHarness, suiteNeeding } from "./support.js"

// The Python recipe of docs/oidc-libraries.md: Flask with Authlib (Debian's python3-authlib),
// the app file run unmodified under Debian's /usr/bin/python3 against the real server. A real
// Chromium signs in on Hosted Login; the app validates the ID token (ES256, JWKS), calls
// UserInfo, refreshes, and logs out at the issuer.

const PACKAGES = ["python3-authlib", "python3-flask", "python3-requests"]
const missing = missingDebianPackages(PACKAGES)
const APP = fileURLToPath(new URL("./apps/authlib_flask.py", import.meta.url))

describe.skipIf(missing.length > 0)(suiteNeeding("Authlib (Flask)", missing), () => {
  let h: Harness
  const stops: Array<() => Promise<void>> = []
  beforeAll(async () => {
    h = await startHarness()
  }, 60_000)
  afterAll(async () => {
    for (const stop of stops) await stop()
    await h?.close()
  })

  it.each(["client_secret_basic", "client_secret_post"] as const)(
    "signs in with %s: ID token, UserInfo, refresh, logout at the issuer",
    (method) =>
      walkRecipe(
        h,
        {
          command: "/usr/bin/python3",
          args: [APP],
          env: {
            SESSION_SECRET: randomBytes(32).toString("hex"),
            AUTHLIB_INSECURE_TRANSPORT: "1", // only for the local http issuer
          },
        },
        method,
        `authlib-${method}`,
        stops,
      ),
  )
})
